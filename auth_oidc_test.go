package mcpvisor_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// Against the sign-in test bed (internal/peers.StartOIDCBed): a real
// OpenID Provider, panva's oidc-provider, which advertises DPoP and
// grants offline_access only with prompt=consent, in front of an MCP
// server of the official TypeScript SDK that accepts Bearer only.

// bedBrowser is a person's browser for the bed: it opens the URL, keeps
// the provider's cookies (its interaction needs them) and follows every
// redirect, through the provider's login and consent (which approve at
// once), to the host's loopback listener.
func bedBrowser(t *testing.T) mcpvisor.SignInFunc {
	return func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		jar, err := cookiejar.New(nil)
		if err != nil {
			return nil, err
		}
		c := &http.Client{Jar: jar}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("browser: %v", err)
			return nil, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("browser: the sign-in ended in HTTP %d at %s", resp.StatusCode, resp.Request.URL.Redacted())
		}
		return nil, nil
	}
}

// whoami calls the bed's tool and decodes its answer.
func whoami(t *testing.T, h *mcpvisor.Host) (sub string, scopes []string) {
	t.Helper()
	res := call(t, h, "mcp__bed__whoami", `{}`)
	var who struct {
		Sub    string   `json:"sub"`
		Scopes []string `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(res.Wire()), &who); err != nil {
		t.Fatalf("whoami = %s: %v", res.Wire(), err)
	}
	return who.Sub, who.Scopes
}

// The provider advertises DPoP; the resource server's metadata does not
// ask for it. Tokens are Bearer, and the Bearer-only server takes them.
func TestOIDCBedBearerUnlessResourceAsks(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{})
	h := openHost(t, mcpvisor.Options{SignIn: bedBrowser(t)}, oauthHTTPServer("bed", bed.MCPURL))
	waitReady(t, h, "bed")
	if sub, _ := whoami(t, h); sub != "bed-user" {
		t.Errorf("whoami sub = %q, want bed-user", sub)
	}
	st := status(t, h, "bed")
	if st.Auth == nil || !st.Auth.SignedIn || st.Auth.TokenType != "Bearer" || st.Auth.Issuer != bed.Issuer || st.Auth.Client != "dcr" {
		t.Errorf("auth status = %+v, want signed in with a Bearer token of %s, client dcr", st.Auth, bed.Issuer)
	}
}

// "dpop": false wins even where the resource would take DPoP: here, a
// provider that advertises it and a resource that does not ask, the
// switch must not make things worse; "dpop": true is what turns it on.
func TestOIDCBedDPoPFalse(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{})
	sc := oauthHTTPServer("bed", bed.MCPURL)
	sc.OAuth.DPoP = new(false)
	h := openHost(t, mcpvisor.Options{SignIn: bedBrowser(t)}, sc)
	waitReady(t, h, "bed")
	if sub, _ := whoami(t, h); sub != "bed-user" {
		t.Errorf("whoami sub = %q, want bed-user", sub)
	}
	if st := status(t, h, "bed"); st.Auth == nil || st.Auth.TokenType != "Bearer" {
		t.Errorf("auth status = %+v, want a Bearer token", st.Auth)
	}
}

// offline_access is asked with prompt=consent, so the provider issues a
// refresh token; a refresh then works and the server takes the new token.
func TestOIDCBedOfflineAccessRefreshes(t *testing.T) {
	// Five-second tokens: whatever the refresh policy, the token is
	// refreshed within its life.
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{AccessTokenTTL: 5 * time.Second})
	h := openHost(t, mcpvisor.Options{SignIn: bedBrowser(t)}, oauthHTTPServer("bed", bed.MCPURL))
	waitReady(t, h, "bed")
	whoami(t, h)
	st := status(t, h, "bed")
	if st.Auth == nil || !st.Auth.Refresh {
		t.Fatalf("auth status = %+v: the provider issued no refresh token", st.Auth)
	}
	// The provider logs each request; a refresh is a second POST /token,
	// and the token's expiry moves.
	before := strings.Count(bed.ProviderOutput(), "POST /token\n")
	first := st.Auth.Expiry
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for status(t, h, "bed").Auth.Expiry.Equal(first) {
		whoami(t, h) // a request with the token, which refreshes it when due
		if time.Now().After(deadline) {
			t.Fatalf("no refresh within 30 s; provider output:\n%s", bed.ProviderOutput())
		}
		<-tick.C
	}
	if after := strings.Count(bed.ProviderOutput(), "POST /token\n"); after <= before {
		t.Errorf("the token's expiry moved without a request to the token endpoint (%d, then %d)", before, after)
	}
	if sub, _ := whoami(t, h); sub != "bed-user" {
		t.Errorf("after the refresh, whoami sub = %q", sub)
	}
	if st := status(t, h, "bed"); !st.Auth.Refresh {
		t.Errorf("after the refresh the rotated refresh token is gone: %+v", st.Auth)
	}
}

// A provider that issues no refresh token: the user is told plainly, in
// the auth status, when sign-in will be asked for again.
func TestOIDCBedNoRefreshTokenSaidPlainly(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{NoRefreshTokens: true})
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := openHost(t, mcpvisor.Options{SignIn: bedBrowser(t), Logger: log}, oauthHTTPServer("bed", bed.MCPURL))
	waitReady(t, h, "bed")
	whoami(t, h)
	whoami(t, h)
	st := status(t, h, "bed")
	if st.Auth == nil || st.Auth.Refresh {
		t.Fatalf("auth status = %+v, want signed in without a refresh token", st.Auth)
	}
	const want = "the provider issued no refresh token: you will be asked to sign in again when the access token expires (in "
	if !strings.HasPrefix(st.Auth.Warning, want) {
		t.Errorf("auth status warning = %q, want %q…", st.Auth.Warning, want)
	}
	if n := strings.Count(logs.String(), "issued no refresh token"); n != 1 {
		t.Errorf("the missing refresh token was logged %d times, want once:\n%s", n, logs.String())
	}
}

// Signing out revokes the refresh token, which ends the grant. The
// provider refuses to revoke its JWT access tokens; that is no failure
// and logs no warning.
func TestOIDCBedSignOutRevokes(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{})
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := openHost(t, mcpvisor.Options{SignIn: bedBrowser(t), Logger: log}, oauthHTTPServer("bed", bed.MCPURL))
	waitReady(t, h, "bed")
	whoami(t, h)
	before := strings.Count(bed.ProviderOutput(), "POST /token/revocation")
	if err := h.SignOut(context.Background(), "bed"); err != nil {
		t.Fatalf("SignOut: %v", err)
	}
	if n := strings.Count(bed.ProviderOutput(), "POST /token/revocation") - before; n == 0 {
		t.Errorf("sign-out asked for no revocation")
	}
	out := logs.String()
	if strings.Contains(out, "level=WARN") && strings.Contains(out, "revok") {
		t.Errorf("sign-out warned about revocation:\n%s", out)
	}
	if !strings.Contains(out, `msg="oauth: revoked the refresh token"`) {
		t.Errorf("sign-out did not say what it revoked:\n%s", out)
	}
}

// The config names the server by 127.0.0.1, its metadata by localhost:
// the error the user sees says so, not only a log line.
func TestOIDCBedOriginMismatch(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{})
	configured := strings.Replace(bed.MCPURL, "localhost", "127.0.0.1", 1)
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{SignIn: bedBrowser(t), OnEvent: onEvent}, oauthHTTPServer("bed", configured))
	waitState(t, events, "bed", mcpvisor.StateNeedsAuth, mcpvisor.StateFailed)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := h.Call(ctx, "mcp__bed__whoami", json.RawMessage(`{}`))
	st := status(t, h, "bed")
	seen := st.LastError
	if err != nil {
		seen += "\n" + err.Error()
	}
	if st.Auth != nil {
		seen += "\n" + st.Auth.Error
	}
	t.Logf("the server's error: %s", st.LastError)
	for _, want := range []string{"localhost", "127.0.0.1"} {
		if !strings.Contains(st.LastError, want) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error the user sees does not name %s (server: %q, call: %v; auth status: %q)", want, st.LastError, err, seen)
		}
	}
}
