package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Expand returns c as the host runs it. It validates c with lookup first
// (as Parse checks an entry), then:
//
//   - Type is resolved to "stdio", "http" or "sse";
//   - the ${...} references in the fields c's transport uses are replaced
//     by their values from lookup, ${input:ID} looked up as "input:ID":
//     command, args, env values and cwd for stdio; url, header values,
//     apiKey, headersHelper and the oauth object's strings otherwise;
//   - APIKey becomes the header "Authorization: Bearer <key>" (unless
//     Headers set Authorization themselves) and is cleared;
//   - the oauth object's grant type "jwt_bearer" is spelt in full;
//   - the fields the transport does not use are cleared.
//
// A nil lookup is os.LookupEnv. An unset variable without a default, an
// unanswered input, a NUL byte or (in a header) a line break in an
// expanded value is an error naming the server, the field and the
// variable; all problems are joined, each an *Error wrapping ErrInvalid.
// The result shares nothing with c. Expand may be called concurrently.
func (c Server) Expand(lookup func(string) (string, bool)) (Server, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if errs := c.validate(Options{Lookup: lookup}); len(errs) > 0 {
		return Server{}, joinErrors(errs)
	}
	transport, _ := c.Transport()
	var errs []*Error
	expand := func(field, s string) string {
		out, unset, err := expandRefs(s, lookup, "")
		if err != nil { // validate has checked the syntax already
			errs = append(errs, c.errorf(field, "%v", err))
		}
		for _, name := range unset {
			if id, ok := strings.CutPrefix(name, "input:"); ok {
				errs = append(errs, c.errorf(field, "input %q has no answer", id))
				continue
			}
			errs = append(errs, c.errorf(field, "variable %s is not set and has no default", name))
		}
		if strings.ContainsRune(out, 0) {
			errs = append(errs, c.errorf(field, "contains a NUL byte after expansion"))
		}
		return out
	}

	x := Server{
		Name:                   c.Name,
		Type:                   string(transport),
		Enabled:                c.Enabled,
		Description:            c.Description,
		FriendlyName:           c.FriendlyName,
		Timeout:                c.Timeout,
		StartupTimeout:         c.StartupTimeout,
		ResetTimeoutOnProgress: c.ResetTimeoutOnProgress,
		MaxTotalTimeout:        c.MaxTotalTimeout,
		LogLevel:               c.LogLevel,
		ValidateArguments:      c.ValidateArguments,
		IncludeTools:           slices.Clone(c.IncludeTools),
		ExcludeTools:           slices.Clone(c.ExcludeTools),
		MaxTools:               c.MaxTools,
		MaxDescription:         c.MaxDescription,
		ToolPolicy:             c.ToolPolicy,
		Node:                   c.Node,
		ProtocolVersion:        c.ProtocolVersion,
		Activate:               c.Activate,
	}
	if c.Prefix != nil {
		p := *c.Prefix
		x.Prefix = &p
	}
	if transport == protocol.TransportStdio {
		x.Command = expand("command", c.Command)
		for i, a := range c.Args {
			x.Args = append(x.Args, expand(fmt.Sprintf("args[%d]", i), a))
		}
		x.Cwd = expand("cwd", c.Cwd)
		if len(c.Env) > 0 {
			x.Env = make(map[string]string, len(c.Env))
			for _, k := range slices.Sorted(maps.Keys(c.Env)) {
				x.Env[k] = expand("env."+k, c.Env[k])
			}
		}
		x.InheritEnv = c.InheritEnv
		if c.Limits != nil {
			l := *c.Limits
			x.Limits = &l
		}
	} else {
		x.URL = expand("url", c.URL)
		x.AllowPrivate = c.AllowPrivate
		if len(c.Headers) > 0 {
			x.Headers = make(map[string]string, len(c.Headers))
			for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
				v := expand("headers."+k, c.Headers[k])
				if strings.ContainsAny(v, "\r\n") {
					errs = append(errs, c.errorf("headers."+k, "contains a line break after expansion"))
				}
				x.Headers[k] = v
			}
		}
		if c.APIKey != "" && !HasHeader(c.Headers, "Authorization") {
			key := expand("apiKey", c.APIKey)
			if strings.ContainsAny(key, "\r\n") {
				errs = append(errs, c.errorf("apiKey", "contains a line break after expansion"))
			}
			if x.Headers == nil {
				x.Headers = map[string]string{}
			}
			x.Headers["Authorization"] = "Bearer " + key
		}
		if c.OAuth != nil {
			x.OAuth = c.OAuth.expand(expand)
		}
		x.HeadersHelper = expand("headersHelper", c.HeadersHelper)
	}
	if len(errs) > 0 {
		return Server{}, joinErrors(errs)
	}
	return x, nil
}

// expand is o with its strings expanded by expand, which takes the field's
// name and reports what fails, and its grant type spelt in full.
func (o *OAuth) expand(expand func(field, s string) string) *OAuth {
	x := func(name, v string) string { return expand("oauth."+name, v) }
	return &OAuth{
		ClientID:                x("clientId", o.ClientID),
		ClientSecret:            x("clientSecret", o.ClientSecret),
		Scopes:                  x("scopes", o.Scopes),
		CallbackPort:            o.CallbackPort,
		AuthServerMetadataURL:   x("authServerMetadataUrl", o.AuthServerMetadataURL),
		ClientMetadataURL:       x("clientMetadataUrl", o.ClientMetadataURL),
		GrantType:               normalizeGrantType(x("grantType", o.GrantType)),
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
		PerUser:                 o.PerUser,
		AllowPrivate:            o.AllowPrivate,
	}
}

// HasHeader reports whether h (headers, or any map keyed by a
// case-insensitive name) has key, in any letter case.
func HasHeader(h map[string]string, key string) bool {
	for k := range h {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}
