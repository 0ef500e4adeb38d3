package mcpvisor

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// The configuration a host runs from is declared in package config: the
// file formats, the entries and their validation. These names keep the
// root package's API as embedders know it.
type (
	// Config is one configuration file (config.Config).
	Config = config.Config
	// ConfigInput is one of VS Code's "inputs" (config.Input).
	ConfigInput = config.Input
	// ServerConfig is one server entry as written in the file
	// (config.Server).
	ServerConfig = config.Server
	// OAuthConfig is an http or sse server's "oauth" object
	// (config.OAuth).
	OAuthConfig = config.OAuth
	// ServerLimits bound a stdio server's resources (config.Limits).
	ServerLimits = config.Limits
	// Duration is a duration as written in a configuration file
	// (config.Duration).
	Duration = config.Duration
)

// MinTimeout is the shortest "timeout", "startupTimeout" and
// "maxTotalTimeout" a server may have (config.MinTimeout).
const MinTimeout = config.MinTimeout

// LoadConfig reads and parses the configuration file at path, checking its
// references against the process environment: config.Load.
func LoadConfig(path string) (*Config, error) { return config.Load(path) }

// LoadConfigs loads every file of paths, in order, and merges them:
// config.LoadAll.
func LoadConfigs(paths ...string) (*Config, error) { return config.LoadAll(paths...) }

// MergeConfigs merges configurations loaded from several files into one,
// a later file's server replacing an earlier one's: config.Merge.
func MergeConfigs(cfgs ...*Config) *Config { return config.Merge(cfgs...) }

// ParseConfig parses a configuration file's contents, given without a
// file name, as JSON, checking its references against the process
// environment: config.Parse with no Options.
func ParseConfig(data []byte) (*Config, error) { return config.Parse(data, config.Options{}) }

// serverSpec resolves sc for the runtime: sc.Expand with lookup (nil means
// nothing is set; in production the host's lookup, which answers inputs
// and secrets), and then what only the host knows. For a stdio server it
// builds the child's environment: supervision.BaseEnv(environ), or all of
// environ but the key to the host's secret store when InheritEnv is set,
// merged with the expanded Env map. For a remote one it turns the oauth
// object into the runtime's oauth.Config and headersHelper into the
// command line /bin/sh runs. Errors are sc.Expand's: one line each, naming
// the server, the field and the variable. The spec shares nothing with sc.
func serverSpec(sc ServerConfig, lookup func(string) (string, bool), environ []string) (actors.ServerSpec, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	x, err := sc.Expand(lookup)
	if err != nil {
		return actors.ServerSpec{}, err
	}
	spec := actors.ServerSpec{
		Name:                   x.Name,
		Transport:              protocol.Transport(x.Type), // resolved by Expand
		Enabled:                x.Enabled,
		Description:            x.Description,
		FriendlyName:           x.FriendlyName,
		CallTimeout:            time.Duration(x.Timeout),
		StartupTimeout:         time.Duration(x.StartupTimeout),
		MaxTotalTimeout:        time.Duration(x.MaxTotalTimeout),
		ResetTimeoutOnProgress: x.ResetTimeoutOnProgress,
		LogLevel:               x.LogLevel,
		IncludeTools:           x.IncludeTools,
		ExcludeTools:           x.ExcludeTools,
		MaxTools:               x.MaxTools,
		MaxDescription:         x.MaxDescription,
		ToolPolicy:             toolPolicy(x.ToolPolicy), // validated
		Node:                   x.Node,
		Unprefixed:             !x.Prefixed(),
		AlwaysOn:               x.Activate,
		ProtocolVersion:        x.ProtocolVersion,
	}
	switch spec.Transport {
	case actors.TransportStdio:
		spec.Command, spec.Args, spec.Dir = x.Command, x.Args, x.Cwd
		var base []string
		if x.InheritEnv {
			// Everything but the key to the host's secret store.
			for _, kv := range environ {
				if !strings.HasPrefix(kv, secrets.EnvKey+"=") && !strings.HasPrefix(kv, secrets.EnvKeyFile+"=") {
					base = append(base, kv)
				}
			}
		} else {
			base = supervision.BaseEnv(environ)
		}
		spec.Env = supervision.MergeEnv(base, x.Env)
		if x.Limits != nil {
			spec.Limits = supervision.Limits(*x.Limits)
		}
	default:
		spec.URL, spec.Headers, spec.AllowPrivate = x.URL, x.Headers, x.AllowPrivate
		if x.OAuth != nil {
			spec.OAuth = oauthConfig(x.OAuth)
		}
		if x.HeadersHelper != "" {
			// Claude Code runs headersHelper through a shell.
			spec.HeadersHelper = []string{"/bin/sh", "-c", x.HeadersHelper}
		}
	}
	return spec, nil
}

// oauthConfig is an expanded oauth object (config.Server.Expand's) for the
// runtime.
func oauthConfig(o *OAuthConfig) *oauth.Config {
	cfg := &oauth.Config{
		ClientID:                o.ClientID,
		ClientSecret:            o.ClientSecret,
		Scopes:                  strings.Fields(o.Scopes),
		AuthServerMetadataURL:   o.AuthServerMetadataURL,
		ClientMetadataURL:       o.ClientMetadataURL,
		GrantType:               o.GrantType,
		TokenEndpointAuthMethod: o.TokenEndpointAuthMethod,
		PrivateKey:              o.PrivateKey,
		SigningAlg:              o.SigningAlg,
		KeyID:                   o.KeyID,
		DPoP:                    o.DPoP,
		ClientName:              o.ClientName,
		IDPTokenEndpoint:        o.IDPTokenEndpoint,
		IDPClientID:             o.IDPClientID,
		IDPClientSecret:         o.IDPClientSecret,
		IDToken:                 o.IDToken,
		Assertion:               o.Assertion,
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = nil
	}
	if o.CallbackPort != 0 {
		cfg.RedirectURI = fmt.Sprintf("http://localhost:%d/callback", o.CallbackPort)
	}
	return cfg
}
