package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
)

// Config is one configuration file: the servers it names and what was
// accepted without being used.
//
// The file format is the one agent tools already write, and each tool's
// documented file loads unchanged:
//
//   - a top-level "mcpServers" object keyed by server name: Claude Code's
//     .mcp.json, Claude Desktop's claude_desktop_config.json, Cursor's
//     .cursor/mcp.json, Gemini CLI's .gemini/settings.json, Windsurf's
//     mcp_config.json, Cline's cline_mcp_settings.json, Roo Code's
//     .roo/mcp.json;
//   - VS Code's .vscode/mcp.json: "servers", and "inputs" (Inputs);
//   - Zed's settings.json: "context_servers";
//   - Codex's config.toml (a file named *.toml): [mcp_servers.NAME]
//     tables in Codex's field names;
//   - Continue's YAML (a file named *.yaml or *.yml): an "mcpServers" list
//     of named blocks.
//
// JSON files may hold comments and trailing commas, as VS Code's JSONC
// allows. The file's name tells whose it is, or else its content does;
// the few semantics that differ between the tools follow (a number
// "timeout" is seconds in Cline's and Roo Code's files, milliseconds
// elsewhere; Gemini CLI's $VAR is ${VAR}; see Server). Fields other
// tools define and mcpvisor does not use are ignored with a warning each.
type Config struct {
	// Path is the file the configuration was read from: Load's path,
	// Parse's Options.Path, "" for Merge's result.
	Path string
	// Servers holds every configured server, disabled ones included, in the
	// order the file lists them.
	Servers []Server
	// Inputs are the values the file's servers ask a person for when they
	// start (VS Code's "inputs"), referenced as ${input:ID}.
	Inputs []Input
	// Warnings lists what was ignored or could not be checked, one line
	// each, e.g. `server "x": unknown field "foo" ignored`.
	Warnings []string
}

// Load reads and parses the configuration file at path; its name
// tells the format (see Config). Variables are looked up in the process
// environment (see Parse). A file that cannot be read gives a
// one-line error wrapping the *fs.PathError, e.g.
// "config: open mcp.json: no such file or directory". A file that names
// no servers at all (none of "mcpServers", "servers", "context_servers",
// Codex's [mcp_servers]) is an error, as it is most likely the wrong file;
// one whose member is there but empty is not.
//
// Load never returns a nil *Config: when it fails, the Config holds
// Path and the warnings found before the errors (unknown fields, say), and
// no servers, so that a caller can print the warnings with the error.
func Load(path string) (*Config, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > MaxFileSize {
		// Refused before it is read.
		return &Config{Path: path}, &Error{msg: fmt.Sprintf("%s: the file is %d bytes, more than a configuration file may be (%d)", path, fi.Size(), MaxFileSize)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return &Config{Path: path}, fmt.Errorf("config: %w", err)
	}
	return Parse(data, Options{Path: path})
}

// LoadAll loads every file of paths, in order, and merges them as
// Merge does. The errors of every file are returned at once,
// joined; the Config then holds every file's warnings and no servers.
func LoadAll(paths ...string) (*Config, error) {
	cfgs := make([]*Config, 0, len(paths))
	var errs []error
	for _, p := range paths {
		cfg, err := Load(p)
		if err != nil {
			errs = append(errs, err)
		}
		cfgs = append(cfgs, cfg)
	}
	merged := Merge(cfgs...)
	if len(errs) > 0 {
		merged.Servers, merged.Inputs = nil, nil
		return merged, errors.Join(errs...)
	}
	return merged, nil
}

// Merge merges configurations loaded from several files into one,
// in order: a server a later file names again replaces the earlier entry,
// in the earlier one's place, and each such collision is a warning naming
// both files. Inputs merge the same way by id (a collision is a warning
// when the two differ). Each file's own warnings are kept, prefixed with
// its Path when there are several files. nil configurations are skipped.
// The result shares the entries of cfgs and its Path is "".
func Merge(cfgs ...*Config) *Config {
	var live []*Config
	for _, c := range cfgs {
		if c != nil {
			live = append(live, c)
		}
	}
	out := &Config{}
	label := func(c *Config) string {
		if c.Path == "" {
			return "a configuration given without a file"
		}
		return c.Path
	}
	for _, c := range live {
		for _, w := range c.Warnings {
			if len(live) > 1 && c.Path != "" {
				w = c.Path + ": " + w
			}
			out.Warnings = append(out.Warnings, w)
		}
	}
	serverFrom := map[string]*Config{}
	inputFrom := map[string]*Config{}
	for _, c := range live {
		for _, sc := range c.Servers {
			prev, dup := serverFrom[sc.Name]
			serverFrom[sc.Name] = c
			if !dup {
				out.Servers = append(out.Servers, sc)
				continue
			}
			i := slices.IndexFunc(out.Servers, func(s Server) bool { return s.Name == sc.Name })
			out.Servers[i] = sc
			out.Warnings = append(out.Warnings, fmt.Sprintf("server %q: defined in %s and again in %s; the entry in %s is used",
				sc.Name, label(prev), label(c), label(c)))
		}
		for _, in := range c.Inputs {
			prev, dup := inputFrom[in.ID]
			inputFrom[in.ID] = c
			if !dup {
				out.Inputs = append(out.Inputs, in)
				continue
			}
			i := slices.IndexFunc(out.Inputs, func(x Input) bool { return x.ID == in.ID })
			if !reflect.DeepEqual(out.Inputs[i], in) {
				out.Warnings = append(out.Warnings, fmt.Sprintf("input %q: defined in %s and again, differently, in %s; the one in %s is used",
					in.ID, label(prev), label(c), label(c)))
			}
			out.Inputs[i] = in
		}
	}
	return out
}

// Parse parses a configuration file's contents and validates every
// entry, disabled ones included. It returns all problems at once, joined
// with errors.Join, each wrapping ErrInvalid and naming the server and field.
// opts.Path tells the format as Load's path does; without it the contents
// are JSON, whose they are (VS Code's "servers", Zed's "context_servers",
// Gemini CLI's settings) is told from them, and ${workspaceFolder} is the
// working directory.
//
// ${VAR} and ${VAR:-default} references are checked against opts.Lookup
// (the process environment by default): a variable that is unset and has
// no default is a warning, not an error, so that one server's missing
// variable does not stop the others; the host expands the references
// again when it starts the server, so the environment at that time is what
// counts, and lists a server it cannot expand as failed, with the error
// naming the server, the field and the variable. A malformed reference is
// an error. ${input:ID} is not checked against the environment (the host asks
// for it when the server starts), but must name one of the file's inputs.
//
// Like Load, Parse never returns a nil *Config.
func Parse(data []byte, opts Options) (*Config, error) {
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	f, err := parseFile(opts.Path, data, opts)
	cfg := &Config{Path: opts.Path, Warnings: f.Warnings}
	if err != nil {
		return cfg, err
	}
	cfg.Servers, cfg.Inputs = f.Servers, f.Inputs
	return cfg, nil
}
