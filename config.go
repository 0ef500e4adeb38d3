package mcpvisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/configfile"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/supervision"
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
// elsewhere; Gemini CLI's $VAR is ${VAR}; see ServerConfig). Fields other
// tools define and mcpvisor does not use are ignored with a warning each.
type Config struct {
	// Path is the file the configuration was loaded from: LoadConfig's
	// path, "" for ParseConfig and for MergeConfigs' result.
	Path string
	// Servers holds every configured server, disabled ones included, in the
	// order the file lists them.
	Servers []ServerConfig
	// Inputs are the values the file's servers ask a person for when they
	// start (VS Code's "inputs"), referenced as ${input:ID}.
	Inputs []ConfigInput
	// Warnings lists what was ignored or could not be checked, one line
	// each, e.g. `server "x": unknown field "foo" ignored`.
	Warnings []string
}

// ConfigInput is one of VS Code's "inputs": a value a server's fields
// reference as ${input:ID}, which the host asks a person for when the
// server starts (an API key, say), rather than the file holding it.
type ConfigInput struct {
	ID string `json:"id"`
	// Type is "promptString" or "pickString".
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Password asks for the value masked.
	Password bool `json:"password,omitempty"`
	// Default is proposed to the person.
	Default string `json:"default,omitempty"`
	// Options are the values to pick from (pickString).
	Options []string `json:"options,omitempty"`
}

// ServerConfig is one server entry as written in the file. References to
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
	// OAuth configures how the host obtains tokens for the server; without
	// it the host still signs in by discovery when the server asks.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
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
	// (ToolPolicyOff…); "": Options.ToolPolicy.
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
	// refuse it with ErrNameCollision; a collision found when a server
	// lists its tools hides the later-registered server's tool, with a
	// warning in its status (see Host.ResolveTool).
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
	// as Options.AlwaysOn does (mcpvisor serve|stdio --activate): a
	// client need not call activate_tools first. One-shot clients (a new
	// session per call) need it.
	Activate bool `json:"activate,omitempty"`
	// Limits bound a stdio server's resources: memory, cpu, processes
	// (see ServerLimits). nil: none.
	Limits *ServerLimits `json:"limits,omitempty"`
}

// Prefixed reports whether the server's tools and prompts are exposed
// namespaced, mcp__<server>__<name> (Prefix nil or true).
func (c ServerConfig) Prefixed() bool { return c.Prefix == nil || *c.Prefix }

// OAuthConfig is an http or sse server's "oauth" object, in Claude Code's
// field names, so that its .mcp.json loads unchanged. Every field is
// optional: the zero value discovers the authorization server, registers
// dynamically and signs a person in. String fields may hold ${...}
// references; secrets registered through the API are kept out of the
// journal (see Register).
type OAuthConfig struct {
	// ClientID is a client registered with the authorization server in
	// advance; empty: a Client ID Metadata Document (ClientMetadataURL) or
	// dynamic registration.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret is ClientID's secret; empty for a public client.
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes are requested instead of those discovery would choose,
	// space-separated. The file may also give an array of strings.
	Scopes string `json:"scopes,omitempty"`
	// CallbackPort fixes the port of the sign-in redirect URI,
	// http://localhost:PORT/callback (1 to 65535); 0: a free port per
	// sign-in.
	CallbackPort int `json:"callbackPort,omitempty"`
	// AuthServerMetadataURL is the authorization server's metadata
	// (RFC 8414), skipping discovery: an https url, or http on a loopback
	// host.
	AuthServerMetadataURL string `json:"authServerMetadataUrl,omitempty"`
	// ClientMetadataURL is this client's Client ID Metadata Document, used
	// as its client_id where the server supports that: an https url with a
	// path.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// GrantType is authorization_code (the default: a person signs in),
	// client_credentials (machine to machine; needs ClientID) or
	// urn:ietf:params:oauth:grant-type:jwt-bearer, also written jwt_bearer
	// (an assertion exchanged for a token; needs Assertion, or
	// IDPTokenEndpoint and IDToken).
	GrantType string `json:"grantType,omitempty"`
	// TokenEndpointAuthMethod overrides how the client authenticates to
	// the token endpoint: client_secret_basic, client_secret_post, none or
	// private_key_jwt (needs PrivateKey).
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod,omitempty"`
	// PrivateKey (PEM) signs private_key_jwt client assertions.
	PrivateKey string `json:"privateKey,omitempty"`
	// SigningAlg is the assertions' algorithm (ES256, ES384, RS256, PS256,
	// EdDSA, ...); empty: chosen from the key.
	SigningAlg string `json:"signingAlg,omitempty"`
	// KeyID is sent as the assertions' kid.
	KeyID string `json:"keyId,omitempty"`
	// DPoP asks for DPoP-bound tokens (RFC 9449) even where the server does
	// not require them.
	DPoP bool `json:"dpop,omitempty"`
	// ClientName is sent in dynamic registrations.
	ClientName string `json:"clientName,omitempty"`
	// IDPTokenEndpoint, IDPClientID, IDPClientSecret and IDToken configure
	// enterprise-managed authorization: IDToken, from the identity
	// provider, is exchanged at its token endpoint (an https url, or http on
	// a loopback host) for an assertion the jwt-bearer grant presents.
	IDPTokenEndpoint string `json:"idpTokenEndpoint,omitempty"`
	IDPClientID      string `json:"idpClientId,omitempty"`
	IDPClientSecret  string `json:"idpClientSecret,omitempty"`
	IDToken          string `json:"idToken,omitempty"`
	// Assertion is a JWT the workload already holds (workload identity
	// federation), presented as the jwt-bearer grant's assertion as it is.
	Assertion string `json:"assertion,omitempty"`
	// PerUser gives each platform user their own sign-in, token and
	// connection: a call names its user (CallOptions.User) and goes to that
	// user's own instance of the server; a call that names none is refused.
	PerUser bool `json:"perUser,omitempty"`
}

// LoadConfig reads and parses the configuration file at path; its name
// tells the format (see Config). Variables are looked up in the process
// environment (see ParseConfig). A file that cannot be read gives a
// one-line error wrapping the *fs.PathError, e.g.
// "config: open mcp.json: no such file or directory". A file that names
// no servers at all (none of "mcpServers", "servers", "context_servers",
// Codex's [mcp_servers]) is an error, as it is most likely the wrong file;
// one whose member is there but empty is not.
//
// LoadConfig never returns a nil *Config: when it fails, the Config holds
// Path and the warnings found before the errors (unknown fields, say), and
// no servers, so that a caller can print the warnings with the error.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return &Config{Path: path}, fmt.Errorf("config: %w", err)
	}
	return parseConfig(path, data, os.LookupEnv)
}

// LoadConfigs loads every file of paths, in order, and merges them as
// MergeConfigs does. The errors of every file are returned at once,
// joined; the Config then holds every file's warnings and no servers.
func LoadConfigs(paths ...string) (*Config, error) {
	cfgs := make([]*Config, 0, len(paths))
	var errs []error
	for _, p := range paths {
		cfg, err := LoadConfig(p)
		if err != nil {
			errs = append(errs, err)
		}
		cfgs = append(cfgs, cfg)
	}
	merged := MergeConfigs(cfgs...)
	if len(errs) > 0 {
		merged.Servers, merged.Inputs = nil, nil
		return merged, errors.Join(errs...)
	}
	return merged, nil
}

// MergeConfigs merges configurations loaded from several files into one,
// in order: a server a later file names again replaces the earlier entry,
// in the earlier one's place, and each such collision is a warning naming
// both files. Inputs merge the same way by id (a collision is a warning
// when the two differ). Each file's own warnings are kept, prefixed with
// its Path when there are several files. nil configurations are skipped.
// The result shares the entries of cfgs and its Path is "".
func MergeConfigs(cfgs ...*Config) *Config {
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
			i := slices.IndexFunc(out.Servers, func(s ServerConfig) bool { return s.Name == sc.Name })
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
			i := slices.IndexFunc(out.Inputs, func(x ConfigInput) bool { return x.ID == in.ID })
			if !reflect.DeepEqual(out.Inputs[i], in) {
				out.Warnings = append(out.Warnings, fmt.Sprintf("input %q: defined in %s and again, differently, in %s; the one in %s is used",
					in.ID, label(prev), label(c), label(c)))
			}
			out.Inputs[i] = in
		}
	}
	return out
}

// ParseConfig parses a configuration file's contents and validates every
// entry, disabled ones included. It returns all problems at once, joined
// with errors.Join, each wrapping ErrConfig and naming the server and field.
// With no file name to tell the format, the contents are JSON, and whose
// they are (VS Code's "servers", Zed's "context_servers", Gemini CLI's
// settings) is told from them; ${workspaceFolder} is the working directory.
//
// ${VAR} and ${VAR:-default} references are checked against the process
// environment: a variable that is unset and has no default is an error in an
// enabled server and a warning in a disabled one. The host expands them
// again when it starts the server, so the environment at that time is what
// counts. ${input:ID} is not checked against the environment (the host asks
// for it when the server starts), but must name one of the file's inputs.
//
// Like LoadConfig, ParseConfig never returns a nil *Config.
func ParseConfig(data []byte) (*Config, error) {
	return parseConfig("", data, os.LookupEnv)
}

// parseConfig is ParseConfig for the file at path ("" for none; it names
// the file in messages and tells its format) with the variable lookup to
// check references against.
func parseConfig(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	f, err := configfile.Parse(path, data, configfile.Options{Path: path, Lookup: lookup, Reserved: ConfigGroup})
	cfg := &Config{Path: path, Warnings: f.Warnings}
	if err != nil {
		return cfg, err
	}
	for _, e := range f.Servers {
		cfg.Servers = append(cfg.Servers, fromEntry(e))
	}
	for _, in := range f.Inputs {
		cfg.Inputs = append(cfg.Inputs, ConfigInput(in))
	}
	return cfg, nil
}

// UnmarshalJSON decodes one server entry in the file format. Unknown fields
// are ignored; type errors are reported with the field's name. It does not
// validate (see Validate) and keeps c.Name, which the file gives as a key.
func (c *ServerConfig) UnmarshalJSON(data []byte) error {
	e, err := configfile.Decode(data)
	if err != nil {
		return err
	}
	e.Name = c.Name
	*c = fromEntry(e)
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
// tool filters and limits, the timeouts (none shorter than MinTimeout), and
// the syntax of ${...} references. It does not consult the environment: a
// reference counts as unset, so its default (if any) is what the url is
// checked with. All problems are joined.
func (c ServerConfig) Validate() error {
	return configfile.Join(c.entry().Validate(configfile.Options{Reserved: ConfigGroup}))
}

// MinTimeout is the shortest "timeout", "startupTimeout" and
// "maxTotalTimeout" a server may have (0 leaves the default). Anything
// shorter, such as "1ns", or 0.5 in a file whose numbers are milliseconds,
// would fail every call or start at once: it is a unit gone wrong, and a
// config error naming the server and the field (as the file spells it).
const MinTimeout = configfile.MinTimeout

// spec resolves c for the runtime. It expands ${VAR}, ${VAR:-default} and
// ${input:ID} (looked up as "input:ID") in command, args, env values,
// cwd, url, header values, apiKey, headersHelper and the oauth object's
// strings using lookup
// (os.LookupEnv in production; nil means nothing is set). For a stdio server
// it builds the child's environment: supervision.BaseEnv(environ), or all of
// environ when InheritEnv is set, merged with the expanded Env map. An unset
// variable without a default is an error naming the server, the field and the
// variable. spec validates c first; the returned spec is independent of c.
func (c ServerConfig) spec(lookup func(string) (string, bool), environ []string) (actors.ServerSpec, error) {
	e := c.entry()
	if errs := e.Validate(configfile.Options{Lookup: lookup, Reserved: ConfigGroup}); len(errs) > 0 {
		return actors.ServerSpec{}, configfile.Join(errs)
	}
	transport, _ := e.Transport()
	var errs []*configfile.Error
	expand := func(field, s string) string {
		out, unset, err := configfile.Expand(s, lookup, "")
		if err != nil { // validate has checked the syntax already
			errs = append(errs, configfile.Errorf(c.Name, field, "%v", err))
		}
		for _, name := range unset {
			if id, ok := strings.CutPrefix(name, "input:"); ok {
				errs = append(errs, configfile.Errorf(c.Name, field, "input %q has no answer", id))
				continue
			}
			errs = append(errs, configfile.Errorf(c.Name, field, "variable %s is not set and has no default", name))
		}
		if strings.ContainsRune(out, 0) {
			errs = append(errs, configfile.Errorf(c.Name, field, "contains a NUL byte after expansion"))
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
		ToolPolicy:             toolPolicy(c.ToolPolicy), // validated
		Node:                   c.Node,
		Unprefixed:             !c.Prefixed(),
		AlwaysOn:               c.Activate,
		ProtocolVersion:        c.ProtocolVersion,
	}
	switch transport {
	case actors.TransportStdio:
		spec.Command = expand("command", c.Command)
		for i, a := range c.Args {
			spec.Args = append(spec.Args, expand(fmt.Sprintf("args[%d]", i), a))
		}
		spec.Dir = expand("cwd", c.Cwd)
		overrides := make(map[string]string, len(c.Env))
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			overrides[k] = expand("env."+k, c.Env[k])
		}
		var base []string
		if c.InheritEnv {
			// Everything but the key to the host's secret store.
			base = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
				return strings.HasPrefix(kv, secrets.EnvKey+"=") || strings.HasPrefix(kv, secrets.EnvKeyFile+"=")
			})
		} else {
			base = supervision.BaseEnv(environ)
		}
		spec.Env = supervision.MergeEnv(base, overrides)
		spec.Limits = c.Limits.runtime()
	default:
		spec.URL = expand("url", c.URL)
		spec.AllowPrivate = c.AllowPrivate
		if len(c.Headers) > 0 {
			spec.Headers = make(map[string]string, len(c.Headers))
			for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
				v := expand("headers."+k, c.Headers[k])
				if strings.ContainsAny(v, "\r\n") {
					errs = append(errs, configfile.Errorf(c.Name, "headers."+k, "contains a line break after expansion"))
				}
				spec.Headers[k] = v
			}
		}
		if c.APIKey != "" && !hasHeader(c.Headers, "Authorization") {
			key := expand("apiKey", c.APIKey)
			if strings.ContainsAny(key, "\r\n") {
				errs = append(errs, configfile.Errorf(c.Name, "apiKey", "contains a line break after expansion"))
			}
			if spec.Headers == nil {
				spec.Headers = map[string]string{}
			}
			spec.Headers["Authorization"] = "Bearer " + key
		}
		if c.OAuth != nil {
			spec.OAuth = c.OAuth.spec(expand)
		}
		if c.HeadersHelper != "" {
			// Claude Code runs headersHelper through a shell.
			spec.HeadersHelper = []string{"/bin/sh", "-c", expand("headersHelper", c.HeadersHelper)}
		}
	}
	if len(errs) > 0 {
		return actors.ServerSpec{}, configfile.Join(errs)
	}
	return spec, nil
}

// spec is o for the runtime, its strings expanded by expand, which takes
// the field's name and reports what fails.
func (o *OAuthConfig) spec(expand func(field, s string) string) *oauth.Config {
	x := func(name, v string) string { return expand("oauth."+name, v) }
	cfg := &oauth.Config{
		ClientID:                x("clientId", o.ClientID),
		ClientSecret:            x("clientSecret", o.ClientSecret),
		Scopes:                  fields(x("scopes", o.Scopes)),
		AuthServerMetadataURL:   x("authServerMetadataUrl", o.AuthServerMetadataURL),
		ClientMetadataURL:       x("clientMetadataUrl", o.ClientMetadataURL),
		GrantType:               configfile.NormalizeGrantType(x("grantType", o.GrantType)),
		TokenEndpointAuthMethod: x("tokenEndpointAuthMethod", o.TokenEndpointAuthMethod),
		PrivateKey:              x("privateKey", o.PrivateKey),
		SigningAlg:              x("signingAlg", o.SigningAlg),
		KeyID:                   x("keyId", o.KeyID),
		DPoP:                    o.DPoP,
		ClientName:              x("clientName", o.ClientName),
		IDPTokenEndpoint:        x("idpTokenEndpoint", o.IDPTokenEndpoint),
		IDPClientID:             x("idpClientId", o.IDPClientID),
		IDPClientSecret:         x("idpClientSecret", o.IDPClientSecret),
		IDToken:                 x("idToken", o.IDToken),
		Assertion:               x("assertion", o.Assertion),
	}
	if o.CallbackPort != 0 {
		cfg.RedirectURI = fmt.Sprintf("http://localhost:%d/callback", o.CallbackPort)
	}
	return cfg
}

// fields is strings.Fields(s), nil when s has none.
func fields(s string) []string {
	if f := strings.Fields(s); len(f) > 0 {
		return f
	}
	return nil
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

// transport resolves c.Type as the file format does (see ServerConfig);
// ok is false for an unknown type.
func (c ServerConfig) transport() (actors.Transport, bool) {
	return c.entry().Transport()
}

// entry is c in the file format's terms. It shares c's slices, maps and
// OAuth.
func (c ServerConfig) entry() configfile.Server {
	return configfile.Server{
		Name: c.Name, Type: c.Type,
		Command: c.Command, Args: c.Args, Env: c.Env, Cwd: c.Cwd,
		URL: c.URL, Headers: c.Headers, APIKey: c.APIKey,
		OAuth: (*configfile.OAuth)(c.OAuth), HeadersHelper: c.HeadersHelper,
		Enabled: c.Enabled, Description: c.Description, FriendlyName: c.FriendlyName,
		Timeout:                time.Duration(c.Timeout),
		StartupTimeout:         time.Duration(c.StartupTimeout),
		ResetTimeoutOnProgress: c.ResetTimeoutOnProgress,
		MaxTotalTimeout:        time.Duration(c.MaxTotalTimeout),
		LogLevel:               c.LogLevel,
		ValidateArguments:      c.ValidateArguments,
		IncludeTools:           c.IncludeTools, ExcludeTools: c.ExcludeTools,
		MaxTools: c.MaxTools, MaxDescription: c.MaxDescription, ToolPolicy: c.ToolPolicy, Node: c.Node,
		AllowPrivate: c.AllowPrivate, InheritEnv: c.InheritEnv,
		Prefix: c.Prefix, ProtocolVersion: c.ProtocolVersion, Activate: c.Activate,
		Limits: (*configfile.Limits)(c.Limits),
	}
}

// fromEntry is the ServerConfig of a decoded entry. It shares e's slices,
// maps and OAuth.
func fromEntry(e configfile.Server) ServerConfig {
	return ServerConfig{
		Name: e.Name, Type: e.Type,
		Command: e.Command, Args: e.Args, Env: e.Env, Cwd: e.Cwd,
		URL: e.URL, Headers: e.Headers, APIKey: e.APIKey,
		OAuth: (*OAuthConfig)(e.OAuth), HeadersHelper: e.HeadersHelper,
		Enabled: e.Enabled, Description: e.Description, FriendlyName: e.FriendlyName,
		Timeout:                Duration(e.Timeout),
		StartupTimeout:         Duration(e.StartupTimeout),
		ResetTimeoutOnProgress: e.ResetTimeoutOnProgress,
		MaxTotalTimeout:        Duration(e.MaxTotalTimeout),
		LogLevel:               e.LogLevel,
		ValidateArguments:      e.ValidateArguments,
		IncludeTools:           e.IncludeTools, ExcludeTools: e.ExcludeTools,
		MaxTools: e.MaxTools, MaxDescription: e.MaxDescription, ToolPolicy: e.ToolPolicy, Node: e.Node,
		AllowPrivate: e.AllowPrivate, InheritEnv: e.InheritEnv,
		Prefix: e.Prefix, ProtocolVersion: e.ProtocolVersion, Activate: e.Activate,
		Limits: (*ServerLimits)(e.Limits),
	}
}

// fieldValue is a field's value, labelled as errors name the field.
type fieldValue struct{ field, value string }
