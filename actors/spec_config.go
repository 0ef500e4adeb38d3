package actors

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// A server entry as a configuration file or the API gives it (package
// config) becomes a ServerSpec here, the runtime's side of the floor: the
// configuration may not know the runtime, and what an entry means to a
// running server (its child's environment, its oauth client, its
// headersHelper's command line) is the runtime's business.

// SpecOf resolves sc, a server entry of the configuration, for the
// runtime: sc.Expand with lookup (nil means nothing is set; in production
// the host's lookup, which answers inputs and secrets), and then what only
// the host knows, its environ. For a stdio server it
// builds the child's environment: supervision.BaseEnv(environ), or all of
// environ but the key to the host's secret store when InheritEnv is set,
// merged with the expanded Env map. For a remote one it turns the oauth
// object into the runtime's oauth.Config and headersHelper into the
// command line /bin/sh runs. Errors are sc.Expand's: one line each, naming
// the server, the field and the variable. The spec shares nothing with sc.
func SpecOf(sc config.Server, lookup func(string) (string, bool), environ []string) (ServerSpec, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	x, err := sc.Expand(lookup)
	if err != nil {
		return ServerSpec{}, err
	}
	spec := ServerSpec{
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
		ToolPolicy:             parsedPolicy(x.ToolPolicy), // validated
		Node:                   x.Node,
		Unprefixed:             !x.Prefixed(),
		AlwaysOn:               x.Activate,
		ProtocolVersion:        x.ProtocolVersion,
	}
	switch spec.Transport {
	case TransportStdio:
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
func oauthConfig(o *config.OAuth) *oauth.Config {
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
		DPoP:                    dpopMode(o.DPoP),
		ClientName:              o.ClientName,
		IDPTokenEndpoint:        o.IDPTokenEndpoint,
		IDPClientID:             o.IDPClientID,
		IDPClientSecret:         o.IDPClientSecret,
		IDToken:                 o.IDToken,
		Assertion:               o.Assertion,
		AllowPrivate:            o.AllowPrivate,
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = nil
	}
	if o.CallbackPort != 0 {
		cfg.RedirectURI = fmt.Sprintf("http://localhost:%d/callback", o.CallbackPort)
	}
	return cfg
}

// dpopMode is the config's "dpop" for the runtime: unset is DPoPAuto.
func dpopMode(on *bool) oauth.DPoPMode {
	switch {
	case on == nil:
		return oauth.DPoPAuto
	case *on:
		return oauth.DPoPOn
	}
	return oauth.DPoPOff
}

// parsedPolicy reads a validated policy; an invalid one (never past
// validation) reads as unset.
func parsedPolicy(s string) toolpin.Policy {
	p, _ := toolpin.ParsePolicy(s)
	return p
}
