package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/config"
)

// connect writes mcpvisor into an agent tool's own file, so that the tool
// reaches every server of the project through mcpvisor: by default as
// `mcpvisor stdio` with the project's config and data directory (which
// joins a running sidecar, or runs the servers itself), with --http as the
// running sidecar's /mcp and its token.

const connectDetail = "CLIENT is one of claude-code, claude-desktop, vscode, cursor, codex, gemini. The entry, named\n" +
	"mcpvisor, runs this binary as 'mcpvisor stdio --config FILE --data DIR' with absolute paths: it joins\n" +
	"the sidecar running on DIR, or runs the servers itself. --http writes the running sidecar's /mcp URL\n" +
	"and its gateway token instead. The file is the client's own:\n" +
	"  claude-code     ~/.claude.json, this project's entry (Claude Code's local scope); the servers of the\n" +
	"                  project's .mcp.json are listed in its disabledMcpjsonServers there, so that Claude Code\n" +
	"                  does not run them a second time beside mcpvisor\n" +
	"  claude-desktop  claude_desktop_config.json in Claude's settings directory\n" +
	"  vscode          .vscode/mcp.json, or VS Code's user mcp.json when mcpvisor reads the project's\n" +
	"  cursor          .cursor/mcp.json, or ~/.cursor/mcp.json when mcpvisor reads the project's\n" +
	"  codex           ~/.codex/config.toml\n" +
	"  gemini          .gemini/settings.json, or ~/.gemini/settings.json when mcpvisor reads the project's\n" +
	"mcpvisor is never written into a file it reads itself, and an entry that runs mcpvisor stdio is\n" +
	"skipped when a config file is read (a warning says so). --print prints the entry and the file\n" +
	"instead of writing; --remove takes the entry out again.\n\n" +
	"Exit status: 0 written (or printed, or removed); 1 the file could not be written; 2 a usage error."

// connectEntryName is the name of the entry connect writes.
const connectEntryName = "mcpvisor"

// clientTarget is where connect writes for one client.
type clientTarget struct {
	path string
	// keys is the member path of the entry in a JSON file that is not a
	// server configuration (Claude Code's ~/.claude.json); nil when path is
	// a configuration file (config.AddServer writes it).
	keys []string
	// project is the project's directory in Claude Code's file.
	project string
}

// cmdConnect writes (or prints, or removes) the client's entry.
func cmdConnect(ctx context.Context, e *env) error {
	if len(e.args) != 1 {
		return &exitError{code: exitUsage, msg: "connect: want one CLIENT: claude-code, claude-desktop, vscode, cursor, codex or gemini" + seeHelp("connect")}
	}
	client := e.args[0]
	files := []string(e.f.config) // --config, or the file found (discoverConfig sets it)
	if len(files) == 0 {
		return &exitError{code: exitUsage, msg: "connect: no config file to connect to: add a server first (mcpvisor add NAME COMMAND...), or give --config" +
			" (looked for " + strings.Join(projectFiles, ", ") + ")"}
	}
	abs := make([]string, len(files))
	for i, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		abs[i] = a
	}
	data, err := filepath.Abs(e.f.data)
	if err != nil {
		return err
	}
	target, err := connectTarget(client, abs)
	if err != nil {
		return err
	}
	if e.f.remove {
		return disconnect(e, client, target, abs)
	}
	entry, err := connectEntry(ctx, e, abs, data)
	if err != nil {
		return err
	}
	if client == "claude-desktop" && entry.URL != "" {
		return &exitError{code: exitUsage, msg: "connect: Claude Desktop takes only local servers in its file; add " + entry.URL +
			" as a custom connector in its settings, or connect without --http"}
	}
	if e.f.print {
		return printEntry(e, client, target, entry)
	}
	if target.keys != nil {
		v, err := json.Marshal(entryJSON(entry))
		if err != nil {
			return err
		}
		if err := config.SetJSON(target.path, target.keys, v); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
	} else if err := config.AddServer(target.path, connectEntryName, entry, true); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	fmt.Fprintf(e.stdout, "connected %s: wrote the %q entry to %s\n", client, connectEntryName, target.path)
	if entry.URL != "" {
		fmt.Fprintf(e.stdout, "  %s with the gateway token (the file now holds it: keep it out of version control)\n", entry.URL)
	} else {
		fmt.Fprintf(e.stdout, "  %s %s\n", entry.Command, strings.Join(entry.Args, " "))
	}
	if target.keys != nil {
		if err := disableDirect(e, target, abs); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "restart %s (or reload its MCP servers) to use it\n", clientName(client))
	return nil
}

// connectTarget is the file connect writes for client, given the config
// files mcpvisor reads: never one of them.
func connectTarget(client string, configs []string) (clientTarget, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return clientTarget{}, err
	}
	project := projectDir(configs[0])
	reads := func(p string) bool {
		return slices.ContainsFunc(configs, func(c string) bool { return c == p || sameFile(c, p) })
	}
	pick := func(projectFile, userFile string) clientTarget {
		if p := filepath.Join(project, filepath.FromSlash(projectFile)); !reads(p) {
			return clientTarget{path: p}
		}
		return clientTarget{path: userFile}
	}
	switch client {
	case "claude-code", "claude":
		return clientTarget{path: filepath.Join(home, ".claude.json"), project: project,
			keys: []string{"projects", project, "mcpServers", connectEntryName}}, nil
	case "claude-desktop":
		return clientTarget{path: filepath.Join(userConfigDir(home), "Claude", "claude_desktop_config.json")}, nil
	case "vscode", "code":
		return pick(".vscode/mcp.json", filepath.Join(userConfigDir(home), "Code", "User", "mcp.json")), nil
	case "cursor":
		return pick(".cursor/mcp.json", filepath.Join(home, ".cursor", "mcp.json")), nil
	case "gemini":
		return pick(".gemini/settings.json", filepath.Join(home, ".gemini", "settings.json")), nil
	case "codex":
		p := filepath.Join(home, ".codex", "config.toml")
		if reads(p) {
			return clientTarget{}, &exitError{code: exitUsage, msg: "connect: mcpvisor reads " + p + " itself: give it another --config"}
		}
		return clientTarget{path: p}, nil
	}
	return clientTarget{}, &exitError{code: exitUsage, msg: fmt.Sprintf("connect: unknown client %q: want claude-code, claude-desktop, vscode, cursor, codex or gemini", client)}
}

// projectDir is the project a config file belongs to: the directory
// above a tool's dot-directory (.vscode/mcp.json's), else the file's own.
func projectDir(config string) string {
	dir := filepath.Dir(config)
	if strings.HasPrefix(filepath.Base(dir), ".") {
		return filepath.Dir(dir)
	}
	return dir
}

// userConfigDir is where desktop applications keep their settings.
func userConfigDir(home string) string {
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support")
	case "windows":
		if d := os.Getenv("APPDATA"); d != "" {
			return d
		}
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return filepath.Join(home, ".config")
}

// connectEntry is what the client runs: this binary's stdio with the
// config and data directory, or (--http) the running sidecar's /mcp.
func connectEntry(ctx context.Context, e *env, configs []string, data string) (config.Entry, error) {
	if e.f.http {
		r, err := findSidecar(ctx, e.f)
		if err != nil {
			return config.Entry{}, fmt.Errorf("connect --http: %w", err)
		}
		return config.Entry{URL: r.base + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + r.token}}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return config.Entry{}, err
	}
	if s, err := filepath.EvalSymlinks(self); err == nil {
		self = s
	}
	args := []string{"stdio"}
	for _, c := range configs {
		args = append(args, "--config", c)
	}
	return config.Entry{Command: self, Args: append(args, "--data", data)}, nil
}

// claudeEntry is an entry as Claude Code writes it in ~/.claude.json.
type claudeEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

func entryJSON(e config.Entry) claudeEntry {
	if e.URL != "" {
		return claudeEntry{Type: "http", URL: e.URL, Headers: e.Headers}
	}
	return claudeEntry{Type: "stdio", Command: e.Command, Args: e.Args}
}

// printEntry prints what connect would write, and where.
func printEntry(e *env, client string, t clientTarget, entry config.Entry) error {
	fmt.Fprintf(e.stderr, "mcpvisor: for %s, in %s:\n", clientName(client), t.path)
	if t.keys != nil {
		b, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{connectEntryName: entryJSON(entry)}}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(e.stdout, string(b))
		return err
	}
	// The entry in the file's own dialect: written to a file of the same
	// name (and directory name, which tells the dialect) in a temporary
	// directory.
	tmp, err := os.MkdirTemp("", "mcpvisor-connect-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p := filepath.Join(tmp, filepath.Base(filepath.Dir(t.path)), filepath.Base(t.path))
	if err := config.AddServer(p, connectEntryName, entry, true); err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(b)
	return err
}

// disableDirect lists the servers of the project's .mcp.json, when it is
// one that mcpvisor reads, in Claude Code's disabledMcpjsonServers for the
// project, so that Claude Code reaches them only through mcpvisor.
func disableDirect(e *env, t clientTarget, configs []string) error {
	names, err := projectMCPJSONServers(t.project, configs)
	if err != nil || len(names) == 0 {
		return err
	}
	keys := []string{"projects", t.project, "disabledMcpjsonServers"}
	have := claudeList(t.path, keys)
	for _, n := range names {
		if !slices.Contains(have, n) {
			have = append(have, n)
		}
	}
	v, _ := json.Marshal(have)
	if err := config.SetJSON(t.path, keys, v); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	fmt.Fprintf(e.stdout, "  Claude Code runs %s only through mcpvisor now (disabledMcpjsonServers of this project)\n", strings.Join(names, ", "))
	return nil
}

// projectMCPJSONServers are the servers of project/.mcp.json when
// mcpvisor reads that file.
func projectMCPJSONServers(project string, configs []string) ([]string, error) {
	p := filepath.Join(project, ".mcp.json")
	if !slices.ContainsFunc(configs, func(c string) bool { return sameFile(c, p) }) {
		return nil, nil
	}
	return config.ServerNames(p)
}

// claudeList reads the string list at keys of Claude Code's file.
func claudeList(path string, keys []string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// disconnect removes the entry connect wrote (and, for Claude Code, the
// servers it disabled).
func disconnect(e *env, client string, t clientTarget, configs []string) error {
	var err error
	if t.keys != nil {
		var found bool
		if found, err = config.DeleteJSON(t.path, t.keys); err == nil && found {
			if names, _ := projectMCPJSONServers(t.project, configs); len(names) > 0 {
				keys := []string{"projects", t.project, "disabledMcpjsonServers"}
				left := slices.DeleteFunc(claudeList(t.path, keys), func(n string) bool { return slices.Contains(names, n) })
				v, _ := json.Marshal(append([]string{}, left...))
				err = config.SetJSON(t.path, keys, v)
			}
		} else if err == nil {
			err = config.ErrNoSuchServer
		}
	} else {
		err = config.RemoveServer(t.path, connectEntryName)
	}
	if errors.Is(err, config.ErrNoSuchServer) {
		fmt.Fprintf(e.stdout, "%s is not connected: %s has no %q entry\n", clientName(client), t.path, connectEntryName)
		return nil
	}
	if err != nil {
		return fmt.Errorf("connect --remove: %w", err)
	}
	fmt.Fprintf(e.stdout, "removed the %q entry from %s\n", connectEntryName, t.path)
	return nil
}

func clientName(client string) string {
	switch client {
	case "claude-code", "claude":
		return "Claude Code"
	case "claude-desktop":
		return "Claude Desktop"
	case "vscode", "code":
		return "VS Code"
	case "cursor":
		return "Cursor"
	case "codex":
		return "Codex"
	case "gemini":
		return "Gemini CLI"
	}
	return client
}

// isSelfEntry reports whether a configured server is an mcpvisor stdio
// (what connect writes): running it from mcpvisor would serve mcpvisor
// to itself.
func isSelfEntry(command string, args []string) bool {
	if len(args) == 0 || args[0] != "stdio" {
		return false
	}
	if filepath.Base(command) == "mcpvisor" {
		return true
	}
	self, err := os.Executable()
	return err == nil && (command == self || sameFile(command, self))
}
