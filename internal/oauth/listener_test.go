package oauth_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// noFollow is a browser that stops at each redirect.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// hit GETs u without following a redirect; it returns the status and the
// Location.
func hit(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := noFollow.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func ended(f *oauth.Flow) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

func waitEnded(t *testing.T, f *oauth.Flow) {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the flow did not end")
	}
}

func begin(t *testing.T, h *harness, cfg oauth.Config) *oauth.Flow {
	t.Helper()
	a := h.authorizer(cfg, oauth.Options{})
	f, err := a.Begin(context.Background())
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	t.Cleanup(a.Close)
	return f
}

// The URL to open (what goes on $BROWSER's command line) holds neither the
// state nor the PKCE challenge, and the listener takes a redirect only
// after the browser came through it: a local process that read the state
// elsewhere, or guesses, and calls back first with a code of its own is
// refused, as is a wrong state and a second callback.
func TestRedirectListenerRefusesRacingCallbacks(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	f := begin(t, h, oauth.Config{})

	authz, err := url.Parse(f.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	state := authz.Query().Get("state")
	if state == "" {
		t.Fatalf("the authorization URL %q has no state", f.AuthorizationURL)
	}
	for _, secret := range []string{"state=", "code_challenge", state, authz.Query().Get("code_challenge")} {
		if strings.Contains(f.URL, secret) {
			t.Errorf("the URL to open %q holds %q", f.URL, secret)
		}
	}
	if !strings.HasPrefix(f.URL, "http://localhost:") {
		t.Errorf("the URL to open %q is not on the loopback listener", f.URL)
	}

	forged := f.RedirectURI + "?" + url.Values{"state": {state}, "code": {"attacker-code"}}.Encode()
	if code, _ := hit(t, forged); code != http.StatusBadRequest {
		t.Errorf("a callback before the start URL was opened: HTTP %d, want 400", code)
	}
	if ended(f) {
		t.Fatalf("the forged callback ended the flow: %v", f.Err())
	}

	// The person's browser.
	code, loc := hit(t, f.URL)
	if code != http.StatusSeeOther || loc != f.AuthorizationURL {
		t.Fatalf("the start URL: HTTP %d to %q, want 303 to the authorization URL", code, loc)
	}
	wrong := f.RedirectURI + "?" + url.Values{"state": {state + "x"}, "code": {"attacker-code"}}.Encode()
	if code, _ := hit(t, wrong); code != http.StatusBadRequest {
		t.Errorf("a callback with a wrong state: HTTP %d, want 400", code)
	}
	if ended(f) {
		t.Fatalf("the wrong state ended the flow: %v", f.Err())
	}
	code, back := hit(t, loc)
	if code != http.StatusFound || !strings.HasPrefix(back, f.RedirectURI+"?") {
		t.Fatalf("the authorization endpoint: HTTP %d to %q", code, back)
	}
	if code, _ := hit(t, back); code != http.StatusOK {
		t.Fatalf("the browser's callback: HTTP %d, want 200", code)
	}
	waitEnded(t, f)
	if err := f.Err(); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	tokens := h.as.Requests("token")
	if len(tokens) != 1 || tokens[0].Form.Get("code") == "attacker-code" {
		t.Errorf("token requests %+v, want the browser's code only", tokens)
	}
}

// The start URL redirects once. Opened a second time, it says so and ends
// the sign-in: whoever opened it first may be signing in to an account of
// their own.
func TestStartURLOpenedTwiceEndsSignIn(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	f := begin(t, h, oauth.Config{})

	other := strings.TrimSuffix(f.URL, f.URL[len(f.URL)-4:]) + "AAAA"
	if code, _ := hit(t, other); code != http.StatusNotFound {
		t.Errorf("another id: HTTP %d, want 404", code)
	}
	code, first := hit(t, f.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("first visit: HTTP %d, want 303", code)
	}
	if code, loc := hit(t, f.URL); code != http.StatusGone || loc != "" {
		t.Fatalf("second visit: HTTP %d to %q, want 410 and no redirect", code, loc)
	}
	waitEnded(t, f)
	if err := f.Err(); !errors.Is(err, oauth.ErrAuthorization) || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("flow error %v, want ErrAuthorization saying the URL was opened more than once", err)
	}
	// The first visitor's redirect comes back to a listener that is gone,
	// or refuses it: no token is ever asked for.
	_, back := hit(t, first)
	if resp, err := noFollow.Get(back); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the first visitor's callback was accepted")
		}
	}
	if n := len(h.as.Requests("token")); n != 0 {
		t.Errorf("%d token requests, want none", n)
	}
}

// ipv6Loopback reports whether [::1] can be listened on here.
func ipv6Loopback(t *testing.T) bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Logf("no IPv6 loopback here (%v): the [::1] side is not checked", err)
		return false
	}
	ln.Close()
	return true
}

// The listener holds its port on both loopback families, so a browser that
// resolves localhost to ::1 reaches it and no other process can take that
// side.
func TestRedirectListenerBothFamilies(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	f := begin(t, h, oauth.Config{})
	u, _ := url.Parse(f.URL)
	port := u.Port()

	if code, _ := hit(t, "http://127.0.0.1:"+port+"/mcpvisor-sign-in/unknown"); code != http.StatusNotFound {
		t.Errorf("127.0.0.1: HTTP %d, want 404 from the listener", code)
	}
	if ln, err := net.Listen("tcp4", "127.0.0.1:"+port); err == nil {
		ln.Close()
		t.Fatalf("127.0.0.1:%s could be listened on by another: the listener does not hold it", port)
	}
	if !ipv6Loopback(t) {
		return
	}
	if ln, err := net.Listen("tcp6", "[::1]:"+port); err == nil {
		ln.Close()
		t.Fatalf("[::1]:%s could be listened on by another: the listener does not hold it", port)
	}
	code, loc := hit(t, "http://[::1]:"+port+u.Path)
	if code != http.StatusSeeOther || loc != f.AuthorizationURL {
		t.Fatalf("the start URL on [::1]: HTTP %d to %q, want 303 to the authorization URL", code, loc)
	}
}

// A fixed callback port someone else holds on [::1] is an error naming it,
// and the 127.0.0.1 side is given back.
func TestRedirectListenerFixedPortTakenOnIPv6(t *testing.T) {
	if !ipv6Loopback(t) {
		t.Skip("no IPv6 loopback here")
	}
	// A port free on both families, then squatted on [::1].
	var squat net.Listener
	for squat == nil {
		ln4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln4.Addr().(*net.TCPAddr).Port
		ln4.Close()
		squat, _ = net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
	}
	defer squat.Close()
	port := strconv.Itoa(squat.Addr().(*net.TCPAddr).Port)

	h := newHarness(t, oauthtest.ServerOptions{})
	a := h.authorizer(oauth.Config{RedirectURI: "http://localhost:" + port + "/callback"}, oauth.Options{})
	defer a.Close()
	_, err := a.Begin(context.Background())
	if err == nil || !strings.Contains(err.Error(), "[::1]") || !strings.Contains(err.Error(), port) {
		t.Fatalf("Begin = %v, want an error naming [::1] and port %s", err, port)
	}
	ln4, err := net.Listen("tcp4", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("127.0.0.1:%s is still held after the failed Begin: %v", port, err)
	}
	ln4.Close()
}
