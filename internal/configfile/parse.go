package configfile

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpvisor/mcpvisor/internal/actors"
)

// unsupportedFields are fields other agent tools define that mcpvisor does
// not act on. They are ignored with a warning that says so, not reported as
// unknown; the value is an optional consequence worth telling the user.
var unsupportedFields = map[string]string{
	"trust":                "",                                                            // Gemini CLI: skip confirmations
	"authProviderType":     "",                                                            // Gemini CLI
	"targetAudience":       "",                                                            // Gemini CLI
	"targetServiceAccount": "",                                                            // Gemini CLI
	"envFile":              `: variables in that file are not passed; list them in "env"`, // VS Code, Cursor
	"dev":                  "",                                                            // VS Code
	"alwaysAllow":          "",                                                            // Cline, Roo
	"autoApprove":          "",                                                            // Cline, Roo
}

// File is a parsed configuration file.
type File struct {
	// Servers holds every entry, disabled ones included, in file order.
	Servers []Server
	// Warnings lists what was ignored or could not be checked, one line
	// each, e.g. `server "x": unknown field "foo" ignored`.
	Warnings []string
}

// Parse parses a configuration file's contents: JSON with comments and
// trailing commas, servers in a top-level "mcpServers" or "servers" object
// keyed by name. It decodes and validates every entry, disabled ones
// included, and returns all problems at once, joined with errors.Join, each
// an *Error wrapping ErrInvalid. name, when not "", is the file's name for
// the positions of syntax errors.
//
// References are checked against opts.Lookup: a variable that is unset and
// has no default is an error in an enabled server and a warning in a
// disabled one.
func Parse(name string, data []byte, opts Options) (*File, error) {
	lookup := opts.Lookup
	data = strip(data)
	var top json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := syntaxPosition(data, syn.Offset)
			where := fmt.Sprintf("line %d, column %d", line, col)
			if name != "" {
				where = fmt.Sprintf("%s:%d:%d", name, line, col)
			}
			return nil, &Error{msg: where + ": " + syn.Error(), cause: syn}
		}
		return nil, &Error{msg: err.Error(), cause: err}
	}
	if kind := jsonKind(top); kind != "an object" {
		where := "top level"
		if name != "" {
			where = name + ": top level"
		}
		return nil, &Error{msg: fmt.Sprintf("%s is %s, want an object", where, kind)}
	}

	var errs []*Error
	found := map[string]json.RawMessage{}
	for _, m := range objectMembers(top) {
		if m.key != "mcpServers" && m.key != "servers" {
			continue // other tools' settings (Gemini CLI's settings.json, VS Code's "inputs")
		}
		if _, dup := found[m.key]; dup {
			errs = append(errs, &Error{msg: fmt.Sprintf("%q is given more than once", m.key)})
			continue
		}
		found[m.key] = m.value
	}
	cfg := &File{}
	var entries []jsonMember
	var from string
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := found[key]
		if !ok {
			continue
		}
		switch kind := jsonKind(raw); kind {
		case "null":
			continue
		case "an object":
		default:
			errs = append(errs, &Error{msg: fmt.Sprintf("%q is %s, want an object of servers keyed by name", key, kind)})
			continue
		}
		ms := objectMembers(raw)
		if len(ms) == 0 {
			continue
		}
		if from != "" {
			errs = append(errs, &Error{msg: `both "mcpServers" and "servers" list servers; use one`})
			break
		}
		from, entries = key, ms
	}
	if len(found) == 0 {
		cfg.Warnings = append(cfg.Warnings, `no "mcpServers" or "servers" object: no servers configured`)
	}

	seen := map[string]bool{}
	for _, m := range entries {
		if seen[m.key] {
			errs = append(errs, &Error{server: m.key, msg: fmt.Sprintf("defined more than once in %q", from)})
			continue
		}
		seen[m.key] = true
		sc, warnings, entryErrs := decodeServer(m.key, m.value)
		cfg.Warnings = append(cfg.Warnings, warnings...)
		if jsonKind(m.value) != "an object" {
			errs = append(errs, entryErrs...)
			continue
		}
		// A field that failed to decode is reported once, not again by
		// validation as missing or empty.
		failed := map[string]bool{}
		for _, e := range entryErrs {
			failed[e.topField()] = true
		}
		for _, e := range sc.Validate(opts) {
			if !failed[e.topField()] {
				entryErrs = append(entryErrs, e)
			}
		}
		for _, u := range sc.unsetVariables(lookup) {
			if sc.Enabled {
				entryErrs = append(entryErrs, sc.errorf(u.field, "variable %s is not set and has no default", u.name))
			} else {
				cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("server %q: field %q: variable %s is not set and has no default (the server is disabled)", sc.Name, u.field, u.name))
			}
		}
		cfg.Warnings = append(cfg.Warnings, sc.bareVariableWarnings()...)
		cfg.Warnings = append(cfg.Warnings, sc.unusedFieldWarnings()...)
		errs = append(errs, entryErrs...)
		cfg.Servers = append(cfg.Servers, sc)
	}
	if len(errs) > 0 {
		return nil, Join(errs)
	}
	return cfg, nil
}

// Decode decodes one server entry. Unknown fields are ignored; type errors,
// keys given twice and fields that contradict each other are reported,
// joined, each naming its field. It does not validate (see Server.Validate)
// and leaves Name empty.
func Decode(raw []byte) (Server, error) {
	sc, _, errs := decodeServer("", raw)
	if len(errs) > 0 {
		return Server{}, Join(errs)
	}
	return sc, nil
}

// decodeServer decodes one server entry. It reports JSON type errors, keys
// given twice and fields that contradict each other; everything else is
// left to Validate. Warnings name unknown and unsupported fields.
func decodeServer(name string, raw json.RawMessage) (Server, []string, []*Error) {
	sc := Server{Name: name, Enabled: true}
	if kind := jsonKind(raw); kind != "an object" {
		return sc, nil, []*Error{sc.errorf("", "entry is %s, want an object", kind)}
	}
	var (
		warnings          []string
		errs              []*Error
		typ, httpURL      string
		enabled, disabled *bool
	)
	seen := map[string]bool{}
	for _, m := range objectMembers(raw) {
		if seen[m.key] {
			errs = append(errs, sc.errorf(m.key, "given more than once"))
			continue
		}
		seen[m.key] = true
		if jsonKind(m.value) == "null" {
			continue // as absent, like encoding/json
		}
		var err *Error
		switch m.key {
		case "type":
			err = decodeStringField(&sc, m, &typ)
		case "command":
			err = decodeStringField(&sc, m, &sc.Command)
		case "args":
			sc.Args, err = decodeStringsField(&sc, m)
		case "env":
			sc.Env, err = decodeMapField(&sc, m)
		case "cwd":
			err = decodeStringField(&sc, m, &sc.Cwd)
		case "url":
			err = decodeStringField(&sc, m, &sc.URL)
		case "httpUrl":
			err = decodeStringField(&sc, m, &httpURL)
		case "headers":
			sc.Headers, err = decodeMapField(&sc, m)
		case "apiKey", "api_key":
			err = decodeStringField(&sc, m, &sc.APIKey)
		case "oauth":
			var (
				ws   []string
				oerr []*Error
			)
			sc.OAuth, ws, oerr = decodeOAuth(&sc, m)
			warnings = append(warnings, ws...)
			errs = append(errs, oerr...)
		case "headersHelper":
			err = decodeStringField(&sc, m, &sc.HeadersHelper)
		case "enabled":
			enabled = new(bool)
			err = decodeBoolField(&sc, m, enabled)
		case "disabled":
			disabled = new(bool)
			err = decodeBoolField(&sc, m, disabled)
		case "description":
			err = decodeStringField(&sc, m, &sc.Description)
		case "friendlyName":
			err = decodeStringField(&sc, m, &sc.FriendlyName)
		case "timeout":
			err = decodeDurationField(&sc, m, &sc.Timeout)
		case "startupTimeout":
			err = decodeDurationField(&sc, m, &sc.StartupTimeout)
		case "maxTotalTimeout":
			err = decodeDurationField(&sc, m, &sc.MaxTotalTimeout)
		case "resetTimeoutOnProgress":
			err = decodeBoolField(&sc, m, &sc.ResetTimeoutOnProgress)
		case "logLevel":
			err = decodeStringField(&sc, m, &sc.LogLevel)
		case "validateArguments":
			err = decodeBoolField(&sc, m, &sc.ValidateArguments)
		case "includeTools":
			sc.IncludeTools, err = decodeStringsField(&sc, m)
		case "excludeTools":
			sc.ExcludeTools, err = decodeStringsField(&sc, m)
		case "maxTools":
			err = decodeIntField(&sc, m, &sc.MaxTools)
		case "maxDescription":
			err = decodeIntField(&sc, m, &sc.MaxDescription)
		case "allowPrivate":
			err = decodeBoolField(&sc, m, &sc.AllowPrivate)
		case "inheritEnv":
			err = decodeBoolField(&sc, m, &sc.InheritEnv)
		case "prefix":
			sc.Prefix = new(bool)
			if err = decodeBoolField(&sc, m, sc.Prefix); err != nil {
				sc.Prefix = nil
			}
		case "protocolVersion":
			err = decodeStringField(&sc, m, &sc.ProtocolVersion)
		case "activate":
			err = decodeBoolField(&sc, m, &sc.Activate)
		default:
			if note, ok := unsupportedFields[m.key]; ok {
				warnings = append(warnings, fmt.Sprintf("server %q: field %q is not supported by mcpvisor, ignored%s", name, m.key, note))
			} else {
				warnings = append(warnings, fmt.Sprintf("server %q: unknown field %q ignored", name, m.key))
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}

	switch {
	case enabled != nil && disabled != nil && *enabled == *disabled:
		errs = append(errs, sc.errorf("disabled", "%v contradicts \"enabled\": %v", *disabled, *enabled))
	case enabled != nil:
		sc.Enabled = *enabled
	case disabled != nil:
		sc.Enabled = !*disabled
	}

	if httpURL != "" {
		switch {
		case sc.URL != "":
			errs = append(errs, sc.errorf("httpUrl", `cannot be combined with "url"; give one`))
		case typ != "" && normalizeType(typ) != string(actors.TransportHTTP):
			errs = append(errs, sc.errorf("httpUrl", "is a streamable HTTP url, but \"type\" is %q", typ))
		default:
			sc.URL, typ = httpURL, string(actors.TransportHTTP)
		}
	}
	sc.Type = typ
	if t, ok := sc.Transport(); ok {
		sc.Type = string(t)
	}
	return sc, warnings, errs
}
