package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
)

// OAuth is an http or sse server's "oauth" object, in Claude Code's
// field names, so that its .mcp.json loads unchanged. Every field is
// optional: the zero value discovers the authorization server, registers
// dynamically and signs a person in. String fields may hold ${...}
// references; secrets registered through the API are kept out of the
// journal (see the host's Register).
type OAuth struct {
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
	// DPoP: true asks for DPoP-bound tokens (RFC 9449) even where the
	// server's metadata does not; false never asks for them, whatever the
	// metadata says; unset (nil) binds tokens only when the protected
	// resource's metadata asks for it.
	DPoP *bool `json:"dpop,omitempty"`
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
	// connection: a call names its user (the host's CallOptions.User) and goes to that
	// user's own instance of the server; a call that names none is refused.
	PerUser bool `json:"perUser,omitempty"`
	// AllowPrivate lets the authorization server's endpoints (its
	// metadata, registration, token and revocation endpoints, and the
	// protected resource metadata) live on loopback or a private network.
	// The server's own allowPrivate covers only the server's origin; a
	// link-local address (a cloud metadata service) is refused even with
	// this.
	AllowPrivate bool `json:"allowPrivate,omitempty"`
}

// grantJWTBearerAlias is the short spelling of oauth.GrantJWTBearer that
// "grantType" also accepts.
const grantJWTBearerAlias = "jwt_bearer"

// normalizeGrantType maps grantJWTBearerAlias to oauth.GrantJWTBearer and
// returns any other grant type unchanged.
func normalizeGrantType(g string) string {
	if g == grantJWTBearerAlias {
		return oauth.GrantJWTBearer
	}
	return g
}

// unsupportedOAuthFields are members of Gemini CLI's "oauth" object that
// mcpvisor does not act on; the value is as in unsupportedFields.
var unsupportedOAuthFields = map[string]string{
	"enabled":          "",
	"authorizationUrl": `: the endpoints are discovered, or read from "authServerMetadataUrl"`,
	"tokenUrl":         `: the endpoints are discovered, or read from "authServerMetadataUrl"`,
	"registrationUrl":  `: the endpoints are discovered, or read from "authServerMetadataUrl"`,
	"redirectUri":      `: set "callbackPort" for http://localhost:PORT/callback`,
	"audiences":        "",
	"tokenParamName":   "",
}

// strings lists o's string fields, labelled as errors name them, in the
// order of the struct.
func (o *OAuth) strings() []fieldValue {
	return []fieldValue{
		{"oauth.clientId", o.ClientID},
		{"oauth.clientSecret", o.ClientSecret},
		{"oauth.scopes", o.Scopes},
		{"oauth.authServerMetadataUrl", o.AuthServerMetadataURL},
		{"oauth.clientMetadataUrl", o.ClientMetadataURL},
		{"oauth.grantType", o.GrantType},
		{"oauth.tokenEndpointAuthMethod", o.TokenEndpointAuthMethod},
		{"oauth.privateKey", o.PrivateKey},
		{"oauth.signingAlg", o.SigningAlg},
		{"oauth.keyId", o.KeyID},
		{"oauth.clientName", o.ClientName},
		{"oauth.idpTokenEndpoint", o.IDPTokenEndpoint},
		{"oauth.idpClientId", o.IDPClientID},
		{"oauth.idpClientSecret", o.IDPClientSecret},
		{"oauth.idToken", o.IDToken},
		{"oauth.assertion", o.Assertion},
	}
}

// decodeOAuth decodes the "oauth" member m of sc's entry. Errors name the
// member's field, e.g. "oauth.callbackPort"; warnings name unknown and
// unsupported members.
func decodeOAuth(sc *Server, m jsonMember) (*OAuth, []string, []*Error) {
	if kind := jsonKind(m.value); kind != "an object" {
		return nil, nil, []*Error{sc.errorf(m.key, "want an object, got %s", kind)}
	}
	o := &OAuth{}
	var (
		warnings []string
		errs     []*Error
	)
	seen := map[string]bool{}
	for _, f := range objectMembers(m.value) {
		field := jsonMember{m.key + "." + f.key, f.value}
		if seen[f.key] {
			errs = append(errs, sc.errorf(field.key, "given more than once"))
			continue
		}
		seen[f.key] = true
		if jsonKind(f.value) == "null" {
			continue
		}
		var err *Error
		switch f.key {
		case "clientId":
			err = decodeStringField(sc, field, &o.ClientID)
		case "clientSecret":
			err = decodeStringField(sc, field, &o.ClientSecret)
		case "scopes":
			o.Scopes, err = decodeScopes(sc, field)
		case "callbackPort":
			err = decodeIntField(sc, field, &o.CallbackPort)
			if err == nil && (o.CallbackPort < 1 || o.CallbackPort > 65535) {
				err = sc.errorf(field.key, "want a port number from 1 to 65535, got %d", o.CallbackPort)
				o.CallbackPort = 0
			}
		case "authServerMetadataUrl":
			err = decodeStringField(sc, field, &o.AuthServerMetadataURL)
		case "clientMetadataUrl":
			err = decodeStringField(sc, field, &o.ClientMetadataURL)
		case "grantType":
			err = decodeStringField(sc, field, &o.GrantType)
		case "tokenEndpointAuthMethod":
			err = decodeStringField(sc, field, &o.TokenEndpointAuthMethod)
		case "privateKey":
			err = decodeStringField(sc, field, &o.PrivateKey)
		case "signingAlg":
			err = decodeStringField(sc, field, &o.SigningAlg)
		case "keyId":
			err = decodeStringField(sc, field, &o.KeyID)
		case "dpop":
			var on bool
			if err = decodeBoolField(sc, field, &on); err == nil {
				o.DPoP = &on
			}
		case "perUser":
			err = decodeBoolField(sc, field, &o.PerUser)
		case "allowPrivate":
			err = decodeBoolField(sc, field, &o.AllowPrivate)
		case "clientName":
			err = decodeStringField(sc, field, &o.ClientName)
		case "idpTokenEndpoint":
			err = decodeStringField(sc, field, &o.IDPTokenEndpoint)
		case "idpClientId":
			err = decodeStringField(sc, field, &o.IDPClientID)
		case "idpClientSecret":
			err = decodeStringField(sc, field, &o.IDPClientSecret)
		case "idToken":
			err = decodeStringField(sc, field, &o.IDToken)
		case "assertion":
			err = decodeStringField(sc, field, &o.Assertion)
		default:
			if note, ok := unsupportedOAuthFields[f.key]; ok {
				warnings = append(warnings, fmt.Sprintf("server %q: field %q is not supported by mcpvisor, ignored%s", sc.Name, field.key, note))
			} else {
				warnings = append(warnings, fmt.Sprintf("server %q: unknown field %q ignored", sc.Name, field.key))
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return o, warnings, errs
}

// decodeScopes decodes "scopes": a space-separated string (Claude Code) or
// an array of scope tokens (Gemini CLI), which is joined with spaces.
func decodeScopes(sc *Server, m jsonMember) (string, *Error) {
	switch kind := jsonKind(m.value); kind {
	case "a string":
		var s string
		err := decodeStringField(sc, m, &s)
		return s, err
	case "an array":
		scopes, err := decodeStringsField(sc, m)
		if err != nil {
			return "", err
		}
		for i, s := range scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				return "", sc.errorf(fmt.Sprintf("%s[%d]", m.key, i), "want one scope, without spaces, got %q", s)
			}
		}
		return strings.Join(scopes, " "), nil
	default:
		return "", sc.errorf(m.key, "want a space-separated string or an array of strings, got %s", kind)
	}
}

// validateOAuth returns the problems with c.OAuth, a remote server's. Enum
// values and urls are checked after expansion with lookup; a value that is
// still partly an unset variable is left for the check at start.
func (c Server) validateOAuth(lookup func(string) (string, bool)) []*Error {
	o := c.OAuth
	var errs []*Error
	add := func(field, format string, args ...any) {
		errs = append(errs, c.errorf(field, format, args...))
	}
	// resolved is v expanded; ok is false while part of it is unknown.
	resolved := func(v string) (string, bool) {
		if strings.ContainsRune(v, 0) {
			return "", false
		}
		out, _, err := expandRefs(v, lookup, unsetMarker)
		if err != nil || strings.Contains(out, unsetMarker) {
			return "", false
		}
		return out, true
	}

	grant, grantKnown := resolved(o.GrantType)
	switch grant = normalizeGrantType(grant); grant {
	case "":
		grant = oauth.GrantAuthorizationCode
	case oauth.GrantAuthorizationCode, oauth.GrantClientCredentials, oauth.GrantJWTBearer:
	default:
		add("oauth.grantType", "want %s, %s or %s (or %s), got %q", oauth.GrantAuthorizationCode, oauth.GrantClientCredentials, oauth.GrantJWTBearer, grantJWTBearerAlias, grant)
		grantKnown = false
	}
	if grantKnown {
		switch grant {
		case oauth.GrantClientCredentials:
			if strings.TrimSpace(o.ClientID) == "" {
				add("oauth.clientId", "required for the %s grant", grant)
			}
		case oauth.GrantJWTBearer:
			if o.Assertion == "" && (o.IDPTokenEndpoint == "" || o.IDToken == "") {
				add("oauth.grantType", `the jwt-bearer grant needs "assertion", or "idpTokenEndpoint" and "idToken"`)
			}
		}
	}

	if method, ok := resolved(o.TokenEndpointAuthMethod); ok {
		switch method {
		case "", oauth.AuthBasic, oauth.AuthPost, oauth.AuthNone:
		case oauth.AuthPrivateJWT:
			if o.PrivateKey == "" {
				add("oauth.privateKey", "required when \"tokenEndpointAuthMethod\" is %s", method)
			}
		default:
			add("oauth.tokenEndpointAuthMethod", "want %s, %s, %s or %s, got %q", oauth.AuthBasic, oauth.AuthPost, oauth.AuthNone, oauth.AuthPrivateJWT, method)
		}
	}
	if alg, ok := resolved(o.SigningAlg); ok && alg != "" && !signingAlgs[alg] {
		add("oauth.signingAlg", "want one of ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA, got %q", alg)
	}
	if o.CallbackPort != 0 && (o.CallbackPort < 1 || o.CallbackPort > 65535) {
		add("oauth.callbackPort", "want a port number from 1 to 65535, got %d", o.CallbackPort)
	}

	for _, f := range []fieldValue{{"oauth.authServerMetadataUrl", o.AuthServerMetadataURL}, {"oauth.idpTokenEndpoint", o.IDPTokenEndpoint}} {
		if u, ok := resolved(f.value); ok && u != "" {
			if err := checkEndpointURL(u); err != nil {
				add(f.field, "%v", err)
			}
		}
	}
	if u, ok := resolved(o.ClientMetadataURL); ok && u != "" {
		if err := checkClientMetadataURL(u); err != nil {
			add("oauth.clientMetadataUrl", "%v", err)
		}
	}
	return errs
}

// signingAlgs are the JWS algorithms a private key can sign client
// assertions with.
var signingAlgs = map[string]bool{
	"ES256": true, "ES384": true, "ES512": true,
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"EdDSA": true,
}

// parseAbsoluteURL parses u as an absolute url with a host. Its errors
// leave u out: it may hold a secret.
func parseAbsoluteURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("invalid url: %v", err)
	}
	if p.Scheme == "" {
		return nil, errors.New(`want an absolute https url, like "https://host/path"`)
	}
	if p.Host == "" {
		return nil, errors.New("url has no host")
	}
	return p, nil
}

// checkEndpointURL reports whether u is an https url, or an http one on a
// loopback host (an authorization server run locally).
func checkEndpointURL(u string) error {
	p, err := parseAbsoluteURL(u)
	if err != nil {
		return err
	}
	switch s := strings.ToLower(p.Scheme); {
	case s == "https":
		return nil
	case s == "http" && isLoopbackHost(p.Hostname()):
		return nil
	case s == "http":
		return errors.New("want an https url (http only on a loopback host such as localhost)")
	default:
		return fmt.Errorf("want an https url, got scheme %q", p.Scheme)
	}
}

// checkClientMetadataURL reports whether u can be a Client ID Metadata
// Document url: https, with a path, without a fragment or credentials.
func checkClientMetadataURL(u string) error {
	p, err := parseAbsoluteURL(u)
	if err != nil {
		return err
	}
	switch {
	case !strings.EqualFold(p.Scheme, "https"):
		return fmt.Errorf("want an https url, got scheme %q", p.Scheme)
	case p.Path == "" || p.Path == "/":
		return errors.New(`want a url with a path, the client's metadata document, like "https://host/client.json"`)
	case p.Fragment != "" || strings.Contains(u, "#"):
		return errors.New("must not have a fragment")
	case p.User != nil:
		return errors.New("must not have a user name or password")
	}
	for _, seg := range strings.Split(p.Path, "/") {
		if seg == "." || seg == ".." {
			return errors.New(`must not have "." or ".." path segments`)
		}
	}
	return nil
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
