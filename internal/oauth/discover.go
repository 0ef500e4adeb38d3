package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// maxMetadata bounds a metadata document or a token response.
const maxMetadata = 1 << 20

// ResourceMetadata is an OAuth 2.0 Protected Resource Metadata document
// (RFC 9728 §2), the fields a client uses.
type ResourceMetadata struct {
	Resource                      string   `json:"resource"`
	AuthorizationServers          []string `json:"authorization_servers,omitempty"`
	ScopesSupported               []string `json:"scopes_supported,omitempty"`
	DPoPBoundAccessTokensRequired bool     `json:"dpop_bound_access_tokens_required,omitempty"`
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// ServerMetadata is an authorization server's metadata (RFC 8414 §2, OpenID
// Connect Discovery), the fields a client uses.
type ServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint                              string   `json:"token_endpoint,omitempty"`
	RegistrationEndpoint                       string   `json:"registration_endpoint,omitempty"`
	RevocationEndpoint                         string   `json:"revocation_endpoint,omitempty"`
	DeviceAuthorizationEndpoint                string   `json:"device_authorization_endpoint,omitempty"`
	ScopesSupported                            []string `json:"scopes_supported,omitempty"`
	GrantTypesSupported                        []string `json:"grant_types_supported,omitempty"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported,omitempty"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported,omitempty"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	DPoPSigningAlgValuesSupported              []string `json:"dpop_signing_alg_values_supported,omitempty"`
}

// Discovery is what discovery found for one server.
type Discovery struct {
	// Resource is the server's resource identifier, sent as RFC 8707
	// resource: the metadata's resource, or the server's URL.
	Resource string
	// Resource metadata; nil for a 2025-03-26 server without it.
	PRM *ResourceMetadata
	// Server is the chosen authorization server's metadata.
	Server *ServerMetadata
}

// discover finds the authorization server for serverURL: from the
// challenge's resource_metadata, else the well-known URIs; then the
// authorization server's metadata (or metadataURL when configured).
func discover(ctx context.Context, hc *http.Client, serverURL string, ch Challenge, metadataURL string) (*Discovery, error) {
	d := &Discovery{Resource: canonicalResource(serverURL)}
	prm, err := fetchResourceMetadata(ctx, hc, serverURL, ch.ResourceMetadata())
	switch {
	case err == nil:
		if !resourceMatches(prm.Resource, serverURL) {
			return nil, fmt.Errorf("%w: %w", ErrDiscovery, resourceMismatch(prm.Resource, serverURL))
		}
		d.PRM = prm
		d.Resource = prm.Resource
	case errors.Is(err, errNotFound):
		// 2025-03-26: no Protected Resource Metadata; the server's origin
		// is its authorization server.
	default:
		return nil, err
	}
	if metadataURL != "" {
		m, err := fetchServerMetadata(ctx, hc, metadataURL, "")
		if err != nil {
			return nil, err
		}
		d.Server = m
		return d, nil
	}
	if d.PRM == nil {
		d.Server, err = legacyServerMetadata(ctx, hc, serverURL)
		return d, err
	}
	if len(d.PRM.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("%w: the protected resource metadata of %s names no authorization server", ErrDiscovery, outbound.Where(serverURL))
	}
	var errs []error
	for _, issuer := range d.PRM.AuthorizationServers {
		m, err := serverMetadata(ctx, hc, issuer)
		if err == nil {
			d.Server = m
			return d, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

var errNotFound = errors.New("not found")

// errResourceMismatch: the protected resource metadata names another
// resource than the configured URL. No sign-in can succeed until the
// config names the server as its metadata does.
var errResourceMismatch = errors.New("the server's metadata is for another resource")

// resourceMismatch says how the metadata's resource and the configured URL
// differ; a difference of origin alone (localhost against 127.0.0.1, a
// port) is named as such, with the fix.
func resourceMismatch(resource, serverURL string) error {
	msg := fmt.Sprintf("the protected resource metadata is for %q, not for %s", resource, outbound.Where(serverURL))
	r, err1 := url.Parse(canonicalResource(resource))
	s, err2 := url.Parse(canonicalResource(serverURL))
	if err1 == nil && err2 == nil && (r.Scheme != s.Scheme || r.Host != s.Host) {
		msg = fmt.Sprintf("it names %s://%s, the config %s://%s (different origins to OAuth, even on one machine): set the server's url to %s",
			r.Scheme, r.Host, s.Scheme, s.Host, (&url.URL{Scheme: r.Scheme, Host: r.Host, Path: s.Path}).String())
	}
	return fmt.Errorf("%w: %s", errResourceMismatch, msg)
}

// fetchResourceMetadata gets the server's Protected Resource Metadata from
// hint (the challenge's resource_metadata), else the path-aware well-known
// URI, then the root one.
func fetchResourceMetadata(ctx context.Context, hc *http.Client, serverURL, hint string) (*ResourceMetadata, error) {
	var urls []string
	if hint != "" {
		urls = []string{hint}
	} else {
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDiscovery, err)
		}
		root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
		if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
			urls = append(urls, root+p)
		}
		urls = append(urls, root)
	}
	for _, u := range urls {
		var prm ResourceMetadata
		err := getJSON(ctx, hc, u, &prm)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &prm, nil
	}
	return nil, errNotFound
}

// serverMetadataURLs lists where an issuer's metadata may be, in the
// specification's order: RFC 8414 with path insertion, OpenID Connect with
// path insertion, OpenID Connect with path appending (for an issuer with a
// path); RFC 8414, then OpenID Connect (without).
func serverMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%w: authorization server %q is not an absolute URL", ErrDiscovery, issuer)
	}
	base := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{
			base + "/.well-known/oauth-authorization-server",
			base + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + p,
		base + "/.well-known/openid-configuration" + p,
		base + p + "/.well-known/openid-configuration",
	}, nil
}

// serverMetadata fetches issuer's metadata from the first well-known URI
// that has it; the document's issuer must be issuer itself (RFC 8414 §3.3).
func serverMetadata(ctx context.Context, hc *http.Client, issuer string) (*ServerMetadata, error) {
	urls, err := serverMetadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	for _, u := range urls {
		m, err := fetchServerMetadata(ctx, hc, u, issuer)
		if errors.Is(err, errNotFound) {
			continue
		}
		return m, err
	}
	return nil, fmt.Errorf("%w: no metadata for authorization server %s", ErrDiscovery, issuer)
}

// fetchServerMetadata gets one metadata document; with issuer set, its
// issuer must be identical to it, compared as strings.
func fetchServerMetadata(ctx context.Context, hc *http.Client, u, issuer string) (*ServerMetadata, error) {
	var m ServerMetadata
	if err := getJSON(ctx, hc, u, &m); err != nil {
		return nil, err
	}
	if issuer != "" && m.Issuer != issuer {
		return nil, fmt.Errorf("%w: the metadata at %s names issuer %q, not %q", ErrIssuerMismatch, outbound.Where(u), m.Issuer, issuer)
	}
	if m.Issuer == "" {
		return nil, fmt.Errorf("%w: the metadata at %s names no issuer", ErrDiscovery, outbound.Where(u))
	}
	if m.AuthorizationEndpoint == "" && m.TokenEndpoint == "" {
		return nil, fmt.Errorf("%w: the metadata at %s names no endpoints", ErrDiscovery, outbound.Where(u))
	}
	return &m, nil
}

// legacyServerMetadata is 2025-03-26 discovery for a server without
// resource metadata: the authorization base URL is the server's URL with
// its path discarded (its origin), with RFC 8414 metadata at the origin's
// well-known URI, else the default endpoints /authorize, /token and
// /register. Metadata found there must name the origin as its issuer
// (RFC 8414 §3.3: the issuer is identical to the URL the metadata's
// location was derived from), as go-sdk also requires; a trailing slash
// is ignored, "https://host/" being "https://host" (RFC 3986 §6.2.3).
func legacyServerMetadata(ctx context.Context, hc *http.Client, serverURL string) (*ServerMetadata, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDiscovery, err)
	}
	origin := u.Scheme + "://" + u.Host
	where := origin + "/.well-known/oauth-authorization-server"
	m, err := fetchServerMetadata(ctx, hc, where, "")
	switch {
	case err == nil:
		if strings.TrimSuffix(m.Issuer, "/") != origin {
			return nil, fmt.Errorf("%w: the metadata at %s names issuer %q, not the server's origin %q (2025-03-26 discovery without resource metadata)",
				ErrIssuerMismatch, outbound.Where(where), m.Issuer, origin)
		}
		return m, nil
	case errors.Is(err, errNotFound):
		return &ServerMetadata{
			Issuer:                        origin,
			AuthorizationEndpoint:         origin + "/authorize",
			TokenEndpoint:                 origin + "/token",
			RegistrationEndpoint:          origin + "/register",
			CodeChallengeMethodsSupported: []string{"S256"}, // 2025-03-26 required PKCE S256 of every server
		}, nil
	default:
		return nil, err
	}
}

// getJSON GETs u and decodes a 200 JSON body into out; 404 (and the other
// 4xx a server answers for a path it does not serve) is errNotFound.
func getJSON(ctx context.Context, hc *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDiscovery, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrDiscovery, outbound.Where(u), unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s answered HTTP %d", ErrDiscovery, outbound.Where(u), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDiscovery, outbound.Where(u), err)
	}
	if len(b) > maxMetadata {
		return fmt.Errorf("%w: %s: the document is larger than %d bytes", ErrDiscovery, outbound.Where(u), maxMetadata)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDiscovery, outbound.Where(u), err)
	}
	return nil
}

// canonicalResource is the resource identifier of a server URL (RFC 8707
// §2, the MCP specification's canonical server URI): scheme and host in
// lower case, no fragment, no trailing slash on a bare origin.
func canonicalResource(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment = ""
	if u.Path == "/" {
		u.Path = ""
	}
	return u.String()
}

// resourceMatches reports whether the metadata's resource identifies the
// server at serverURL: the same origin, and a path that is the server's or
// one of its parents (RFC 9728 §3.3; the MCP specification lets one
// resource cover the paths beneath it).
func resourceMatches(resource, serverURL string) bool {
	r, err1 := url.Parse(canonicalResource(resource))
	s, err2 := url.Parse(canonicalResource(serverURL))
	if err1 != nil || err2 != nil || r.Scheme != s.Scheme || r.Host != s.Host {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(s.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/") || rp == ""
}

func unwrapURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

func hasString(list []string, s string) bool { return slices.Contains(list, s) }
