package mcpvisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/actors"
	"github.com/mcpvisor/mcpvisor/internal/supervision"
)

// Config is one configuration file: the servers it names and what was
// accepted without being used.
//
// The file format is the one agent tools already write: a top-level
// "mcpServers" object (Claude Code, Cursor, Gemini CLI) or "servers" object
// (VS Code) keyed by server name. Comments and trailing commas are accepted,
// as VS Code's JSONC allows them. Fields other tools define and mcpvisor
// does not use are ignored with a warning, so such a file loads unchanged.
type Config struct {
	// Servers holds every configured server, disabled ones included, in the
	// order the file lists them.
	Servers []ServerConfig
	// Warnings lists what was ignored or could not be checked, one line
	// each, e.g. `server "x": unknown field "foo" ignored`.
	Warnings []string
}

// ServerConfig is one server entry as written in the file. References to
// variables, ${NAME}, ${NAME:-default} and ${env:NAME}, are kept as written
// in command, args, env values, cwd, url and header values; Spec expands
// them when the server is started.
//
// ParseConfig and UnmarshalJSON leave Type resolved to "stdio", "http" or
// "sse": the aliases "streamable-http" and "streamableHttp" become "http",
// Gemini CLI's "httpUrl" becomes Type "http" with that URL, and an entry
// without a type that has a url and no command is remote (Cursor and Gemini
// CLI write no type): "sse" when the url's path ends in "/sse", "http"
// otherwise. Any other entry without a type is "stdio". Empty lists and maps
// are nil.
type ServerConfig struct {
	Name string `json:"-"`
	Type string `json:"type,omitempty"`

	// stdio
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`

	// http, sse
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// APIKey is sent as "Authorization: Bearer <key>" unless headers set
	// Authorization themselves. Also read as "api_key".
	APIKey string `json:"apiKey,omitempty"`

	// Enabled is resolved from "enabled" (default true) and "disabled".
	// A disabled server is validated like any other; it is only not run.
	Enabled      bool   `json:"enabled"`
	Description  string `json:"description,omitempty"`
	FriendlyName string `json:"friendlyName,omitempty"`

	Timeout        Duration `json:"timeout,omitempty"`        // per call; 0: the runtime default
	StartupTimeout Duration `json:"startupTimeout,omitempty"` // 0: the runtime default
	// ResetTimeoutOnProgress restarts a call's timeout at each progress
	// notification, up to MaxTotalTimeout (0: no cap).
	ResetTimeoutOnProgress bool     `json:"resetTimeoutOnProgress,omitempty"`
	MaxTotalTimeout        Duration `json:"maxTotalTimeout,omitempty"`
	// LogLevel is sent as logging/setLevel once the server is ready, if it
	// declared logging: debug, info, notice, warning, error, critical,
	// alert or emergency.
	LogLevel string `json:"logLevel,omitempty"`
	// ValidateArguments checks a call's arguments against the tool's
	// inputSchema before sending it; a mismatch is a tool error the model
	// can correct.
	ValidateArguments bool `json:"validateArguments,omitempty"`

	// IncludeTools and ExcludeTools hold the server's own tool names, not
	// the namespaced mcp__<server>__<tool> form.
	IncludeTools   []string `json:"includeTools,omitempty"`
	ExcludeTools   []string `json:"excludeTools,omitempty"`
	MaxTools       int      `json:"maxTools,omitempty"`       // 0: no cap
	MaxDescription int      `json:"maxDescription,omitempty"` // bytes; 0: the runtime default; -1: no cap

	AllowPrivate bool `json:"allowPrivate,omitempty"` // http, sse: may reach loopback and private addresses
	InheritEnv   bool `json:"inheritEnv,omitempty"`   // stdio: pass the whole parent environment, not the allow-list
}

// LoadConfig reads and parses the configuration file at path. Variables are
// looked up in the process environment (see ParseConfig). A file that cannot
// be read gives a one-line error wrapping the *fs.PathError, e.g.
// "config: open mcp.json: no such file or directory".
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parseConfig(path, data, os.LookupEnv)
}

// ParseConfig parses a configuration file's contents and validates every
// entry, disabled ones included. It returns all problems at once, joined
// with errors.Join, each wrapping ErrConfig and naming the server and field.
//
// ${VAR} and ${VAR:-default} references are checked against the process
// environment: a variable that is unset and has no default is an error in an
// enabled server and a warning in a disabled one. Spec expands them again
// when the server is started, so the environment at that time is what counts.
func ParseConfig(data []byte) (*Config, error) {
	return parseConfig("", data, os.LookupEnv)
}

// UnmarshalJSON decodes one server entry in the file format. Unknown fields
// are ignored; type errors are reported with the field's name. It does not
// validate (see Validate) and keeps c.Name, which the file gives as a key.
func (c *ServerConfig) UnmarshalJSON(data []byte) error {
	sc, _, errs := decodeServer("", data)
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	sc.Name = c.Name
	*c = sc
	return nil
}

// MarshalJSON encodes c in the file format, with Type resolved, so that
// UnmarshalJSON gives back the same ServerConfig (Name aside).
func (c ServerConfig) MarshalJSON() ([]byte, error) {
	type plain ServerConfig // drops the methods, keeps the tags
	p := plain(c)
	if t, ok := c.transport(); ok {
		p.Type = string(t)
	}
	return json.Marshal(p)
}

// Validate reports whether c is well formed, whether or not it is enabled:
// the name, the type, command or url as the type needs, the url's shape, the
// tool filters and limits, and the syntax of ${...} references. It does not
// consult the environment: a reference counts as unset, so its default (if
// any) is what the url is checked with. All problems are joined.
func (c ServerConfig) Validate() error {
	return joinErrors(c.validate(nil))
}

// Spec resolves c for the runtime. It expands ${VAR} and ${VAR:-default} in
// command, args, env values, cwd, url and header values using lookup
// (os.LookupEnv in production; nil means nothing is set). For a stdio server
// it builds the child's environment: supervision.BaseEnv(environ), or all of
// environ when InheritEnv is set, merged with the expanded Env map. An unset
// variable without a default is an error naming the server, the field and the
// variable. Spec validates c first; the returned spec is independent of c.
func (c ServerConfig) Spec(lookup func(string) (string, bool), environ []string) (actors.ServerSpec, error) {
	if errs := c.validate(lookup); len(errs) > 0 {
		return actors.ServerSpec{}, joinErrors(errs)
	}
	transport, _ := c.transport()
	var errs []*configError
	expand := func(field, s string) string {
		out, unset, err := expandVars(s, lookup, "")
		if err != nil { // validate has checked the syntax already
			errs = append(errs, c.errorf(field, "%v", err))
		}
		for _, name := range unset {
			errs = append(errs, c.errorf(field, "variable %s is not set and has no default", name))
		}
		if strings.ContainsRune(out, 0) {
			errs = append(errs, c.errorf(field, "contains a NUL byte after expansion"))
		}
		return out
	}

	spec := actors.ServerSpec{
		Name:                   c.Name,
		Transport:              transport,
		Enabled:                c.Enabled,
		Description:            c.Description,
		FriendlyName:           c.FriendlyName,
		CallTimeout:            time.Duration(c.Timeout),
		StartupTimeout:         time.Duration(c.StartupTimeout),
		MaxTotalTimeout:        time.Duration(c.MaxTotalTimeout),
		ResetTimeoutOnProgress: c.ResetTimeoutOnProgress,
		LogLevel:               c.LogLevel,
		IncludeTools:           slices.Clone(c.IncludeTools),
		ExcludeTools:           slices.Clone(c.ExcludeTools),
		MaxTools:               c.MaxTools,
		MaxDescription:         c.MaxDescription,
	}
	switch transport {
	case actors.TransportStdio:
		spec.Command = expand("command", c.Command)
		for i, a := range c.Args {
			spec.Args = append(spec.Args, expand(fmt.Sprintf("args[%d]", i), a))
		}
		spec.Dir = expand("cwd", c.Cwd)
		overrides := make(map[string]string, len(c.Env))
		for _, k := range sortedMapKeys(c.Env) {
			overrides[k] = expand("env."+k, c.Env[k])
		}
		var base []string
		if c.InheritEnv {
			base = slices.Clone(environ)
		} else {
			base = supervision.BaseEnv(environ)
		}
		spec.Env = supervision.MergeEnv(base, overrides)
	default:
		spec.URL = expand("url", c.URL)
		spec.AllowPrivate = c.AllowPrivate
		if len(c.Headers) > 0 {
			spec.Headers = make(map[string]string, len(c.Headers))
			for _, k := range sortedMapKeys(c.Headers) {
				v := expand("headers."+k, c.Headers[k])
				if strings.ContainsAny(v, "\r\n") {
					errs = append(errs, c.errorf("headers."+k, "contains a line break after expansion"))
				}
				spec.Headers[k] = v
			}
		}
		if c.APIKey != "" && !hasHeader(c.Headers, "Authorization") {
			key := expand("apiKey", c.APIKey)
			if strings.ContainsAny(key, "\r\n") {
				errs = append(errs, c.errorf("apiKey", "contains a line break after expansion"))
			}
			if spec.Headers == nil {
				spec.Headers = map[string]string{}
			}
			spec.Headers["Authorization"] = "Bearer " + key
		}
	}
	if len(errs) > 0 {
		return actors.ServerSpec{}, joinErrors(errs)
	}
	return spec, nil
}

// configError is one problem in a configuration. Its message is one line
// naming the server and field; it wraps ErrConfig and, when set, the
// underlying cause (e.g. actors.ErrInvalidServerName, *json.SyntaxError).
type configError struct {
	server string // "" when not known
	field  string // "" when the problem is not one field's, else e.g. "args[2]", "env.TOKEN"
	msg    string
	cause  error
}

func (e *configError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.server != "" {
		fmt.Fprintf(&b, "server %q: ", e.server)
	}
	if e.field != "" {
		fmt.Fprintf(&b, "field %q: ", e.field)
	}
	b.WriteString(e.msg)
	return b.String()
}

func (e *configError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrConfig, e.cause}
	}
	return []error{ErrConfig}
}

// topField is the file key a field label belongs to: "args[2]" → "args".
func (e *configError) topField() string {
	if i := strings.IndexAny(e.field, "[."); i >= 0 {
		return e.field[:i]
	}
	return e.field
}

func (c ServerConfig) errorf(field, format string, args ...any) *configError {
	return &configError{server: c.Name, field: field, msg: fmt.Sprintf(format, args...)}
}

func joinErrors(errs []*configError) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// unsupportedFields are fields other agent tools define that mcpvisor does
// not act on. They are ignored with a warning that says so, not reported as
// unknown; the value is an optional consequence worth telling the user.
var unsupportedFields = map[string]string{
	"trust":                "",                                                            // Gemini CLI: skip confirmations
	"oauth":                "",                                                            // Claude Code, Gemini CLI
	"authProviderType":     "",                                                            // Gemini CLI
	"targetAudience":       "",                                                            // Gemini CLI
	"targetServiceAccount": "",                                                            // Gemini CLI
	"headersHelper":        `: give the headers in "headers"`,                             // Claude Code
	"envFile":              `: variables in that file are not passed; list them in "env"`, // VS Code, Cursor
	"dev":                  "",                                                            // VS Code
	"alwaysAllow":          "",                                                            // Cline, Roo
	"autoApprove":          "",                                                            // Cline, Roo
}

// parseConfig is ParseConfig with a file name for syntax error positions
// and the variable lookup to check references against.
func parseConfig(name string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	data = stripJSONC(data)
	var top json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := syntaxPosition(data, syn.Offset)
			where := fmt.Sprintf("line %d, column %d", line, col)
			if name != "" {
				where = fmt.Sprintf("%s:%d:%d", name, line, col)
			}
			return nil, &configError{msg: where + ": " + syn.Error(), cause: syn}
		}
		return nil, &configError{msg: err.Error(), cause: err}
	}
	if kind := jsonKind(top); kind != "an object" {
		where := "top level"
		if name != "" {
			where = name + ": top level"
		}
		return nil, &configError{msg: fmt.Sprintf("%s is %s, want an object", where, kind)}
	}

	var errs []*configError
	found := map[string]json.RawMessage{}
	for _, m := range objectMembers(top) {
		if m.key != "mcpServers" && m.key != "servers" {
			continue // other tools' settings (Gemini CLI's settings.json, VS Code's "inputs")
		}
		if _, dup := found[m.key]; dup {
			errs = append(errs, &configError{msg: fmt.Sprintf("%q is given more than once", m.key)})
			continue
		}
		found[m.key] = m.value
	}
	cfg := &Config{}
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
			errs = append(errs, &configError{msg: fmt.Sprintf("%q is %s, want an object of servers keyed by name", key, kind)})
			continue
		}
		ms := objectMembers(raw)
		if len(ms) == 0 {
			continue
		}
		if from != "" {
			errs = append(errs, &configError{msg: `both "mcpServers" and "servers" list servers; use one`})
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
			errs = append(errs, &configError{server: m.key, msg: fmt.Sprintf("defined more than once in %q", from)})
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
		for _, e := range sc.validate(lookup) {
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
		return nil, joinErrors(errs)
	}
	return cfg, nil
}

// decodeServer decodes one server entry. It reports JSON type errors, keys
// given twice and fields that contradict each other; everything else is
// left to validate. Warnings name unknown and unsupported fields.
func decodeServer(name string, raw json.RawMessage) (ServerConfig, []string, []*configError) {
	sc := ServerConfig{Name: name, Enabled: true}
	if kind := jsonKind(raw); kind != "an object" {
		return sc, nil, []*configError{sc.errorf("", "entry is %s, want an object", kind)}
	}
	var (
		warnings          []string
		errs              []*configError
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
		var err *configError
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
	if t, ok := sc.transport(); ok {
		sc.Type = string(t)
	}
	return sc, warnings, errs
}

// normalizeType maps the spellings agent tools use to a Transport name;
// an unknown type is returned unchanged for validate to report.
func normalizeType(t string) string {
	switch strings.ToLower(t) {
	case "stdio":
		return string(actors.TransportStdio)
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return string(actors.TransportHTTP)
	case "sse":
		return string(actors.TransportSSE)
	}
	return t
}

// transport resolves c.Type, inferring it when empty: an entry with a url
// and no command is remote (Cursor and Gemini CLI write no type), sse when
// the url's path ends in "/sse" (the endpoint SSE servers conventionally
// serve, and what Gemini CLI's "url" means), http otherwise; any other entry
// is stdio. ok is false for an unknown type.
func (c ServerConfig) transport() (actors.Transport, bool) {
	if c.Type == "" {
		if c.URL == "" || c.Command != "" {
			return actors.TransportStdio, true
		}
		path := c.URL
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		if strings.HasSuffix(strings.TrimSuffix(path, "/"), "/sse") {
			return actors.TransportSSE, true
		}
		return actors.TransportHTTP, true
	}
	switch t := actors.Transport(normalizeType(c.Type)); t {
	case actors.TransportStdio, actors.TransportHTTP, actors.TransportSSE:
		return t, true
	}
	return "", false
}

// withArticle gives "a stdio", "an http", "an sse", as the names are read.
func withArticle(t actors.Transport) string {
	if t == actors.TransportStdio {
		return "a " + string(t)
	}
	return "an " + string(t)
}

// validate returns every problem with c. References are expanded with
// lookup (nil: nothing set) before the url is checked; a part of the url
// that is still an unset variable is checked for shape only.
func (c ServerConfig) validate(lookup func(string) (string, bool)) []*configError {
	var errs []*configError
	add := func(field, format string, args ...any) {
		errs = append(errs, c.errorf(field, format, args...))
	}
	if err := actors.ValidateServerName(c.Name); err != nil {
		errs = append(errs, &configError{server: c.Name, msg: err.Error(), cause: err})
	}
	if c.Name == ConfigGroup {
		add("", "the name %q is reserved for the host's own tool group", ConfigGroup)
	}

	transport, known := c.transport()
	hasCommand := strings.TrimSpace(c.Command) != ""
	hasURL := strings.TrimSpace(c.URL) != ""
	switch {
	case !known:
		add("type", `unknown type %q (want "stdio", "http" or "sse")`, c.Type)
	case hasCommand && hasURL:
		add("command", `cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`)
	case transport == actors.TransportStdio && !hasCommand:
		if hasURL {
			add("command", `required for a stdio server (the entry has a "url": set "type" to "http" or "sse")`)
		} else {
			add("command", "required for a stdio server")
		}
	case transport != actors.TransportStdio && !hasURL:
		add("url", "required for %s server", withArticle(transport))
	}

	for _, f := range c.expandable() {
		if strings.ContainsRune(f.value, 0) {
			add(f.field, "contains a NUL byte")
		} else if _, _, err := expandVars(f.value, nil, ""); err != nil {
			add(f.field, "%v", err)
		}
	}
	if hasURL && !strings.ContainsRune(c.URL, 0) {
		if u, _, err := expandVars(c.URL, lookup, unsetMarker); err == nil {
			if err := checkServerURL(u); err != nil {
				add("url", "%v", err)
			}
		}
	}

	for _, k := range sortedMapKeys(c.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("env", "invalid variable name %q", k)
		}
	}
	for _, k := range sortedMapKeys(c.Headers) {
		if !isHeaderName(k) {
			add("headers", "invalid header name %q", k)
		} else if strings.ContainsAny(c.Headers[k], "\r\n") {
			add("headers."+k, "contains a line break")
		}
	}

	if c.Timeout < 0 {
		add("timeout", "must not be negative, got %q", c.Timeout)
	}
	if c.StartupTimeout < 0 {
		add("startupTimeout", "must not be negative, got %q", c.StartupTimeout)
	}
	if c.MaxTotalTimeout < 0 {
		add("maxTotalTimeout", "must not be negative, got %q", c.MaxTotalTimeout)
	}
	switch c.LogLevel {
	case "", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
	default:
		add("logLevel", "must be one of debug, info, notice, warning, error, critical, alert, emergency; got %q", c.LogLevel)
	}
	if c.MaxTools < 0 {
		add("maxTools", "must be 0 (no cap) or more, got %d", c.MaxTools)
	}
	if c.MaxDescription < -1 {
		add("maxDescription", "must be -1 (no cap), 0 (the default) or a number of bytes, got %d", c.MaxDescription)
	}
	for i, t := range c.IncludeTools {
		if t == "" {
			add(fmt.Sprintf("includeTools[%d]", i), "empty tool name")
		}
	}
	included := map[string]bool{}
	for _, t := range c.IncludeTools {
		included[t] = true
	}
	for i, t := range c.ExcludeTools {
		switch {
		case t == "":
			add(fmt.Sprintf("excludeTools[%d]", i), "empty tool name")
		case included[t]:
			add("excludeTools", "%q is also in \"includeTools\"", t)
			delete(included, t) // report a tool once
		}
	}
	return errs
}

type fieldValue struct{ field, value string }

// expandable lists the fields in which ${...} references are expanded, in
// a fixed order, labelled as errors name them.
func (c ServerConfig) expandable() []fieldValue {
	fs := []fieldValue{{"command", c.Command}}
	for i, a := range c.Args {
		fs = append(fs, fieldValue{fmt.Sprintf("args[%d]", i), a})
	}
	for _, k := range sortedMapKeys(c.Env) {
		fs = append(fs, fieldValue{"env." + k, c.Env[k]})
	}
	fs = append(fs, fieldValue{"cwd", c.Cwd}, fieldValue{"url", c.URL})
	for _, k := range sortedMapKeys(c.Headers) {
		fs = append(fs, fieldValue{"headers." + k, c.Headers[k]})
	}
	return append(fs, fieldValue{"apiKey", c.APIKey})
}

// hasHeader reports whether h names header key, in any letter case.
func hasHeader(h map[string]string, key string) bool {
	for k := range h {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

type unsetVariable struct{ field, name string }

// unsetVariables lists the references that lookup cannot resolve and that
// have no default, in field order, in the fields Spec expands.
func (c ServerConfig) unsetVariables(lookup func(string) (string, bool)) []unsetVariable {
	t, _ := c.transport()
	var out []unsetVariable
	for _, f := range c.expandable() {
		remoteField := f.field == "url" || strings.HasPrefix(f.field, "headers.")
		if remoteField != (t != actors.TransportStdio) {
			continue
		}
		_, unset, err := expandVars(f.value, lookup, "")
		if err != nil {
			continue // a syntax error, reported by validate
		}
		for _, name := range unset {
			out = append(out, unsetVariable{f.field, name})
		}
	}
	return out
}

// bareVariableWarnings points at "$NAME" in fields where no shell will
// expand it (Gemini CLI's examples write "$VAR" in env values). Command and
// args are left out: they may well be shell text meant for a "sh -c".
func (c ServerConfig) bareVariableWarnings() []string {
	var ws []string
	for _, f := range c.expandable() {
		if f.field == "command" || strings.HasPrefix(f.field, "args[") {
			continue
		}
		for i := 0; i+1 < len(f.value); i++ {
			if f.value[i] != '$' || !(f.value[i+1] == '_' || f.value[i+1] >= 'a' && f.value[i+1] <= 'z' || f.value[i+1] >= 'A' && f.value[i+1] <= 'Z') {
				continue
			}
			end := i + 1
			for end < len(f.value) && isVarNameByte(f.value[end]) {
				end++
			}
			name := f.value[i+1 : end]
			ws = append(ws, fmt.Sprintf("server %q: field %q: $%s is not expanded, only ${%s} is", c.Name, f.field, name, name))
			break
		}
	}
	return ws
}

func isVarNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// unusedFieldWarnings names fields that the server's transport does not use.
func (c ServerConfig) unusedFieldWarnings() []string {
	t, ok := c.transport()
	if !ok {
		return nil
	}
	var unused []string
	if t == actors.TransportStdio {
		if len(c.Headers) > 0 {
			unused = append(unused, "headers")
		}
		if c.APIKey != "" {
			unused = append(unused, "apiKey")
		}
		if c.AllowPrivate {
			unused = append(unused, "allowPrivate")
		}
	} else {
		if len(c.Args) > 0 {
			unused = append(unused, "args")
		}
		if len(c.Env) > 0 {
			unused = append(unused, "env")
		}
		if c.Cwd != "" {
			unused = append(unused, "cwd")
		}
		if c.InheritEnv {
			unused = append(unused, "inheritEnv")
		}
	}
	var ws []string
	for _, f := range unused {
		ws = append(ws, fmt.Sprintf("server %q: field %q is not used by %s server, ignored", c.Name, f, withArticle(t)))
	}
	return ws
}

// unsetMarker stands in for an unset variable while a url's shape is
// checked. It cannot occur in a url that passed the NUL check.
const unsetMarker = "\x00"

// checkServerURL reports whether u is an absolute http(s) url with a host. Parts
// of u that are unsetMarker are unknown and pass.
func checkServerURL(u string) error {
	if !strings.Contains(u, unsetMarker) {
		p, err := url.Parse(u)
		if err != nil {
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err // the url itself may hold a secret; leave it out
			}
			return fmt.Errorf("invalid url: %v", err)
		}
		if p.Scheme == "" {
			return errors.New(`want an absolute http or https url, like "https://host/mcp"`)
		}
		if s := strings.ToLower(p.Scheme); s != "http" && s != "https" {
			return fmt.Errorf("want an http or https url, got scheme %q", p.Scheme)
		}
		if p.Host == "" {
			return errors.New("url has no host")
		}
		return nil
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return nil // e.g. "${MCP_URL}": nothing to check until it is set
	}
	if !strings.Contains(scheme, unsetMarker) {
		if s := strings.ToLower(scheme); s != "http" && s != "https" {
			return fmt.Errorf("want an http or https url, got scheme %q", scheme)
		}
	}
	host := rest
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if host == "" {
		return errors.New("url has no host")
	}
	return nil
}

// isHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// expandVars expands ${NAME} and ${NAME:-default} in s, shell style: the
// default is used when NAME is unset or empty, and may itself hold
// references. ${env:NAME} (Cursor's and VS Code's spelling) is ${NAME}. A
// '$' not followed by '{' is literal, so "$$" and "$HOME" stay as written.
// An unset NAME without a default expands to unsetAs and is listed in
// unset, each name once. err reports a malformed reference.
func expandVars(s string, lookup func(string) (string, bool), unsetAs string) (out string, unset []string, err error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	x := &expander{lookup: lookup, unsetAs: unsetAs}
	out, _, err = x.text(s, 0, false)
	if err != nil {
		return "", nil, err
	}
	for _, name := range x.unset {
		if !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
	}
	return out, unset, nil
}

type expander struct {
	lookup  func(string) (string, bool)
	unsetAs string
	unset   []string
}

// text expands s from i up to its end or, inside a default, up to the '}'
// that closes it; it returns the expansion and the index where it stopped.
func (x *expander) text(s string, i int, inDefault bool) (string, int, error) {
	var b strings.Builder
	for i < len(s) {
		if inDefault && s[i] == '}' {
			break
		}
		if s[i] != '$' || i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte(s[i])
			i++
			continue
		}
		v, next, err := x.reference(s, i)
		if err != nil {
			return "", 0, err
		}
		b.WriteString(v)
		i = next
	}
	return b.String(), i, nil
}

// reference expands the reference starting at s[start:] ("${") and returns
// the index just past its closing '}'.
func (x *expander) reference(s string, start int) (string, int, error) {
	i := start + 2
	if strings.HasPrefix(s[i:], "env:") {
		i += len("env:")
	}
	nameStart := i
	for i < len(s) && isVarNameByte(s[i]) {
		i++
	}
	name := s[nameStart:i]
	unterminated := fmt.Errorf("unterminated variable reference %q", s[start:i])
	if i >= len(s) {
		return "", 0, unterminated
	}
	valid := name != "" && (name[0] < '0' || name[0] > '9')
	switch {
	case valid && s[i] == '}':
		if v, ok := x.lookup(name); ok {
			return v, i + 1, nil
		}
		x.unset = append(x.unset, name)
		return x.unsetAs, i + 1, nil
	case valid && strings.HasPrefix(s[i:], ":-"):
		mark := len(x.unset)
		def, end, err := x.text(s, i+2, true)
		if err != nil {
			return "", 0, err
		}
		if end >= len(s) {
			return "", 0, unterminated
		}
		if v, ok := x.lookup(name); ok && v != "" {
			x.unset = x.unset[:mark] // the default is not used
			return v, end + 1, nil
		}
		return def, end + 1, nil
	}
	end := strings.IndexByte(s[start:], '}')
	if end < 0 {
		return "", 0, unterminated
	}
	ref := s[start : start+end+1]
	if len(ref) > 64 {
		ref = ref[:61] + "..."
	}
	if strings.HasPrefix(ref, "${input:") {
		return "", 0, fmt.Errorf("%q is a VS Code input prompt, which mcpvisor cannot show: use ${NAME} and set NAME in the environment", ref)
	}
	return "", 0, fmt.Errorf("invalid variable reference %q (want ${NAME} or ${NAME:-default})", ref)
}

// JSON helpers. The document has passed json.Unmarshal before any of them
// runs, so they only meet well-formed values.

type jsonMember struct {
	key   string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in document order,
// repeated keys included.
func objectMembers(raw json.RawMessage) []jsonMember {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil
	}
	var ms []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ms
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ms
		}
		ms = append(ms, jsonMember{key, v})
	}
	return ms
}

// jsonKind names the kind of a JSON value for messages: "a string", ...
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func decodeStringField(sc *ServerConfig, m jsonMember, dst *string) *configError {
	if kind := jsonKind(m.value); kind != "a string" {
		return sc.errorf(m.key, "want a string, got %s", kind)
	}
	if err := json.Unmarshal(m.value, dst); err != nil {
		return sc.errorf(m.key, "%v", err)
	}
	return nil
}

func decodeStringsField(sc *ServerConfig, m jsonMember) ([]string, *configError) {
	if kind := jsonKind(m.value); kind != "an array" {
		return nil, sc.errorf(m.key, "want an array of strings, got %s", kind)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(m.value, &elems); err != nil {
		return nil, sc.errorf(m.key, "%v", err)
	}
	var out []string
	for i, e := range elems {
		var s string
		if err := decodeStringField(sc, jsonMember{fmt.Sprintf("%s[%d]", m.key, i), e}, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeMapField(sc *ServerConfig, m jsonMember) (map[string]string, *configError) {
	if kind := jsonKind(m.value); kind != "an object" {
		return nil, sc.errorf(m.key, "want an object of strings, got %s", kind)
	}
	ms := objectMembers(m.value)
	if len(ms) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(ms))
	for _, e := range ms {
		if _, dup := out[e.key]; dup {
			return nil, sc.errorf(m.key, "key %q is given more than once", e.key)
		}
		var s string
		if err := decodeStringField(sc, jsonMember{m.key + "." + e.key, e.value}, &s); err != nil {
			return nil, err
		}
		out[e.key] = s
	}
	return out, nil
}

func decodeBoolField(sc *ServerConfig, m jsonMember, dst *bool) *configError {
	if kind := jsonKind(m.value); kind != "a boolean" {
		return sc.errorf(m.key, "want true or false, got %s", kind)
	}
	*dst = bytes.HasPrefix(bytes.TrimSpace(m.value), []byte("true"))
	return nil
}

func decodeIntField(sc *ServerConfig, m jsonMember, dst *int) *configError {
	if kind := jsonKind(m.value); kind != "a number" {
		return sc.errorf(m.key, "want an integer, got %s", kind)
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(m.value)))
	if err != nil {
		return sc.errorf(m.key, "want an integer, got %s", bytes.TrimSpace(m.value))
	}
	*dst = n
	return nil
}

func decodeDurationField(sc *ServerConfig, m jsonMember, dst *Duration) *configError {
	d, err := parseDuration(m.value)
	if err != nil {
		return sc.errorf(m.key, "%v", err)
	}
	*dst = d
	return nil
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// position converts a json.SyntaxError offset (bytes read, so the bad byte
// is at offset-1) to a 1-based line and byte column.
func syntaxPosition(data []byte, offset int64) (line, col int) {
	i := int(offset) - 1
	if i < 0 {
		i = 0
	}
	if i > len(data) {
		i = len(data)
	}
	before := data[:i]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = i - bytes.LastIndexByte(before, '\n')
	return line, col
}

// stripJSONC turns JSON with comments (VS Code's mcp.json is JSONC) into
// JSON of the same length: comments, trailing commas and a UTF-8 byte order
// mark become spaces, newlines stay, so syntax error positions still point
// into the file as written. An unterminated block comment is left alone for
// the JSON parser to report.
func stripJSONC(data []byte) []byte {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\xef\xbb\xbf")) {
		copy(out, "   ")
	}
	blank := func(from, to int) {
		for j := from; j < to; j++ {
			if out[j] != '\n' {
				out[j] = ' '
			}
		}
	}
	comma := -1         // a comma after a value that only whitespace and comments follow so far
	var last byte = '{' // the last byte of JSON syntax seen
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			comma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			last = '"'
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		case c == ',':
			comma = -1
			if last != '{' && last != '[' && last != ',' {
				comma = i
			}
			last = c
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
			last = c
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			comma = -1
			last = c
		}
	}
	return out
}
