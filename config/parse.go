package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File is a parsed configuration file.
type parsedFile struct {
	// dialect is the agent tool whose file it is, as its path or else its
	// content tells.
	dialect toolDialect
	// Servers holds every entry, disabled ones included, in file order.
	Servers []Server
	// Inputs are the file's VS Code "inputs", in file order.
	Inputs []Input
	// Warnings lists what was ignored or could not be checked, one line
	// each, e.g. `server "x": unknown field "foo" ignored`.
	Warnings []string
}

// Parse parses a configuration file's contents in the dialect its path
// (opts.Path) or else its content tells (see toolDialect): JSON with comments
// and trailing commas, Codex's TOML or Continue's YAML. It decodes and
// validates every entry, disabled ones included, and returns all problems
// at once, joined with errors.Join, each an *Error wrapping ErrInvalid.
// name, when not "", is the file's name for messages.
//
// A file must name its servers: a document with none of the members that
// hold them ("mcpServers", "servers", "context_servers"; Codex's
// [mcp_servers] tables) is an error, since it is most likely not a
// configuration at all. One whose member is there but empty is fine.
//
// References are checked against opts.Lookup: a variable that is unset and
// has no default is a warning, since it concerns this environment rather
// than the file (the host lists the server failed, and starts the others);
// a malformed reference is an error. ${input:ID} is not looked up (the host asks for it when
// the server starts), but must name one of the file's inputs.
//
// Parse never returns a nil *parsedFile. When it fails, the File holds the
// warnings found (unknown fields, say) and no servers, so that a caller
// can show both.
func parseFile(name string, data []byte, opts Options) (*parsedFile, error) {
	d, byPath := dialectFromPath(opts.Path)
	top, err := decodeDocument(name, data, d)
	if err != nil {
		return &parsedFile{dialect: d}, err
	}
	if kind := jsonKind(top); kind != "an object" {
		at := "top level"
		if name != "" {
			at = name + ": top level"
		}
		return &parsedFile{dialect: d}, &Error{msg: fmt.Sprintf("%s is %s, want an object", at, kind)}
	}
	members := objectMembers(top)
	if !byPath {
		d = dialectFromContent(members)
	}
	p := &parser{name: name, opts: opts, file: &parsedFile{dialect: d}, dialect: d}
	p.parse(members)
	if len(p.errs) > 0 {
		return &parsedFile{dialect: d, Warnings: p.file.Warnings}, joinErrors(p.errs)
	}
	return p.file, nil
}

// parser holds what parsing one file gathers.
type parser struct {
	name    string
	opts    Options
	file    *parsedFile
	dialect toolDialect
	errs    []*Error

	inputIDs   map[string]bool
	predefined *strings.Replacer // resolved on first use
}

// rawEntry is one server entry before decoding.
type rawEntry struct {
	name    string
	members []jsonMember
	zed     bool // one of Zed's "context_servers"
}

func (p *parser) warn(ws ...string) {
	for _, w := range ws {
		if w != "" {
			p.file.Warnings = append(p.file.Warnings, w)
		}
	}
}

func (p *parser) fail(errs ...*Error) { p.errs = append(p.errs, errs...) }

func (p *parser) parse(top []jsonMember) {
	keys := serverKeys
	if p.dialect.syntax() == syntaxTOML {
		keys = []string{"mcp_servers"}
	}
	found := map[string]json.RawMessage{}
	var inputs json.RawMessage
	for _, m := range top {
		if m.key == "inputs" && p.dialect.syntax() == syntaxJSON {
			inputs = m.value
			continue
		}
		if !slices.Contains(keys, m.key) {
			continue // other settings of the tool (Gemini CLI's, Zed's, Codex's), a block's name and version
		}
		if _, dup := found[m.key]; dup {
			p.fail(&Error{msg: fmt.Sprintf("%q is given more than once", m.key)})
			continue
		}
		found[m.key] = m.value
	}
	if len(found) == 0 && len(p.errs) == 0 {
		p.fail(noServersError(p.name, p.dialect))
		return
	}

	if inputs != nil {
		in, ws, errs := decodeInputs(inputs)
		p.file.Inputs = in
		p.warn(ws...)
		p.fail(errs...)
	}
	p.inputIDs = map[string]bool{}
	for _, in := range p.file.Inputs {
		p.inputIDs[in.ID] = true
	}

	var entries []rawEntry
	var from string
	for _, key := range keys {
		raw, ok := found[key]
		if !ok {
			continue
		}
		es, ok := p.entries(key, raw)
		if !ok || len(es) == 0 {
			continue
		}
		if from != "" {
			p.fail(&Error{msg: fmt.Sprintf("both %q and %q list servers; use one", from, key)})
			break
		}
		from, entries = key, es
	}

	seen := map[string]bool{}
	for _, re := range entries {
		if seen[re.name] {
			p.fail(&Error{server: re.name, msg: fmt.Sprintf("defined more than once in %q", from)})
			continue
		}
		seen[re.name] = true
		if sc, ok := p.server(re); ok {
			p.file.Servers = append(p.file.Servers, sc)
		}
	}
}

// entries lists the servers of the member key: an object of entries
// keyed by name, or, in Continue's YAML, a list of blocks that name
// themselves. ok is false when the member is not a list of servers
// (reported) or is null.
func (p *parser) entries(key string, raw json.RawMessage) ([]rawEntry, bool) {
	zed := key == "context_servers"
	switch kind := jsonKind(raw); {
	case kind == "null":
		return nil, false
	case kind == "an object":
		var es []rawEntry
		for _, m := range objectMembers(raw) {
			if k := jsonKind(m.value); k != "an object" {
				p.fail(&Error{server: m.key, msg: fmt.Sprintf("entry is %s, want an object", k)})
				continue
			}
			es = append(es, rawEntry{name: m.key, members: objectMembers(m.value), zed: zed})
		}
		return es, true
	case kind == "an array" && p.dialect.syntax() == syntaxYAML:
		return p.blocks(key, raw), true
	case p.dialect.syntax() == syntaxYAML:
		p.fail(&Error{msg: fmt.Sprintf("%q is %s, want a list of servers, each with a name", key, kind)})
	default:
		p.fail(&Error{msg: fmt.Sprintf("%q is %s, want an object of servers keyed by name", key, kind)})
	}
	return nil, false
}

// blocks lists the servers of Continue's "mcpServers" list. Each block's
// "name" is a display name ("Browser search"); the server is named after
// it with the characters a server name cannot hold replaced (see
// displayNameToServerName), with a warning when that changes it.
func (p *parser) blocks(key string, raw json.RawMessage) []rawEntry {
	var es []rawEntry
	for i, elem := range arrayElements(raw) {
		label := fmt.Sprintf("%s[%d]", key, i)
		if kind := jsonKind(elem); kind != "an object" {
			p.fail(&Error{msg: fmt.Sprintf("%s: entry is %s, want an object with a name", label, kind)})
			continue
		}
		var display string
		var members []jsonMember
		for _, m := range objectMembers(elem) {
			if m.key != "name" {
				members = append(members, m)
				continue
			}
			if kind := jsonKind(m.value); kind != "a string" {
				p.fail(&Error{field: label + ".name", msg: fmt.Sprintf("want a string, got %s", kind)})
				continue
			}
			display = unmarshalString(m.value)
		}
		if display == "" {
			p.fail(&Error{field: label + ".name", msg: "required: the server's name"})
			continue
		}
		name := displayNameToServerName(display)
		if name == "" {
			p.fail(&Error{field: label + ".name", msg: fmt.Sprintf("%q has no letter or digit to name a server after", display)})
			continue
		}
		if name != display {
			p.warn(fmt.Sprintf("server %q is named %q (server names hold only letters, digits, '_' and '-')", display, name))
		}
		es = append(es, rawEntry{name: name, members: members})
	}
	return es
}

// server decodes, resolves and checks one entry. ok is false when the
// entry is not a server to run (a Zed extension); its problems are
// recorded either way.
func (p *parser) server(re rawEntry) (Server, bool) {
	e, warnings, errs := decodeServer(re.name, re.members, p.dialect, re.zed)
	if e.skip != "" {
		// What the entry says is for the tool that runs it.
		p.warn(fmt.Sprintf("server %q: %s", re.name, e.skip))
		return Server{}, false
	}
	p.warn(warnings...)
	sc := e.Server

	// What the tools resolve when the file loads is resolved now;
	// their other spellings become ${NAME}, for the host to expand.
	switch {
	case p.dialect.predefinedVariables():
		if r, err := p.predefinedVariables(); err != nil {
			errs = append(errs, sc.errorf("", "resolving ${workspaceFolder}: %v", err))
		} else {
			sc.rewrite(r.Replace)
			e.envFile = r.Replace(e.envFile)
		}
	case p.dialect == dialectGemini:
		sc.rewrite(bracketBareVariables)
	case p.dialect == dialectContinue:
		sc.rewrite(continueSecrets)
	}
	var bare []string
	if p.dialect != dialectGemini {
		bare = sc.bareVariableWarnings()
	}
	if e.envFile != "" {
		if err := p.loadEnvFile(&sc, e.envFile); err != nil {
			if sc.Enabled {
				errs = append(errs, err)
			} else {
				p.warn(err.line() + " (the server is disabled)")
			}
		}
	}
	if p.dialect.excludeWins() && len(sc.ExcludeTools) > 0 {
		sc.IncludeTools = slices.DeleteFunc(sc.IncludeTools, func(t string) bool { return slices.Contains(sc.ExcludeTools, t) })
		if len(sc.IncludeTools) == 0 {
			sc.IncludeTools = nil
		}
	}

	// A field that failed to decode is reported once, not again by
	// validation as missing or empty.
	failed := map[string]bool{}
	for _, e := range errs {
		failed[e.topField()] = true
	}
	for _, e := range sc.validate(p.opts) {
		if !failed[e.topField()] {
			errs = append(errs, e)
		}
	}
	errs = append(errs, p.checkInputs(sc)...)
	// An unset variable is this environment's, not the file's: it keeps
	// its server from starting (the host reports it failed, with the error
	// that names the variable) and leaves the others be.
	for _, u := range sc.unsetVariables(p.opts.Lookup) {
		why := "the server is disabled"
		if sc.Enabled {
			why = "the server cannot start until it is set"
		}
		p.warn(fmt.Sprintf("server %q: field %q: variable %s is not set and has no default (%s)", sc.Name, u.field, u.name, why))
	}
	p.warn(bare...)
	p.warn(sc.unusedFieldWarnings()...)
	p.warn(sc.privateURLWarning(p.opts.Lookup, p.dialect))
	p.warn(sc.oauthURLWarnings(p.opts.Lookup)...)
	p.fail(errs...)
	return sc, true
}

func (p *parser) predefinedVariables() (*strings.Replacer, error) {
	if p.predefined == nil {
		r, err := predefinedVariables(p.opts.Path)
		if err != nil {
			return nil, err
		}
		p.predefined = r
	}
	return p.predefined, nil
}

// loadEnvFile reads the environment file path names (VS Code's and
// Cursor's "envFile"; relative to the workspace folder) into sc.Env. The
// entry's own "env" wins over the file.
func (p *parser) loadEnvFile(sc *Server, path string) *Error {
	if strings.Contains(path, "${") {
		expanded, unset, err := expandRefs(path, p.opts.Lookup, "")
		switch {
		case err != nil:
			return sc.errorf("envFile", "%v", err)
		case len(unset) > 0:
			return sc.errorf("envFile", "variable %s is not set and has no default", unset[0])
		}
		path = expanded
	}
	if !filepath.IsAbs(path) {
		ws, err := workspaceFolder(p.opts.Path)
		if err != nil {
			return sc.errorf("envFile", "%v", err)
		}
		path = filepath.Join(ws, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return sc.errorf("envFile", "%v", err)
	}
	vars, err := parseDotenv(string(data))
	if err != nil {
		return sc.errorf("envFile", "%s: %v", path, err)
	}
	for k, v := range vars {
		if _, own := sc.Env[k]; !own {
			sc.Env = mergeMap(sc.Env, map[string]string{k: v})
		}
	}
	return nil
}

// checkInputs reports each ${input:ID} in sc that names none of the
// file's inputs.
func (p *parser) checkInputs(sc Server) []*Error {
	var errs []*Error
	for _, f := range sc.expandable() {
		_, unset, err := expandRefs(f.value, nil, "")
		if err != nil {
			continue // reported by Validate
		}
		for _, name := range unset {
			id, ok := strings.CutPrefix(name, "input:")
			if !ok || p.inputIDs[id] {
				continue
			}
			if len(p.file.Inputs) == 0 {
				errs = append(errs, sc.errorf(f.field, `${input:%s} names no input: the file has no "inputs"`, id))
			} else {
				errs = append(errs, sc.errorf(f.field, `${input:%s} names no input in "inputs"`, id))
			}
		}
	}
	return errs
}
