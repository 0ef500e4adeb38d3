package mcpvisor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"go.uber.org/goleak"
)

// oauthServer is an MCP server (mcphttptest) behind a protected resource
// whose authorization server is as: every request needs a live token of
// as's for it. It returns the MCP endpoint's URL.
func oauthServer(t *testing.T, as *oauthtest.AuthServer) (*oauthtest.Resource, string) {
	t.Helper()
	backend := mcphttptest.Start(t, &mcphttptest.Server{})
	target, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // SSE replies as they come
	// A connection per request: no idle connection of the test's own
	// outlives the test (TestOAuthCloseEndsSignIn counts goroutines).
	proxy.Transport = &http.Transport{DisableKeepAlives: true}
	res := oauthtest.NewResource(t, as)
	res.Next = http.StripPrefix("/mcp", proxy)
	return res, res.MCPURL()
}

// oauthHTTPServer is httpServer for a server behind oauthServer: its
// authorization server listens on another loopback port, which
// oauth.allowPrivate lets the host reach.
func oauthHTTPServer(name, url string) mcpvisor.ServerConfig {
	sc := httpServer(name, url)
	sc.OAuth = &mcpvisor.OAuthConfig{AllowPrivate: true}
	return sc
}

// browse is a person's browser: it opens u and follows every redirect, to
// the host's loopback listener at the end.
func browse(t *testing.T, u string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("browser: the redirect ended in HTTP %d", resp.StatusCode)
	}
}

func TestOAuthNeedsAuthThenSignIn(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	_, mcpURL := oauthServer(t, as)
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, oauthHTTPServer("web", mcpURL))

	// The 401 parks the server: no restarts, no backoff.
	waitState(t, events, "web", mcpvisor.StateNeedsAuth)
	st := status(t, h, "web")
	if st.Restarts != 0 || st.Auth == nil || !st.Auth.NeedsAuth || st.Auth.SignedIn {
		t.Fatalf("status after the 401 = restarts %d, auth %+v", st.Restarts, st.Auth)
	}
	if !strings.Contains(st.LastError, "sign-in") {
		t.Errorf("LastError %q does not say a sign-in is needed", st.LastError)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.Call(ctx, "mcp__web__echo", json.RawMessage(`{}`)); err == nil {
		t.Fatal("a call to a server that needs sign-in succeeded")
	}

	signIn, err := h.BeginSignIn(context.Background(), "web")
	if err != nil {
		t.Fatalf("BeginSignIn: %v", err)
	}
	if !strings.HasPrefix(signIn.RedirectURI, "http://localhost:") {
		t.Errorf("redirect URI %q is not a loopback one", signIn.RedirectURI)
	}
	browse(t, signIn.URL)
	<-signIn.Done()
	if err := signIn.Err(); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	waitReady(t, h, "web")
	if res := call(t, h, "mcp__web__echo", `{"x":1}`); res.Wire() != `{"x":1}` {
		t.Errorf("echo = %q", res.Wire())
	}
	st = status(t, h, "web")
	if st.Auth == nil || !st.Auth.SignedIn || st.Auth.Issuer != as.Issuer() || st.Auth.Client != "dcr" {
		t.Errorf("auth status after sign-in = %+v", st.Auth)
	}
	if n := len(as.Requests("register")); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
}

// A host whose embedder drives the browser step signs in by itself, and
// a host opened again on the same data directory (and key) uses the
// stored token without asking anyone.
func TestOAuthSignInHookAndStoredToken(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	_, mcpURL := oauthServer(t, as)
	dir := t.TempDir()
	key := bytes.Repeat([]byte{7}, 32)
	var prompts []mcpvisor.SignInPrompt
	var mu sync.Mutex
	signIn := func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		mu.Lock()
		prompts = append(prompts, p)
		mu.Unlock()
		// The platform's user signs in; the redirect reaches the platform,
		// which hands its query back.
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(p.AuthorizationURL)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, err
		}
		return loc.Query(), nil
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{DataDir: dir, SignIn: signIn, SecretKey: key, Logger: logger, OnEvent: onEvent}, oauthHTTPServer("web", mcpURL))
	waitReady(t, h, "web")
	call(t, h, "mcp__web__echo", `{}`)
	if len(prompts) != 1 || prompts[0].Server != "web" {
		t.Fatalf("prompts = %+v, want one for web", prompts)
	}
	if st := status(t, h, "web"); st.Restarts != 0 {
		// The 401 parked it and the sign-in started it again: no failure
		// counts against its restart budget.
		t.Errorf("restarts = %d, want 0", st.Restarts)
	}
	statusJSON, _ := json.Marshal(h.Status())
	authJSON, _ := json.Marshal(h.AuthStatuses())
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// Nothing but the (encrypted) secret store holds a token or the
	// client's secret: not the journal, the logs (at debug level), the
	// status or the events.
	secrets := as.Issued()
	if len(secrets) < 2 {
		t.Fatalf("the authorization server issued %d secrets, want a token and a refresh token at least", len(secrets))
	}
	var evText strings.Builder
	for len(events) > 0 {
		b, _ := json.Marshal(<-events)
		evText.Write(b)
	}
	for name, text := range map[string]string{"logs": logs.String(), "status": string(statusJSON), "auth status": string(authJSON), "events": evText.String()} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the %s hold a token or secret", name)
			}
		}
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a token or secret", strings.TrimPrefix(path, dir))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "secrets.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets.json: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}

	// Without the key the store does not open; with it, the token serves.
	if _, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler), LookupEnv: func(string) (string, bool) { return "", false }}); err == nil {
		t.Error("the host opened an encrypted secret store without its key")
	}
	authorizations := len(as.Requests("authorize"))
	h2 := openHost(t, mcpvisor.Options{DataDir: dir, SecretKey: key}, oauthHTTPServer("web", mcpURL))
	waitReady(t, h2, "web")
	call(t, h2, "mcp__web__echo", `{}`)
	if n := len(as.Requests("authorize")); n != authorizations {
		t.Errorf("the reopened host asked for authorization again (%d → %d)", authorizations, n)
	}
}

// A revoked token that cannot be refreshed parks the server again with a
// visible reason; SignOut forgets the token.
func TestOAuthRevokedAndSignOut(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	_, mcpURL := oauthServer(t, as)
	onEvent, events := eventSink()
	var signIns sync.WaitGroup
	browser := func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		signIns.Add(1)
		defer signIns.Done()
		browse(t, p.URL)
		return nil, nil // the loopback listener got the redirect
	}
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, oauthHTTPServer("web", mcpURL))
	waitState(t, events, "web", mcpvisor.StateNeedsAuth)
	if err := h.SignInWith(context.Background(), "web", browser); err != nil {
		t.Fatalf("SignInWith: %v", err)
	}
	waitReady(t, h, "web")
	call(t, h, "mcp__web__echo", `{}`)

	as.RevokeAll()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.Call(ctx, "mcp__web__echo", json.RawMessage(`{}`)); err == nil {
		t.Fatal("a call with a revoked token succeeded")
	}
	waitState(t, events, "web", mcpvisor.StateNeedsAuth)
	st := status(t, h, "web")
	if st.Auth == nil || st.Auth.SignedIn || st.Auth.Error == "" {
		t.Errorf("auth status after revocation = %+v; want signed out with the refresh failure", st.Auth)
	}

	if err := h.SignOut(context.Background(), "web"); err != nil {
		t.Fatal(err)
	}
	if err := h.SignOut(context.Background(), "nope"); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("SignOut(nope) = %v, want ErrUnknownServer", err)
	}
}

// Signing out parks a signed-in server in needs_auth at once, with no
// call to find out: its status and its state event say so. A server whose resource never asked for a token
// stays ready through a sign-out.
func TestOAuthSignOutNeedsAuthAtOnce(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	_, mcpURL := oauthServer(t, as)
	open := mcphttptest.Start(t, &mcphttptest.Server{})
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, oauthHTTPServer("web", mcpURL), httpServer("open", open.URL))
	waitState(t, events, "web", mcpvisor.StateNeedsAuth)
	if err := h.SignInWith(context.Background(), "web", func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		browse(t, p.URL)
		return nil, nil
	}); err != nil {
		t.Fatalf("SignInWith: %v", err)
	}
	waitReady(t, h, "web", "open")
	call(t, h, "mcp__web__echo", `{}`)
	tokens := len(as.Requests("token"))

	if err := h.SignOut(context.Background(), "web"); err != nil {
		t.Fatalf("SignOut: %v", err)
	}
	st := status(t, h, "web") // SignOut returns once the server is parked
	waitState(t, events, "web", mcpvisor.StateNeedsAuth)
	if st.State != mcpvisor.StateNeedsAuth || st.Auth == nil || st.Auth.SignedIn || !strings.Contains(st.LastError, "signed out") {
		t.Errorf("status after sign-out = %s (%q), auth %+v; want needs_auth, signed out", st.State, st.LastError, st.Auth)
	}
	if n := len(as.Requests("token")); n != tokens {
		t.Errorf("the sign-out asked for %d tokens", n-tokens)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.Call(ctx, "mcp__web__echo", json.RawMessage(`{}`)); !errors.Is(err, mcpvisor.ErrNeedsAuth) {
		t.Errorf("a call after sign-out = %v, want ErrNeedsAuth", err)
	}

	// The open server has an authorizer too, and no token: its sign-out
	// changes nothing. The call after it is handled after the sign-out's
	// news, by the same server actor.
	if err := h.SignOut(context.Background(), "open"); err != nil {
		t.Fatalf("SignOut(open): %v", err)
	}
	call(t, h, "mcp__open__echo", `{}`)
	if st := status(t, h, "open"); st.State != mcpvisor.StateReady {
		t.Errorf("open after its sign-out is %s, want ready", st.State)
	}
}

// Each platform user of a per-user server has their own sign-in, token
// and connection; a call that names no user is refused, and one user's
// sign-out leaves the other's calls alone.
func TestOAuthPerUser(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	res, mcpURL := oauthServer(t, as)
	var mu sync.Mutex
	prompted := map[string]int{}
	signIn := func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		mu.Lock()
		prompted[p.User]++
		mu.Unlock()
		if p.User == "" {
			return nil, errors.New("the host itself has no browser")
		}
		browse(t, p.URL)
		return nil, nil
	}
	sc := oauthHTTPServer("web", mcpURL)
	sc.OAuth.PerUser = true
	h := openHost(t, mcpvisor.Options{SignIn: signIn}, sc)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.Call(ctx, "mcp__web__echo", json.RawMessage(`{}`)); !errors.Is(err, mcpvisor.ErrNoUser) {
		t.Fatalf("a call naming no user = %v, want ErrNoUser", err)
	}
	callAs := func(user string) error {
		_, err := h.CallWith(ctx, "mcp__web__echo", json.RawMessage(`{"u":"`+user+`"}`), mcpvisor.CallOptions{User: user})
		return err
	}
	for _, user := range []string{"alice", "bob", "alice"} {
		if err := callAs(user); err != nil {
			t.Fatalf("call as %s: %v", user, err)
		}
	}
	if prompted["alice"] != 1 || prompted["bob"] != 1 {
		t.Errorf("sign-ins %v, want one each for alice and bob", prompted)
	}
	// Two users, two tokens, never crossed.
	seen := map[string]bool{}
	for _, a := range res.Authorizations() {
		if a != "" {
			seen[a] = true
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d distinct tokens reached the server, want 2 (one per user)", len(seen))
	}
	// The instances are not servers of their own in the status, and their
	// names do not hold the user ids.
	for _, st := range h.Status() {
		if st.Name != "web" {
			t.Errorf("status lists %q", st.Name)
		}
	}
	var users []string
	for _, st := range h.AuthStatuses() {
		users = append(users, st.User)
		if st.User != "" && (!st.SignedIn || st.Server != "web") {
			t.Errorf("auth status of %s = %+v", st.User, st)
		}
	}
	if strings.Join(users, ",") != ",alice,bob" {
		t.Errorf("auth statuses for users %q, want the host's, alice's and bob's", users)
	}

	// Alice signs out: her next call needs her sign-in again (and gets
	// it from the hook); bob's token is untouched.
	if err := h.SignOutUser(ctx, "web", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := callAs("bob"); err != nil {
		t.Fatalf("bob after alice signed out: %v", err)
	}
	if prompted["bob"] != 1 {
		t.Errorf("bob was asked to sign in again")
	}

	// Disabling the server stops every user's instance with it.
	if err := h.SetEnabled(ctx, "web", false); err != nil {
		t.Fatal(err)
	}
	if err := callAs("bob"); !errors.Is(err, mcpvisor.ErrUnavailable) {
		t.Errorf("bob's call to a disabled server = %v, want ErrUnavailable", err)
	}
}

// Against a third-party peer: the official TypeScript SDK's example
// server with its own OAuth authorization server (dynamic registration,
// PKCE, tokens bound to the resource), signed in through the hook.
func TestOAuthTypeScriptSDKServer(t *testing.T) {
	mcpURL := peers.SDKOAuthServer(t)
	signIn := func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		browse(t, p.URL)
		return nil, nil
	}
	h := openHost(t, mcpvisor.Options{SignIn: signIn}, oauthHTTPServer("sdk", mcpURL)) // its authorization server has a port of its own
	waitReady(t, h, "sdk")
	res := call(t, h, "mcp__sdk__greet", `{"name":"mcpvisor"}`)
	if !strings.Contains(res.Wire(), "Hello, mcpvisor") {
		t.Errorf("greet = %q", res.Wire())
	}
	st := status(t, h, "sdk")
	if st.Auth == nil || !st.Auth.SignedIn || st.Auth.Client != "dcr" || st.Restarts != 0 {
		t.Errorf("status = restarts %d, auth %+v", st.Restarts, st.Auth)
	}
}

// Claude Code's headersHelper: the command's headers reach the server,
// and a 401 runs it again (here: it hands out the next token).
func TestHeadersHelper(t *testing.T) {
	backend := mcphttptest.Start(t, &mcphttptest.Server{})
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	valid := "Bearer two"
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		ok := r.Header.Get("Authorization") == valid
		mu.Unlock()
		if !ok {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// Each run prints the next token: "one", then "two".
	counter := filepath.Join(t.TempDir(), "n")
	script := `n=$(cat ` + counter + ` 2>/dev/null || echo 0); n=$((n+1)); echo $n > ` + counter + `; ` +
		`if [ $n = 1 ]; then t=one; else t=two; fi; printf '{"Authorization": "Bearer %s", "X-Team": "a"}' $t`
	sc := httpServer("helped", srv.URL)
	sc.HeadersHelper = script
	h := openHost(t, mcpvisor.Options{}, sc)
	waitReady(t, h, "helped")
	call(t, h, "mcp__helped__echo", `{}`)
	if st := status(t, h, "helped"); st.Auth != nil {
		t.Errorf("a server with a headers helper got an OAuth authorizer: %+v", st.Auth)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0] != "Bearer one" || seen[len(seen)-1] != "Bearer two" {
		t.Errorf("Authorization headers seen: %q; want the first run's, then the second's after the 401", seen)
	}
}

// Closing the host ends a sign-in in progress: the hook's context is
// cancelled, its loopback listener closes, and nothing is left running.
func TestOAuthCloseEndsSignIn(t *testing.T) {
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	_, mcpURL := oauthServer(t, as)
	before := goleak.IgnoreCurrent() // the servers above stay until the test ends
	started := make(chan string, 1)
	cancelled := make(chan struct{})
	signIn := func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		started <- p.RedirectURI
		<-ctx.Done() // the person never comes back
		close(cancelled)
		return nil, ctx.Err()
	}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
		DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), SignIn: signIn,
		Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{oauthHTTPServer("web", mcpURL)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	redirect := <-started
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	<-cancelled
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := c.Get(redirect); err == nil {
		resp.Body.Close()
		t.Errorf("the loopback listener %s still answers after Close", redirect)
	}
	// The test servers' side of the host's closed connections ends too.
	goleak.VerifyNone(t, before)
}
