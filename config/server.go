package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Server is one server entry as written in the file. References to
// variables, ${NAME}, ${NAME:-default}, ${env:NAME} and ${input:ID}, are
// kept as written in command, args, env values, cwd, url, header values,
// apiKey, headersHelper and the oauth object's strings; the host expands
// them when it starts the server, so the environment (and the inputs'
// answers) at that time is what counts.
//
// What a tool fixes when its file loads is resolved when the file loads,
// and other tools' spellings are rewritten to ${NAME}:
//
//   - VS Code's and Cursor's predefined variables: ${workspaceFolder} (the
//     project the file belongs to: the directory holding it, or the one
//     above when that is .vscode, .cursor, .gemini, .roo, .continue,
//     .codex or .zed), ${workspaceFolderBasename}, ${userHome},
//     ${pathSeparator} and ${/};
//   - "envFile" (VS Code, Cursor): the file is read, relative to the
//     workspace folder, and its variables join Env, the entry's own "env"
//     winning; a value holding ${NAME} is expanded as any Env value;
//   - Gemini CLI's $NAME is ${NAME};
//   - Continue's ${{ secrets.NAME }} and ${{ inputs.NAME }} are ${NAME}:
//     the value is the environment variable NAME;
//   - Codex's "bearer_token_env_var" VAR is the header
//     "Authorization: Bearer ${VAR}", "env_http_headers" {H: VAR} the
//     header H: ${VAR}, and "env_vars" NAME the Env entry ${NAME:-} (an
//     unset variable is passed empty).
//
// ParseConfig and UnmarshalJSON leave Type resolved to "stdio", "http" or
// "sse": the aliases "streamable-http" and "streamableHttp" become "http",
// Gemini CLI's "httpUrl" becomes Type "http" with that URL, Windsurf's
// "serverUrl" is the URL, and an entry without a type that has a url and
// no command is remote (Cursor and Gemini CLI write no type): "sse" in
// Gemini CLI's, Cline's and Roo Code's files, which document a bare url as
// SSE; elsewhere "sse" when the url's path ends in "/sse", "http"
// otherwise. Any other entry without a type is "stdio". Empty lists and
// maps are nil.
type Server struct {
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
	// OAuth configures how the host obtains tokens for the server; without
	// it the host still signs in by discovery when the server asks.
	OAuth *OAuth `json:"oauth,omitempty"`
	// HeadersHelper is a shell command, run with /bin/sh -c, whose standard
	// output is a JSON object of headers to send (Claude Code's field): at
	// connect, and again when the server answers 401.
	HeadersHelper string `json:"headersHelper,omitempty"`

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
	// ToolPolicy pins the server's tool definitions: off, warn or hold
	// (mcpvisor.ToolPolicyOff…); "": the host's mcpvisor.Options.ToolPolicy.
	ToolPolicy string `json:"toolPolicy,omitempty"`
	// Node, in cluster mode, places the server only on the members
	// labelled so (cluster.Options.Labels): a browser or a database where
	// the machine for it is. "": any member.
	Node string `json:"node,omitempty"`

	AllowPrivate bool `json:"allowPrivate,omitempty"` // http, sse: may reach loopback and private addresses
	InheritEnv   bool `json:"inheritEnv,omitempty"`   // stdio: pass the whole parent environment, not the allow-list

	// Prefix false exposes the server's tools and prompts under their own
	// names instead of mcp__<server>__<name>; nil or true: namespaced.
	// The namespaced name still calls such a tool, and stays its name in
	// the journal, the history and the call pipeline (Call.Tool). Two
	// such servers may not expose the same name, nor may one expose a
	// host tool's name or one that reads as mcp__<x>__<y>: with the
	// tools known (the last catalog), Register, Open and SetEnabled
	// refuse it with mcpvisor.ErrNameCollision; a collision found when a server
	// lists its tools hides the later-registered server's tool, with a
	// warning in its status (see mcpvisor.Host.ResolveTool).
	Prefix *bool `json:"prefix,omitempty"`
	// ProtocolVersion pins the protocol revision spoken to the server.
	// "": the era is detected (server/discover, else initialize). One of
	// the initialize handshake's revisions (2025-11-25 … 2024-11-05):
	// no probe, initialize at that revision, and a server that answers
	// another one fails. A modern revision (2026-07-28): server/discover
	// only, with no fallback to initialize; a server that does not
	// answer it with that revision fails to start. Anything else is a
	// config error.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Activate puts the server's tools in every session from the start,
	// as mcpvisor.Options.AlwaysOn does (mcpvisor serve|stdio --activate): a
	// client need not call activate_tools first. One-shot clients (a new
	// session per call) need it.
	Activate bool `json:"activate,omitempty"`
	// Limits bound a stdio server's resources: memory, cpu, processes
	// (see Limits). nil: none.
	Limits *Limits `json:"limits,omitempty"`
}

// Options are what checking an entry needs beyond the entry itself.
type Options struct {
	// Path is the file's path: it tells the file's dialect (see toolDialect)
	// and its workspace folder, for ${workspaceFolder} and a relative
	// "envFile". "" for contents that are not a file's (the dialect is
	// then told from the content, and the workspace folder is the working
	// directory).
	Path string
	// Lookup resolves ${NAME} references when they are checked (and
	// ${input:ID} as "input:ID"); nil: the process environment
	// (os.LookupEnv).
	Lookup func(string) (string, bool)
}

// normalizeType maps the spellings agent tools use to a Transport name;
// an unknown type is returned unchanged for Validate to report.
func normalizeType(t string) string {
	switch strings.ToLower(t) {
	case "stdio":
		return string(protocol.TransportStdio)
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return string(protocol.TransportHTTP)
	case "sse":
		return string(protocol.TransportSSE)
	}
	return t
}

// Transport resolves c.Type, inferring it when empty: an entry with a url
// and no command is remote (Cursor and Gemini CLI write no type), sse when
// the url's path ends in "/sse" (the endpoint SSE servers conventionally
// serve, and what Gemini CLI's "url" means), http otherwise; any other entry
// is stdio. ok is false for an unknown type.
func (c Server) Transport() (protocol.Transport, bool) {
	if c.Type == "" {
		if c.URL == "" || c.Command != "" {
			return protocol.TransportStdio, true
		}
		path := c.URL
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		if strings.HasSuffix(strings.TrimSuffix(path, "/"), "/sse") {
			return protocol.TransportSSE, true
		}
		return protocol.TransportHTTP, true
	}
	switch t := protocol.Transport(normalizeType(c.Type)); t {
	case protocol.TransportStdio, protocol.TransportHTTP, protocol.TransportSSE:
		return t, true
	}
	return "", false
}

// withArticle gives "a stdio", "an http", "an sse", as the names are read.
func withArticle(t protocol.Transport) string {
	if t == protocol.TransportStdio {
		return "a " + string(t)
	}
	return "an " + string(t)
}

// Validate returns every problem with c, whether or not it is enabled: the
// name, the type, command or url as the type needs, the url's shape, a
// remote server's oauth object, the tool filters and limits, and the syntax
// of ${...} references. References are expanded with opts.Lookup before the
// url is checked; a part of the url that is still an unset variable is
// checked for shape only. The oauth object's urls and names are checked
// once their references resolve.
func (c Server) validate(opts Options) []*Error {
	lookup := opts.Lookup
	var errs []*Error
	add := func(field, format string, args ...any) {
		errs = append(errs, c.errorf(field, format, args...))
	}
	if err := ValidateServerName(c.Name); err != nil {
		errs = append(errs, &Error{server: c.Name, msg: err.Error(), cause: err})
	}
	if c.Name == ReservedName {
		add("", "the name %q is reserved for the host's own tool group", ReservedName)
	}

	transport, known := c.Transport()
	hasCommand := strings.TrimSpace(c.Command) != ""
	hasURL := strings.TrimSpace(c.URL) != ""
	switch {
	case !known:
		add("type", `unknown type %q (want "stdio", "http" or "sse")`, c.Type)
	case hasCommand && hasURL:
		add("command", `cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`)
	case transport == protocol.TransportStdio && !hasCommand:
		if hasURL {
			add("command", `required for a stdio server (the entry has a "url": set "type" to "http" or "sse")`)
		} else {
			add("command", "required for a stdio server")
		}
	case transport != protocol.TransportStdio && !hasURL:
		add("url", "required for %s server", withArticle(transport))
	}

	for _, f := range c.expandable() {
		if strings.ContainsRune(f.value, 0) {
			add(f.field, "contains a NUL byte")
		} else if _, _, err := expandRefs(f.value, nil, ""); err != nil {
			add(f.field, "%v", err)
		}
	}
	if hasURL && !strings.ContainsRune(c.URL, 0) {
		if u, _, err := expandRefs(c.URL, lookup, unsetMarker); err == nil {
			if err := checkServerURL(u); err != nil {
				add("url", "%v", err)
			}
		}
	}

	if c.OAuth != nil && known && transport != protocol.TransportStdio {
		errs = append(errs, c.validateOAuth(lookup)...)
	}
	if c.HeadersHelper != "" && strings.TrimSpace(c.HeadersHelper) == "" {
		add("headersHelper", "empty command")
	}

	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("env", "invalid variable name %q", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
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
	for _, f := range []struct {
		field string
		d     time.Duration
	}{{"timeout", time.Duration(c.Timeout)}, {"startupTimeout", time.Duration(c.StartupTimeout)}, {"maxTotalTimeout", time.Duration(c.MaxTotalTimeout)}} {
		if f.d > 0 && f.d < MinTimeout {
			add(f.field, "%s", tooShort(f.d))
		}
	}
	switch c.LogLevel {
	case "", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
	default:
		add("logLevel", "must be one of debug, info, notice, warning, error, critical, alert, emergency; got %q", c.LogLevel)
	}
	if c.ProtocolVersion != "" {
		switch {
		case !slices.Contains(protocol.SupportedVersions, c.ProtocolVersion) && !slices.Contains(protocol.ModernVersions, c.ProtocolVersion):
			add("protocolVersion", "unknown protocol version %q (want one of %s, or leave it out to detect the era)",
				c.ProtocolVersion, strings.Join(ProtocolVersions(), ", "))
		case known && transport == protocol.TransportSSE && slices.Contains(protocol.ModernVersions, c.ProtocolVersion):
			add("protocolVersion", "%s is not spoken over the legacy sse transport (want one of %s)",
				c.ProtocolVersion, strings.Join(protocol.SupportedVersions, ", "))
		}
	}
	if c.MaxTools < 0 {
		add("maxTools", "must be 0 (no cap) or more, got %d", c.MaxTools)
	}
	if _, err := toolpin.ParsePolicy(c.ToolPolicy); err != nil {
		add("toolPolicy", "must be off, warn or hold, got %q", c.ToolPolicy)
	}
	if c.MaxDescription < -1 {
		add("maxDescription", "must be -1 (no cap), 0 (the default) or a number of bytes, got %d", c.MaxDescription)
	}
	// The filters take the server's own tool names: a namespaced one
	// (mcp__<server>__<tool>) would match nothing.
	prefix := "mcp__" + c.Name + "__"
	namespaced := func(field string, i int, t string) {
		if own, ok := strings.CutPrefix(t, prefix); ok && own != "" {
			add(fmt.Sprintf("%s[%d]", field, i), "%q is the namespaced name: %s takes the server's own tool names, here %q", t, field, own)
		}
	}
	for i, t := range c.IncludeTools {
		if t == "" {
			add(fmt.Sprintf("includeTools[%d]", i), "empty tool name")
		}
		namespaced("includeTools", i, t)
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
		namespaced("excludeTools", i, t)
	}
	errs = append(errs, c.validateLimits()...)
	return errs
}

// ProtocolVersions lists the values "protocolVersion" accepts, newest
// first: the modern revisions, then those of the initialize handshake.
func ProtocolVersions() []string {
	return append(slices.Clone(protocol.ModernVersions), protocol.SupportedVersions...)
}

type fieldValue struct{ field, value string }

// expandable lists the fields in which ${...} references are expanded, in
// a fixed order, labelled as errors name them.
func (c Server) expandable() []fieldValue {
	fs := []fieldValue{{"command", c.Command}}
	for i, a := range c.Args {
		fs = append(fs, fieldValue{fmt.Sprintf("args[%d]", i), a})
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		fs = append(fs, fieldValue{"env." + k, c.Env[k]})
	}
	fs = append(fs, fieldValue{"cwd", c.Cwd}, fieldValue{"url", c.URL})
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		fs = append(fs, fieldValue{"headers." + k, c.Headers[k]})
	}
	fs = append(fs, fieldValue{"apiKey", c.APIKey})
	if c.OAuth != nil {
		fs = append(fs, c.OAuth.strings()...)
	}
	return append(fs, fieldValue{"headersHelper", c.HeadersHelper})
}

// remoteField reports whether field, as expandable labels it, is used only
// by http and sse servers.
func remoteField(field string) bool {
	switch {
	case field == "url", field == "apiKey", field == "headersHelper",
		strings.HasPrefix(field, "headers."), strings.HasPrefix(field, "oauth."):
		return true
	}
	return false
}

type unsetVariable struct{ field, name string }

// unsetVariables lists the references that lookup cannot resolve and that
// have no default, in field order, in the fields the host expands when it
// starts the server. ${input:ID} is left out: the host asks for it then.
func (c Server) unsetVariables(lookup func(string) (string, bool)) []unsetVariable {
	t, _ := c.Transport()
	var out []unsetVariable
	for _, f := range c.expandable() {
		if remoteField(f.field) != (t != protocol.TransportStdio) {
			continue
		}
		_, unset, err := expandRefs(f.value, lookup, "")
		if err != nil {
			continue // a syntax error, reported by Validate
		}
		for _, name := range unset {
			if !strings.HasPrefix(name, "input:") {
				out = append(out, unsetVariable{f.field, name})
			}
		}
	}
	return out
}

// bareVariableWarnings points at "$NAME" in fields where no shell will
// expand it (Gemini CLI's examples write "$VAR" in env values). Command,
// args and headersHelper are left out: they may well be shell text, and
// headersHelper is run by a shell.
func (c Server) bareVariableWarnings() []string {
	var ws []string
	for _, f := range c.expandable() {
		if f.field == "command" || f.field == "headersHelper" || strings.HasPrefix(f.field, "args[") {
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
func (c Server) unusedFieldWarnings() []string {
	t, ok := c.Transport()
	if !ok {
		return nil
	}
	var unused []string
	if t == protocol.TransportStdio {
		if len(c.Headers) > 0 {
			unused = append(unused, "headers")
		}
		if c.APIKey != "" {
			unused = append(unused, "apiKey")
		}
		if c.OAuth != nil {
			unused = append(unused, "oauth")
		}
		if c.HeadersHelper != "" {
			unused = append(unused, "headersHelper")
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
		if c.Limits != nil {
			unused = append(unused, "limits")
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

// Prefixed reports whether the server's tools and prompts are exposed
// namespaced, mcp__<server>__<name> (Prefix nil or true).
func (c Server) Prefixed() bool { return c.Prefix == nil || *c.Prefix }

// UnmarshalJSON decodes one server entry in the file format. Unknown fields
// are ignored; type errors are reported with the field's name. It does not
// validate (see Validate) and keeps c.Name, which the file gives as a key.
func (c *Server) UnmarshalJSON(data []byte) error {
	e, err := decodeEntry(data)
	if err != nil {
		return err
	}
	e.Name = c.Name
	*c = e
	return nil
}

// MarshalJSON encodes c in the file format, with Type resolved, so that
// UnmarshalJSON gives back the same Server (Name aside).
func (c Server) MarshalJSON() ([]byte, error) {
	type plain Server // drops the methods, keeps the tags
	p := plain(c)
	if t, ok := c.Transport(); ok {
		p.Type = string(t)
	}
	return json.Marshal(p)
}

// Validate reports whether c is well formed, whether or not it is enabled:
// the name, the type, command or url as the type needs, the url's shape, the
// tool filters and limits, the timeouts (none shorter than MinTimeout), and
// the syntax of ${...} references. It does not consult the environment: a
// reference counts as unset, so its default (if any) is what the url is
// checked with. All problems are joined, each an *Error wrapping ErrInvalid.
func (c Server) Validate() error {
	return joinErrors(c.validate(Options{}))
}
