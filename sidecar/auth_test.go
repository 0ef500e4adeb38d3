package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/internal/mcphttptest"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// protectedMCP is a Streamable HTTP MCP server (mcphttptest) behind an
// OAuth resource check against as: 401 with a Bearer challenge pointing to
// its Protected Resource Metadata (RFC 9728) unless a live token of as's
// for it is presented.
func protectedMCP(t *testing.T, as *oauthtest.AuthServer) string {
	t.Helper()
	m := &mcphttptest.Server{}
	mcphttptest.Start(t, m) // initialises m; its own listener goes unused
	const prm = "/.well-known/oauth-protected-resource/mcp"
	var front *httptest.Server
	front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resource := front.URL + "/mcp"
		switch r.URL.Path {
		case prm:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{as.Issuer()}})
		case "/mcp":
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if _, res, live := as.Validate(tok); !ok || !live || res != resource {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+front.URL+prm+`"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			m.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(front.Close)
	return front.URL + "/mcp"
}

// registerProtected registers server name at a protectedMCP of a new
// authorization server, with OAuth left to discovery and dynamic
// registration, and waits for it to need a sign-in.
func registerProtected(t *testing.T, a *api, name string) *oauthtest.AuthServer {
	t.Helper()
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	// The authorization server listens on loopback too: oauth.allowPrivate.
	sc := mcpvisor.ServerConfig{Name: name, Type: "http", URL: protectedMCP(t, as), AllowPrivate: true, Enabled: true,
		OAuth: &mcpvisor.OAuthConfig{AllowPrivate: true}}
	if err := a.h.Register(context.Background(), sc); err != nil {
		t.Fatalf("Register %s: %v", name, err)
	}
	eventually(t, name+" needs_auth", func() bool {
		st, _, _ := a.serverState(name)
		return st == string(mcpvisor.StateNeedsAuth)
	})
	return as
}

type authView struct {
	Server    string    `json:"server"`
	Grant     string    `json:"grant"`
	Issuer    string    `json:"issuer"`
	SignedIn  bool      `json:"signedIn"`
	NeedsAuth bool      `json:"needsAuth"`
	Scopes    []string  `json:"scopes"`
	Expiry    time.Time `json:"expiry"`
	Pending   bool      `json:"signInPending"`
}

func (a *api) authOf(name string) (authView, bool) {
	a.t.Helper()
	var l struct {
		Auth []authView `json:"auth"`
	}
	r := a.do("GET", "/v1/auth", nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /v1/auth: %d %s", r.status, r.body)
	}
	r.json(a.t, &l)
	for _, v := range l.Auth {
		if v.Server == name {
			return v, true
		}
	}
	return authView{}, false
}

// followSignIn opens url as a browser would: the test authorization server
// redirects at once to the host's loopback listener, which completes the
// sign-in and answers with its "Signed in" page.
func followSignIn(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET the sign-in URL: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the redirect listener answered %d: %s", resp.StatusCode, body)
	}
}

func TestAuthSignInThroughAPI(t *testing.T) {
	m := sidecar.NewMetrics(sidecar.MetricsOptions{})
	a := openAPI(t, sidecar.Options{Metrics: m.Handler()}, mcptest("plain"))
	m.Watch(a.h)
	as := registerProtected(t, a, "remote")
	var bodies []string // every answer, searched for tokens at the end
	do := func(method, path string) response {
		t.Helper()
		r := a.do(method, path, nil)
		bodies = append(bodies, string(r.body))
		return r
	}

	// Errors: unknown server, no OAuth, no token.
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"POST", "/v1/servers/nope/auth", http.StatusNotFound, sidecar.CodeUnknownServer},
		{"DELETE", "/v1/servers/nope/auth", http.StatusNotFound, sidecar.CodeUnknownServer},
		{"POST", "/v1/servers/plain/auth", http.StatusConflict, sidecar.CodeNoSignIn},
		{"DELETE", "/v1/servers/plain/auth", http.StatusConflict, sidecar.CodeNoSignIn},
	} {
		r := do(tc.method, tc.path)
		if r.status != tc.status || r.errorCode(t) != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, r.status, r.body, tc.status, tc.code)
		}
	}
	if r := a.doAuth("POST", "/v1/servers/remote/auth", nil, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("POST /v1/servers/remote/auth without a token: %d", r.status)
	}
	if r := a.doAuth("GET", "/v1/auth", nil, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/auth without a token: %d", r.status)
	}

	v, ok := a.authOf("remote")
	if !ok || v.SignedIn || !v.NeedsAuth || v.Grant != "authorization_code" {
		t.Fatalf("before sign-in: %+v (listed %v)", v, ok)
	}
	if _, ok := a.authOf("plain"); ok {
		t.Error("GET /v1/auth lists the stdio server")
	}
	fams := metricsScrape(t, m)
	if got := metricValue(t, fams, "mcpvisor_server_auth_signed_in", "server=remote"); got != 0 {
		t.Errorf("signed_in before sign-in: %v", got)
	}
	if fam, ok := fams["mcpvisor_server_auth_expiry_seconds"]; ok {
		t.Errorf("an expiry series without a token: %v", fam)
	}
	if fam := fams["mcpvisor_server_auth_signed_in"]; len(fam.GetMetric()) != 1 {
		t.Errorf("signed_in has %d series, want 1 (remote only)", len(fam.GetMetric()))
	}

	r := do("POST", "/v1/servers/remote/auth")
	if r.status != http.StatusOK {
		t.Fatalf("POST /v1/servers/remote/auth: %d %s", r.status, r.body)
	}
	var si sidecar.SignInView
	r.json(t, &si)
	// The URL is the one-time start URL on the host's redirect listener:
	// the CLI puts it on $BROWSER's command line.
	if si.Server != "remote" || !strings.HasPrefix(si.URL, strings.TrimSuffix(si.RedirectURI, "/callback")+"/mcpvisor-sign-in/") ||
		strings.Contains(si.URL, "state=") || !strings.HasPrefix(si.RedirectURI, "http://localhost:") {
		t.Fatalf("sign-in %+v", si)
	}
	if v, _ := a.authOf("remote"); !v.Pending {
		t.Errorf("sign-in not pending after POST: %+v", v)
	}
	followSignIn(t, si.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.h.WaitReady(ctx, "remote"); err != nil {
		t.Fatalf("remote after sign-in: %v", err)
	}
	v, _ = a.authOf("remote")
	if !v.SignedIn || v.NeedsAuth || v.Issuer != as.Issuer() || v.Expiry.IsZero() {
		t.Errorf("after sign-in: %+v", v)
	}
	bodies = append(bodies, string(do("GET", "/v1/auth").body), string(do("GET", "/v1/servers").body))
	fams = metricsScrape(t, m)
	if got := metricValue(t, fams, "mcpvisor_server_auth_signed_in", "server=remote"); got != 1 {
		t.Errorf("signed_in after sign-in: %v", got)
	}
	if got := metricValue(t, fams, "mcpvisor_server_auth_expiry_seconds", "server=remote"); got != float64(v.Expiry.Unix()) {
		t.Errorf("expiry_seconds %v, want %d", got, v.Expiry.Unix())
	}

	r = do("DELETE", "/v1/servers/remote/auth")
	var out authView
	r.json(t, &out)
	if r.status != http.StatusOK || out.Server != "remote" || out.SignedIn {
		t.Errorf("DELETE /v1/servers/remote/auth: %d %s", r.status, r.body)
	}
	if v, _ := a.authOf("remote"); v.SignedIn {
		t.Errorf("still signed in after DELETE: %+v", v)
	}
	// Signed out is needs_auth at once (the inbox's Sign in button), not
	// ready until a call meets the 401.
	if st, _, _ := a.serverState("remote"); st != string(mcpvisor.StateNeedsAuth) {
		t.Errorf("remote is %q after DELETE, want needs_auth", st)
	}

	issued := as.Issued()
	if len(as.Tokens("access")) == 0 {
		t.Fatal("the authorization server issued no access token: nothing was checked")
	}
	clientIDs := map[string]bool{}
	for _, r := range as.Requests("authorize") {
		clientIDs[r.ClientID] = true
	}
	for _, b := range bodies {
		for _, secret := range issued {
			if clientIDs[secret] {
				continue // the client id, public by design
			}
			if strings.Contains(b, secret) {
				t.Errorf("a response holds %q, issued by the authorization server: %s", secret, b)
			}
		}
	}
}

// TestUISignInInBrowser: a server that needs a sign-in shows a Sign in
// button; clicking it opens the authorization URL (here the browser
// "blocks" the new tab, so the page offers it as a link), and once the
// redirect reaches the host the row turns ready over the inbox stream,
// without a reload.
func TestUISignInInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{})
	as := registerProtected(t, a, "remote")
	bctx := browsertest.Start(t, ctx, path)

	row := `Array.from(document.querySelectorAll("#servers tbody tr")).
		find((tr) => tr.cells[0].querySelector("strong").textContent === "remote")`
	waitFor := func(what, expr string) { t.Helper(); waitForServers(t, bctx, what, expr) }
	if err := chromedp.Do(bctx, chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken)); err != nil {
		t.Fatal(err)
	}
	waitFor("remote needs_auth with a Sign in button", fmt.Sprintf(`(() => { const tr = %s;
		return !!tr && tr.cells[1].textContent === "needs_auth" && tr.cells[4].textContent !== "" &&
			!!tr.querySelector("button.sign-in"); })()`, row))

	// A stub that records what the page opens, and blocks it as a pop-up
	// blocker would; the marker shows that the page is never reloaded.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.opened = [];
		window.open = (u, target) => { window.opened.push([u, target]); return null; };
		window.samePage = true`)); err != nil {
		t.Fatal(err)
	}
	clickNow(t, bctx, `#servers button.sign-in`)
	waitFor("the sign-in link", `!!document.querySelector("#servers a.sign-in-url")`)
	opened, err := chromedp.Run(bctx, chromedp.Evaluate[[][]string](`window.opened`))
	if err != nil || len(opened) != 1 || opened[0][1] != "_blank" || !strings.HasPrefix(opened[0][0], "http://localhost:") || !strings.Contains(opened[0][0], "/mcpvisor-sign-in/") {
		t.Fatalf("window.open calls %q (%v), want one of the one-time sign-in URL in _blank", opened, err)
	}
	href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#servers a.sign-in-url").href`))
	if err != nil || href != opened[0][0] {
		t.Fatalf("the link goes to %q (%v), want %q", href, err, opened[0][0])
	}

	followSignIn(t, href)
	waitFor("remote ready and signed in", fmt.Sprintf(`(() => { const tr = %s;
		return !!tr && tr.cells[1].textContent === "ready" &&
			tr.querySelector(".issuer")?.textContent === %q && !!tr.querySelector("button.sign-out") &&
			!tr.querySelector("button.sign-in, a.sign-in-url"); })()`, row, as.Issuer()))
	if same, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.samePage === true`)); err != nil || !same {
		t.Errorf("the page was reloaded (%v)", err)
	}

	// Sign out from the page: the host forgets the token.
	clickNow(t, bctx, `#servers button.sign-out`)
	eventually(t, "signed out", func() bool { v, _ := a.authOf("remote"); return !v.SignedIn })
	// The row says so at once, with its Sign in button back: no call
	// has to meet the 401 first.
	waitFor("remote needs_auth with a Sign in button after sign-out", fmt.Sprintf(`(() => { const tr = %s;
		return !!tr && tr.cells[1].textContent === "needs_auth" && !!tr.querySelector("button.sign-in") &&
			!tr.querySelector("button.sign-out"); })()`, row))
}

// A per-user server through the API: a call names its user, each user
// signs in on their own with ?user=, and a call naming no user is refused.
func TestAuthPerUserThroughAPI(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("plain"))
	as := oauthtest.NewAuthServer(t, oauthtest.ServerOptions{})
	sc := mcpvisor.ServerConfig{Name: "team", Type: "http", URL: protectedMCP(t, as), AllowPrivate: true, Enabled: true,
		OAuth: &mcpvisor.OAuthConfig{PerUser: true, AllowPrivate: true}}
	if err := a.h.Register(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	if r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__team__echo", "arguments": map[string]any{}}); r.status != http.StatusBadRequest {
		t.Fatalf("a call naming no user: %d %s, want 400", r.status, r.body)
	}
	r := a.do("POST", "/v1/servers/team/auth?user=alice", nil)
	if r.status != http.StatusOK {
		t.Fatalf("POST /v1/servers/team/auth?user=alice: %d %s", r.status, r.body)
	}
	var view sidecar.SignInView
	r.json(t, &view)
	followSignIn(t, view.URL)
	r = a.do("POST", "/v1/call", map[string]any{"tool": "mcp__team__echo", "arguments": map[string]any{"x": 1}, "user": "alice"})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `\"x\":1`) {
		t.Fatalf("alice's call: %d %s", r.status, r.body)
	}
	// Bob has not signed in, and nobody is at his browser: his call is
	// refused, alice's token is not lent to him.
	r = a.do("POST", "/v1/call", map[string]any{"tool": "mcp__team__echo", "arguments": map[string]any{}, "user": "bob"})
	if r.status == http.StatusOK {
		t.Fatalf("bob's call succeeded without his own sign-in: %s", r.body)
	}
}
