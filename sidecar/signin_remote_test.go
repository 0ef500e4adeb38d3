package sidecar_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// registerProtectedAt is registerProtected with an authorization server
// of options so.
func registerProtectedAt(t *testing.T, a *api, name string, so oauthtest.ServerOptions) *oauthtest.AuthServer {
	t.Helper()
	as := oauthtest.NewAuthServer(t, so)
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

// redirectOf follows an authorization URL up to its redirect, as a browser
// on another machine that cannot load the host's loopback address: the
// address it ends on.
func redirectOf(t *testing.T, authorization string) string {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authorization)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorization answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// A person away from the sidecar: ?method=device hands back a code where
// the authorization server offers one (409 no_device_sign_in where not),
// and a sign-in's redirect address can be pasted back to
// /auth/redirect, whose state is checked and spent.
func TestAuthAwayThroughAPI(t *testing.T) {
	a := openAPI(t, sidecar.Options{})
	dev := registerProtectedAt(t, a, "dev", oauthtest.ServerOptions{Device: true, DeviceInterval: 1})
	registerProtectedAt(t, a, "web", oauthtest.ServerOptions{})

	for _, tc := range []struct {
		path, code string
		status     int
	}{
		{"/v1/servers/web/auth?method=device", sidecar.CodeNoDeviceSignIn, http.StatusConflict},
		{"/v1/servers/dev/auth?method=carrier-pigeon", sidecar.CodeInvalidRequest, http.StatusBadRequest},
	} {
		if r := a.do("POST", tc.path, nil); r.status != tc.status || r.errorCode(t) != tc.code {
			t.Errorf("POST %s: %d %s; want %d %s", tc.path, r.status, r.body, tc.status, tc.code)
		}
	}

	r := a.do("POST", "/v1/servers/dev/auth?method=device", nil)
	var si sidecar.SignInView
	r.json(t, &si)
	if r.status != http.StatusOK || si.Device == nil || si.Device.UserCode == "" || !strings.HasPrefix(si.URL, dev.Issuer()+"/device") {
		t.Fatalf("POST ?method=device: %d %s", r.status, r.body)
	}
	if v, _ := a.authOf("dev"); !v.Pending {
		t.Errorf("dev not pending while the code waits: %+v", v)
	}
	dev.DecideDevice(si.Device.UserCode, oauthtest.DeviceApprove)
	eventually(t, "dev ready after the code is approved", func() bool {
		st, _, _ := a.serverState("dev")
		return st == string(mcpvisor.StateReady)
	})

	r = a.do("POST", "/v1/servers/web/auth?method=paste", nil)
	r.json(t, &si)
	if r.status != http.StatusOK || si.AuthorizationURL == "" || !strings.Contains(si.AuthorizationURL, "state=") {
		t.Fatalf("POST auth: %d %s", r.status, r.body)
	}
	loc := redirectOf(t, si.AuthorizationURL)
	u, _ := url.Parse(loc)
	q := u.Query()
	q.Set("state", "forged")
	forged := *u
	forged.RawQuery = q.Encode()
	for _, bad := range []string{forged.String(), "https://example.com/nothing", "::"} {
		if r := a.do("POST", "/v1/servers/web/auth/redirect", sidecar.RedirectPaste{URL: bad}); r.status != http.StatusBadRequest {
			t.Errorf("pasting %q: %d %s; want 400", bad, r.status, r.body)
		}
	}
	if r := a.doAuth("POST", "/v1/servers/web/auth/redirect", sidecar.RedirectPaste{URL: loc}, "Bearer "+testGatewayToken, nil); r.status != http.StatusForbidden {
		t.Errorf("pasting with the gateway token: %d; want 403", r.status)
	}
	if r := a.do("POST", "/v1/servers/web/auth/redirect", sidecar.RedirectPaste{URL: loc}); r.status != http.StatusOK {
		t.Fatalf("pasting the redirect: %d %s", r.status, r.body)
	}
	if v, _ := a.authOf("web"); !v.SignedIn {
		t.Errorf("web not signed in after the paste: %+v", v)
	}
	if r := a.do("POST", "/v1/servers/web/auth/redirect", sidecar.RedirectPaste{URL: loc}); r.status != http.StatusBadRequest {
		t.Errorf("pasting the same redirect again: %d %s; want 400 (the state is spent)", r.status, r.body)
	}
	eventually(t, "web ready", func() bool {
		st, _, _ := a.serverState("web")
		return st == string(mcpvisor.StateReady)
	})
}

// The inbox page's "Sign in with a code" shows the user code and where to
// enter it; once the person approves, the server is signed in.
func TestUISignInWithCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{})
	as := registerProtectedAt(t, a, "remote", oauthtest.ServerOptions{Device: true, DeviceInterval: 1})
	bctx := browsertest.Start(t, ctx, path)
	row := `Array.from(document.querySelectorAll("#servers tbody tr")).
		find((tr) => tr.cells[0].querySelector("strong").textContent === "remote")`
	waitFor := func(what, expr string) { t.Helper(); waitForServers(t, bctx, what, expr) }
	if err := chromedp.Do(bctx, chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken)); err != nil {
		t.Fatal(err)
	}
	waitFor("a Sign in with a code button", fmt.Sprintf(`(() => { const tr = %s; return !!tr && !!tr.querySelector("button.sign-in-code"); })()`, row))
	clickNow(t, bctx, `#servers button.sign-in-code`)
	waitFor("the user code", `!!document.querySelector("#servers .user-code")`)
	code, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#servers .user-code").textContent`))
	if err != nil || !as.DecideDevice(code, oauthtest.DeviceApprove) {
		t.Fatalf("the page shows code %q (%v), which the authorization server did not issue", code, err)
	}
	waitFor("remote ready and signed in", fmt.Sprintf(`(() => { const tr = %s;
		return !!tr && tr.cells[1].textContent === "ready" && tr.querySelector(".issuer")?.textContent === %q &&
			!tr.querySelector(".user-code"); })()`, row, as.Issuer()))
}
