package config

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// confirmNote is what mcpvisor does instead of the agent tools'
// per-server and per-tool confirmation settings.
const confirmNote = "mcpvisor does not confirm a server's tool calls itself (its approval inbox holds only its own host tools that change servers): " +
	"whether to confirm a call is up to the client calling through it"

// unsupportedFields are fields other agent tools define that mcpvisor does
// not act on. They are ignored with a warning that says so, not reported as
// unknown; the value is an optional consequence worth telling the user.
// A field set to its zero value (false, "", [], {}, 0) asks for nothing,
// and is ignored without a warning.
var unsupportedFields = map[string]string{
	"trust":                        ": in Gemini CLI it skips confirming this server's tool calls; " + confirmNote,
	"authProviderType":             "",                                                                              // Gemini CLI
	"targetAudience":               "",                                                                              // Gemini CLI
	"targetServiceAccount":         "",                                                                              // Gemini CLI
	"dev":                          ": mcpvisor does not watch the server's files or attach a debugger",             // VS Code
	"alwaysAllow":                  ": it lists tools to run without confirmation; " + confirmNote,                  // Cline, Roo Code
	"autoApprove":                  ": it lists tools to run without confirmation; " + confirmNote,                  // Cline
	"watchPaths":                   ": mcpvisor does not restart a server when files change",                        // Roo Code
	"faviconUrl":                   "",                                                                              // Continue
	"default_tools_approval_mode":  ": it sets how Codex confirms tool calls; " + confirmNote,                       // Codex
	"tools":                        ": it sets how Codex confirms tool calls; " + confirmNote,                       // Codex: per-tool approval modes
	"required":                     ": a server that fails to start does not stop the others",                       // Codex
	"supports_parallel_tool_calls": "",                                                                              // Codex
	"experimental_environment":     ": servers run where mcpvisor runs",                                             // Codex
	"oauth_resource":               "",                                                                              // Codex
	"bearer_token":                 `: name an environment variable that holds the token in "bearer_token_env_var"`, // Codex rejects it too
}

// isZeroValue reports whether raw is false, "", 0, [] or {}.
func isZeroValue(raw json.RawMessage) bool {
	switch jsonKind(raw) {
	case "a boolean":
		return !decodeBool(raw)
	case "a string":
		return unmarshalString(raw) == ""
	case "a number":
		var f float64
		return json.Unmarshal(raw, &f) == nil && f == 0
	case "an array":
		return len(arrayElements(raw)) == 0
	case "an object":
		return len(objectMembers(raw)) == 0
	}
	return true
}

// entry is one server entry as decoded, with what is resolved after
// decoding (Parse's job) kept beside it.
type entry struct {
	Server
	// envFile is "envFile" as written ("" when absent).
	envFile string
	// skip, when not "", says why the entry is not a server mcpvisor can
	// run (a Zed extension); it is then left out, with a warning.
	skip string
}

// entryDecoder decodes one server entry of a dialect. Its methods report
// type errors, keys given twice and fields that contradict each other;
// everything else is left to Validate.
type entryDecoder struct {
	dialect toolDialect
	zed     bool // the entry is one of Zed's "context_servers"
	e       entry

	warnings []string
	errs     []*Error

	typ, httpURL, serverURL    string
	enabled, disabled          *bool
	disabledTools              []string
	connectionTimeout          *Duration
	codex                      codexFields
	requestHeaders             map[string]string
	startupTimeoutGiven        bool
	headersGiven, excludeGiven bool
}

// decodeServer decodes the members of one server entry. Warnings name
// unknown and unsupported fields.
func decodeServer(name string, members []jsonMember, d toolDialect, zed bool) (entry, []string, []*Error) {
	x := &entryDecoder{dialect: d, zed: zed, e: entry{Server: Server{Name: name, Enabled: true}}}
	sc := &x.e.Server
	seen := map[string]bool{}
	for _, m := range members {
		if seen[m.key] {
			x.errs = append(x.errs, sc.errorf(m.key, "given more than once"))
			continue
		}
		seen[m.key] = true
		if jsonKind(m.value) == "null" {
			continue // as absent, like encoding/json
		}
		x.field(m)
	}
	x.finish()
	return x.e, x.warnings, x.errs
}

// field decodes one member of the entry.
func (x *entryDecoder) field(m jsonMember) {
	if x.dialect == dialectCodex {
		if x.codexField(m) {
			return
		}
		if spelling, ok := codexSpellings[m.key]; ok {
			x.warn(fmt.Sprintf("unknown field %q ignored (%s)", m.key, spelling))
			return
		}
	}
	if x.zed && x.zedField(m) {
		return
	}
	if !x.commonField(m) {
		if note, ok := unsupportedFields[m.key]; ok {
			if !isZeroValue(m.value) {
				x.warn(fmt.Sprintf("field %q is not supported by mcpvisor, ignored%s", m.key, note))
			}
		} else {
			x.warn(fmt.Sprintf("unknown field %q ignored", m.key))
		}
	}
}

func (x *entryDecoder) warn(msg string) {
	x.warnings = append(x.warnings, fmt.Sprintf("server %q: %s", x.e.Name, msg))
}

func (x *entryDecoder) fail(err *Error) {
	if err != nil {
		x.errs = append(x.errs, err)
	}
}

// commonField decodes a field every dialect spells the same way (Codex's
// file takes those of mcpvisor's own that Codex has no name for), and
// reports whether it knew the field.
func (x *entryDecoder) commonField(m jsonMember) bool {
	sc := &x.e.Server
	switch m.key {
	case "type":
		x.fail(decodeStringField(sc, m, &x.typ))
	case "command":
		x.fail(decodeStringField(sc, m, &sc.Command))
	case "args":
		var err *Error
		sc.Args, err = decodeStringsField(sc, m)
		x.fail(err)
	case "env":
		env, err := decodeMapField(sc, m)
		x.fail(err)
		sc.Env = mergeMap(sc.Env, env)
	case "envFile":
		x.fail(decodeStringField(sc, m, &x.e.envFile))
	case "cwd":
		x.fail(decodeStringField(sc, m, &sc.Cwd))
	case "url":
		x.fail(decodeStringField(sc, m, &sc.URL))
	case "httpUrl":
		x.fail(decodeStringField(sc, m, &x.httpURL))
	case "serverUrl":
		x.fail(decodeStringField(sc, m, &x.serverURL))
	case "headers":
		h, err := decodeMapField(sc, m)
		x.fail(err)
		sc.Headers, x.headersGiven = mergeMap(sc.Headers, h), true
	case "requestOptions":
		x.requestOptions(m)
	case "apiKey", "api_key":
		x.fail(decodeStringField(sc, m, &sc.APIKey))
	case "oauth":
		o, ws, errs := decodeOAuth(sc, m)
		sc.OAuth = o
		x.warnings = append(x.warnings, ws...)
		x.errs = append(x.errs, errs...)
	case "headersHelper":
		x.fail(decodeStringField(sc, m, &sc.HeadersHelper))
	case "enabled":
		x.enabled = new(bool)
		x.fail(decodeBoolField(sc, m, x.enabled))
	case "disabled":
		x.disabled = new(bool)
		x.fail(decodeBoolField(sc, m, x.disabled))
	case "description":
		x.fail(decodeStringField(sc, m, &sc.Description))
	case "friendlyName":
		x.fail(decodeStringField(sc, m, &sc.FriendlyName))
	case "timeout":
		x.fail(decodeTimeoutField(sc, m, &sc.Timeout, x.dialect.timeoutUnit()))
	case "startupTimeout":
		x.startupTimeoutGiven = true
		x.fail(decodeDurationField(sc, m, &sc.StartupTimeout))
	case "connectionTimeout": // Continue: milliseconds
		var d Duration
		if err := decodeTimeoutField(sc, m, &d, time.Millisecond); err != nil {
			x.fail(err)
		} else {
			x.connectionTimeout = &d
		}
	case "maxTotalTimeout":
		x.fail(decodeDurationField(sc, m, &sc.MaxTotalTimeout))
	case "resetTimeoutOnProgress":
		x.fail(decodeBoolField(sc, m, &sc.ResetTimeoutOnProgress))
	case "logLevel":
		x.fail(decodeStringField(sc, m, &sc.LogLevel))
	case "validateArguments":
		x.fail(decodeBoolField(sc, m, &sc.ValidateArguments))
	case "includeTools":
		var err *Error
		sc.IncludeTools, err = decodeStringsField(sc, m)
		x.fail(err)
	case "excludeTools":
		var err *Error
		sc.ExcludeTools, err = decodeStringsField(sc, m)
		x.excludeGiven = true
		x.fail(err)
	case "disabledTools": // Windsurf, Roo Code
		var err *Error
		x.disabledTools, err = decodeStringsField(sc, m)
		x.fail(err)
	case "maxTools":
		x.fail(decodeIntField(sc, m, &sc.MaxTools))
	case "maxDescription":
		x.fail(decodeIntField(sc, m, &sc.MaxDescription))
	case "toolPolicy":
		x.fail(decodeStringField(sc, m, &sc.ToolPolicy))
	case "allowPrivate":
		x.fail(decodeBoolField(sc, m, &sc.AllowPrivate))
	case "inheritEnv":
		x.fail(decodeBoolField(sc, m, &sc.InheritEnv))
	case "prefix":
		sc.Prefix = new(bool)
		if err := decodeBoolField(sc, m, sc.Prefix); err != nil {
			sc.Prefix = nil
			x.fail(err)
		}
	case "protocolVersion":
		x.fail(decodeStringField(sc, m, &sc.ProtocolVersion))
	case "node":
		x.fail(decodeStringField(sc, m, &sc.Node))
	case "activate":
		x.fail(decodeBoolField(sc, m, &sc.Activate))
	case "limits":
		l, errs := decodeLimits(sc, m)
		sc.Limits = l
		x.errs = append(x.errs, errs...)
	default:
		return false
	}
	return true
}

// requestOptions decodes Continue's "requestOptions": its "headers" are
// the server's; the rest (proxy, TLS, timeouts) are not supported.
func (x *entryDecoder) requestOptions(m jsonMember) {
	sc := &x.e.Server
	if kind := jsonKind(m.value); kind != "an object" {
		x.fail(sc.errorf(m.key, "want an object, got %s", kind))
		return
	}
	for _, f := range objectMembers(m.value) {
		field := jsonMember{m.key + "." + f.key, f.value}
		if f.key == "headers" {
			h, err := decodeMapField(sc, field)
			x.fail(err)
			x.requestHeaders = h
			continue
		}
		x.warn(fmt.Sprintf("field %q is not supported by mcpvisor, ignored", field.key))
	}
}

// zedField decodes the fields of Zed's "context_servers" entries that
// differ from the common ones, and reports whether it handled m: "source"
// ("custom", or "extension": a server only Zed can run), "settings" (an
// extension's) and "command" as an object {"path", "args", "env"}.
func (x *entryDecoder) zedField(m jsonMember) bool {
	sc := &x.e.Server
	switch m.key {
	case "source":
		var source string
		if err := decodeStringField(sc, m, &source); err != nil {
			x.fail(err)
			return true
		}
		switch source {
		case "custom":
		case "extension":
			x.e.skip = `a Zed extension ("source": "extension"), which only Zed can run: skipped`
		default:
			x.fail(sc.errorf(m.key, `want "custom" or "extension", got %q`, source))
		}
		return true
	case "settings":
		if !isZeroValue(m.value) {
			x.warn(`field "settings" is not supported by mcpvisor, ignored: it configures a Zed extension`)
		}
		return true
	case "command":
		if jsonKind(m.value) != "an object" {
			return false // the flat form, "command": "npx"
		}
		for _, f := range objectMembers(m.value) {
			field := jsonMember{"command." + f.key, f.value}
			switch f.key {
			case "path":
				x.fail(decodeStringField(sc, field, &sc.Command))
			case "args":
				args, err := decodeStringsField(sc, field)
				x.fail(err)
				sc.Args = append(sc.Args, args...)
			case "env":
				env, err := decodeMapField(sc, field)
				x.fail(err)
				sc.Env = mergeMap(sc.Env, env)
			default:
				x.warn(fmt.Sprintf("unknown field %q ignored", field.key))
			}
		}
		if sc.Command == "" {
			x.fail(sc.errorf("command.path", "required: the command to run"))
		}
		return true
	}
	return false
}

// finish resolves what depends on several fields: enabled and disabled,
// the url spellings, the type, and the aliases of mcpvisor's fields.
func (x *entryDecoder) finish() {
	sc := &x.e.Server
	switch {
	case x.enabled != nil && x.disabled != nil && *x.enabled == *x.disabled:
		x.fail(sc.errorf("disabled", "%v contradicts \"enabled\": %v", *x.disabled, *x.enabled))
	case x.enabled != nil:
		sc.Enabled = *x.enabled
	case x.disabled != nil:
		sc.Enabled = !*x.disabled
	}

	if x.serverURL != "" {
		if sc.URL != "" {
			x.fail(sc.errorf("serverUrl", `cannot be combined with "url"; give one`))
		} else {
			sc.URL = x.serverURL
		}
	}
	if x.httpURL != "" {
		switch {
		case sc.URL != "":
			x.fail(sc.errorf("httpUrl", `cannot be combined with "url"; give one`))
		case x.typ != "" && normalizeType(x.typ) != string(protocol.TransportHTTP):
			x.fail(sc.errorf("httpUrl", "is a streamable HTTP url, but \"type\" is %q", x.typ))
		default:
			sc.URL, x.typ = x.httpURL, string(protocol.TransportHTTP)
		}
	} else if x.typ == "" && sc.URL != "" && x.serverURL == "" && sc.Command == "" {
		x.typ = x.dialect.urlType()
	}

	if x.requestHeaders != nil {
		if x.headersGiven {
			x.fail(sc.errorf("requestOptions.headers", `cannot be combined with "headers"; give one`))
		} else {
			sc.Headers = x.requestHeaders
		}
	}
	if x.connectionTimeout != nil {
		if x.startupTimeoutGiven {
			x.fail(sc.errorf("connectionTimeout", `cannot be combined with "startupTimeout"; give one`))
		} else {
			sc.StartupTimeout = *x.connectionTimeout
		}
	}
	if x.disabledTools != nil {
		if x.excludeGiven {
			x.fail(sc.errorf("disabledTools", `cannot be combined with "excludeTools"; give one`))
		} else {
			sc.ExcludeTools = x.disabledTools
		}
	}
	if x.dialect == dialectCodex {
		x.codex.apply(x)
	}

	sc.Type = x.typ
	if t, ok := sc.Transport(); ok {
		sc.Type = string(t)
	}
}

// mergeMap adds add's entries to m (allocating it when nil) and returns
// it; nil when both are empty.
func mergeMap(m, add map[string]string) map[string]string {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]string, len(add))
	}
	for k, v := range add {
		m[k] = v
	}
	return m
}

// Decode decodes one server entry in the common JSON format. Unknown
// fields are ignored; type errors, keys given twice and fields that
// contradict each other are reported, joined, each naming its field. It
// does not validate (see Server.Validate) and leaves Name empty. What
// only a file resolves ("envFile", VS Code's predefined variables) is
// left as it is: Parse resolves it.
func decodeEntry(raw []byte) (Server, error) {
	if kind := jsonKind(raw); kind != "an object" {
		return Server{}, joinErrors([]*Error{newError("", "", "entry is %s, want an object", kind)})
	}
	e, _, errs := decodeServer("", objectMembers(json.RawMessage(raw)), dialectJSON, false)
	if len(errs) > 0 {
		return Server{}, joinErrors(errs)
	}
	return e.Server, nil
}
