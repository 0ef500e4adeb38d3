package peers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// OIDCProviderVersion is the version of panva's oidc-provider that
// scripts/peers.sh installs; keep the two in step.
const OIDCProviderVersion = "9.13.3"

const oidcDir = "node_modules/oidc-provider"

// OIDCBedOptions configure an OIDCBed; the zero value has 60-second access
// tokens and one-hour refresh tokens.
type OIDCBedOptions struct {
	// AccessTokenTTL is the access tokens' lifetime, whole seconds (at
	// least one); 0: 60 s.
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the refresh tokens' (and the grant's) lifetime;
	// 0: one hour.
	RefreshTokenTTL time.Duration
	// NoRefreshTokens makes the provider issue no refresh token, even
	// with offline_access granted.
	NoRefreshTokens bool
	// Device makes the provider offer the device authorization grant
	// (RFC 8628): a device_authorization_endpoint in its metadata, the
	// grant for registered clients, and its own pages at /device where a
	// person enters and confirms the user code before the usual login
	// and consent.
	Device bool
}

// OIDCBed is the sign-in test bed: a real OpenID Provider (panva's
// oidc-provider) in front of an MCP server built on the official
// TypeScript SDK, each a Node process on loopback.
//
// The provider offers dynamic registration, PKCE, resource indicators
// (JWT access tokens whose audience is the MCP server's URL), rotating
// refresh tokens, revocation and DPoP, as its defaults advertise; it
// grants offline_access only with prompt=consent (OIDC Core §11). Its
// login and consent approve at once: a browser that follows the
// redirects, keeping cookies, completes a sign-in. The MCP server accepts
// only `Authorization: Bearer`, checks the token against the provider's
// keys, and publishes RFC 9728 metadata naming the provider. Its one tool,
// whoami, answers {"sub": ..., "scopes": [...]}.
type OIDCBed struct {
	// MCPURL is the MCP endpoint, http://localhost:PORT/mcp: the resource
	// tokens are issued for.
	MCPURL string
	// Issuer is the provider's issuer, http://localhost:PORT.
	Issuer string

	provider, server *proc
}

// StartOIDCBed starts the provider, then the MCP server (which reads the
// provider's metadata as it starts), on free ports, and returns once both
// accept connections. A cleanup stops both (their process groups) and, if
// the test failed, logs their output. Skips the test when oidc-provider or
// the SDK is not installed (fails it in CI).
func StartOIDCBed(t testing.TB, opts OIDCBedOptions) *OIDCBed {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node, nodeModules, err := checkOIDC(root)
	if err != nil {
		testenv.Unavailable(t, "oidc-provider not installed: run make peers (npm unreachable?): %v", err)
	}
	access, refresh := opts.AccessTokenTTL, opts.RefreshTokenTTL
	if access == 0 {
		access = 60 * time.Second
	}
	if refresh == 0 {
		refresh = time.Hour
	}
	if access < time.Second || refresh < time.Second {
		panic("peers: OIDCBed token lifetimes are whole seconds, at least one")
	}
	scripts := filepath.Join(root, "internal", "peers", "oidc")
	var lastErr error
	// A port free when chosen may be taken before node binds it: try again.
	for attempt := 0; attempt < 3; attempt++ {
		asPort, err1 := freePort()
		mcpPort, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("peers: choosing ports: %v", err)
		}
		b := &OIDCBed{
			MCPURL: "http://localhost:" + strconv.Itoa(mcpPort) + "/mcp",
			Issuer: "http://localhost:" + strconv.Itoa(asPort),
		}
		common := []string{"PEERS_NODE_MODULES=" + nodeModules, "OIDC_ISSUER=" + b.Issuer}
		b.provider, err = startNode(node, []string{filepath.Join(scripts, "provider.mjs")}, append(common,
			"OIDC_PORT="+strconv.Itoa(asPort),
			"OIDC_RESOURCE="+b.MCPURL,
			"OIDC_ACCESS_TTL="+strconv.Itoa(int(access/time.Second)),
			"OIDC_REFRESH_TTL="+strconv.Itoa(int(refresh/time.Second)),
			"OIDC_NO_REFRESH="+map[bool]string{true: "1"}[opts.NoRefreshTokens],
			"OIDC_DEVICE="+map[bool]string{true: "1"}[opts.Device],
		), asPort)
		if err != nil {
			lastErr = fmt.Errorf("oidc-provider: %w", err)
			continue
		}
		env := append(common, "MCP_PORT="+strconv.Itoa(mcpPort), "MCP_RESOURCE="+b.MCPURL)
		b.server, err = startNode(node, []string{filepath.Join(scripts, "server.mjs")}, env, mcpPort)
		if err != nil {
			b.provider.stop()
			lastErr = fmt.Errorf("MCP server: %w", err)
			continue
		}
		t.Cleanup(func() {
			b.server.stop()
			b.provider.stop()
			if t.Failed() {
				t.Logf("oidc-provider output:\n%s", b.provider.out.String())
				t.Logf("the bed's MCP server output:\n%s", b.server.out.String())
			}
		})
		return b
	}
	t.Fatalf("peers: the OIDC test bed did not start: %v", lastErr)
	return nil
}

// ProviderOutput is what the provider has printed so far: a line per
// request ("POST /token"), a line per token request's outcome ("grant
// success refresh_token"; "grant revoked GRANT" and "grant error
// invalid_grant ... (refresh token already used)" when a spent refresh
// token came back), and its errors.
func (b *OIDCBed) ProviderOutput() string { return b.provider.out.String() }

// checkOIDC verifies node, the pinned SDK and the pinned oidc-provider in
// the cache under root, and returns node and the cache's node_modules,
// both absolute. It reads files only.
func checkOIDC(root string) (node, nodeModules string, err error) {
	node, _, err = checkSDK(root)
	if err != nil {
		return "", "", err
	}
	cache := filepath.Join(root, filepath.FromSlash(cacheDir))
	dir := filepath.Join(cache, filepath.FromSlash(oidcDir))
	if _, err := os.Stat(filepath.Join(dir, "lib", "index.js")); err != nil {
		return "", "", fmt.Errorf("no oidc-provider in %s", dir)
	}
	v, err := packageVersion(dir)
	if err != nil {
		return "", "", err
	}
	if v != OIDCProviderVersion {
		return "", "", fmt.Errorf("oidc-provider %s installed, want %s", v, OIDCProviderVersion)
	}
	return node, filepath.Join(cache, "node_modules"), nil
}
