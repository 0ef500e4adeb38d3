package configfile

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Server is one server entry as the file gives it, after the decoding that
// Parse and Decode do: aliases resolved, Type one of "stdio", "http" and
// "sse" when it is known (an unknown one is kept for Validate to report),
// empty lists and maps nil. References to variables are kept as written.
// The fields mean what their namesakes in the root package's ServerConfig
// mean.
type Server struct {
	Name string
	Type string

	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	URL           string
	Headers       map[string]string
	APIKey        string
	OAuth         *OAuth
	HeadersHelper string

	Enabled      bool
	Description  string
	FriendlyName string

	Timeout                time.Duration
	StartupTimeout         time.Duration
	ResetTimeoutOnProgress bool
	MaxTotalTimeout        time.Duration
	LogLevel               string
	ValidateArguments      bool

	IncludeTools   []string
	ExcludeTools   []string
	MaxTools       int
	MaxDescription int
	ToolPolicy     string // off, warn or hold (any case); "": the host's

	AllowPrivate bool
	InheritEnv   bool

	// Prefix is "prefix" as written: nil when absent. False exposes the
	// server's tools and prompts under their own names.
	Prefix *bool
	// ProtocolVersion pins the protocol revision ("" detects the era).
	ProtocolVersion string
	// Node is the cluster member label the server is placed by ("": any).
	Node string
	// Activate puts the server's tools in every session from the start.
	Activate bool
	// Limits bound a stdio server's resources (limits.go); nil: none.
	Limits *Limits
}

// Options are what checking an entry needs beyond the entry itself.
type Options struct {
	// Path is the file's path: it tells the file's dialect (see Dialect)
	// and its workspace folder, for ${workspaceFolder} and a relative
	// "envFile". "" for contents that are not a file's (the dialect is
	// then told from the content, and the workspace folder is the working
	// directory).
	Path string
	// Lookup resolves variables; nil means nothing is set.
	Lookup func(string) (string, bool)
	// Reserved is a server name the host keeps for its own tool group; ""
	// reserves none.
	Reserved string
}

// normalizeType maps the spellings agent tools use to a Transport name;
// an unknown type is returned unchanged for Validate to report.
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

// Transport resolves c.Type, inferring it when empty: an entry with a url
// and no command is remote (Cursor and Gemini CLI write no type), sse when
// the url's path ends in "/sse" (the endpoint SSE servers conventionally
// serve, and what Gemini CLI's "url" means), http otherwise; any other entry
// is stdio. ok is false for an unknown type.
func (c Server) Transport() (actors.Transport, bool) {
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

// Validate returns every problem with c, whether or not it is enabled: the
// name, the type, command or url as the type needs, the url's shape, a
// remote server's oauth object, the tool filters and limits, and the syntax
// of ${...} references. References are expanded with opts.Lookup before the
// url is checked; a part of the url that is still an unset variable is
// checked for shape only. The oauth object's urls and names are checked
// once their references resolve.
func (c Server) Validate(opts Options) []*Error {
	lookup := opts.Lookup
	var errs []*Error
	add := func(field, format string, args ...any) {
		errs = append(errs, c.errorf(field, format, args...))
	}
	if err := actors.ValidateServerName(c.Name); err != nil {
		errs = append(errs, &Error{server: c.Name, msg: err.Error(), cause: err})
	}
	if opts.Reserved != "" && c.Name == opts.Reserved {
		add("", "the name %q is reserved for the host's own tool group", opts.Reserved)
	}

	transport, known := c.Transport()
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
		} else if _, _, err := Expand(f.value, nil, ""); err != nil {
			add(f.field, "%v", err)
		}
	}
	if hasURL && !strings.ContainsRune(c.URL, 0) {
		if u, _, err := Expand(c.URL, lookup, unsetMarker); err == nil {
			if err := checkServerURL(u); err != nil {
				add("url", "%v", err)
			}
		}
	}

	if c.OAuth != nil && known && transport != actors.TransportStdio {
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
	}{{"timeout", c.Timeout}, {"startupTimeout", c.StartupTimeout}, {"maxTotalTimeout", c.MaxTotalTimeout}} {
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
		case known && transport == actors.TransportSSE && slices.Contains(protocol.ModernVersions, c.ProtocolVersion):
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
		if remoteField(f.field) != (t != actors.TransportStdio) {
			continue
		}
		_, unset, err := Expand(f.value, lookup, "")
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
	if t == actors.TransportStdio {
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
