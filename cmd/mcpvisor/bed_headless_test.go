package main

import (
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// Sign-in for a person who is not at the machine, against the bed's real
// provider (internal/peers.StartOIDCBed): with a code where it offers the
// device authorization grant, by pasting the redirect back where it does
// not. mcpvisor runs headless (no $BROWSER, no display); the test plays
// the person, on another machine, with a browser that keeps cookies.

var (
	// The provider's user codes are its mask, ****-****, over base-20.
	bedUserCode     = regexp.MustCompile(`^\s+([B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4})$`)
	bedVerification = regexp.MustCompile(`^\s+(http://localhost:\d+/device)$`)
	bedComplete     = regexp.MustCompile(`^\(or open (http://localhost:\d+/device\?user_code=\S+), which holds the code\)$`)
	bedAuthorize    = regexp.MustCompile(`^\s+(http://localhost:\d+/auth\?\S+)$`)

	formAction  = regexp.MustCompile(`<form [^>]*action="([^"]+)"`)
	hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"\s*/?>`)
)

// personBrowser is a browser on the person's own machine: it keeps the
// provider's cookies and follows redirects, except to stopAt (a prefix),
// which it does not load.
func personBrowser(t *testing.T, stopAt string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if stopAt != "" && strings.HasPrefix(req.URL.String(), stopAt) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}}
}

// bedPage reads a 200 answer's body, failing the test on anything else.
func bedPage(t *testing.T, resp *http.Response, err error, what string) string {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d at %s:\n%s", what, resp.StatusCode, resp.Request.URL.Redacted(), b)
	}
	return string(b)
}

// bedSubmit posts the page's form, its hidden fields and extra, as the
// person's browser does, resolving its action against base.
func bedSubmit(t *testing.T, c *http.Client, base *url.URL, body string, extra url.Values, what string) string {
	t.Helper()
	m := formAction.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("%s: the page has no form:\n%s", what, body)
	}
	action, err := base.Parse(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatalf("%s: form action %q: %v", what, m[1], err)
	}
	resp, err := c.PostForm(action.String(), bedFormValues(body, extra))
	return bedPage(t, resp, err, what)
}

// bedFormValues are the page's hidden fields, and extra.
func bedFormValues(body string, extra url.Values) url.Values {
	form := url.Values{}
	for _, h := range hiddenInput.FindAllStringSubmatch(body, -1) {
		form.Set(h[1], html.UnescapeString(h[2]))
	}
	for k, v := range extra {
		form[k] = v
	}
	return form
}

// A headless auth login --device against the real provider: it prints
// the verification URI and the user code; the person opens the URI on
// another machine, enters the code in the provider's form, confirms it,
// and goes through its login and consent; the command, polling, ends
// signed in, with a refresh token, and the Bearer-only server answers a
// call. No authorization request and no redirect reach the host.
//
// Through a sidecar holding the data directory, a plain auth login (no
// flag: no browser can be opened here) chooses the code, as the provider
// offers it, and the sidecar polls; the person opens the verification URI
// that holds the code, and only confirms it. A person who aborts at the
// provider's confirmation gets a failed auth login that says so.
func TestOIDCBedDeviceSignIn(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{Device: true})
	cfg := bedConfig(t, bed)
	signIns := 0 // approved, among the subtests run
	t.Run("command", func(t *testing.T) {
		bedDeviceSignIn(t, bed, typeCode, []string{"--device"}, "--config", cfg, "--data", t.TempDir())
		signIns++
	})
	t.Run("sidecar", func(t *testing.T) {
		common := []string{"--config", cfg, "--data", t.TempDir()}
		sidecar := startServeProcess(t, append([]string{"--log-level", "info"}, common...)...)
		bedDeviceSignIn(t, bed, openComplete, nil, common...)
		signIns++
		if !strings.Contains(sidecar.stderr.String(), "oauth: signed in with a code") {
			t.Errorf("the sidecar did not sign in:\n%s", sidecar.stderr)
		}
	})
	t.Run("aborted", func(t *testing.T) {
		bedDeviceSignIn(t, bed, abortCode, []string{"--device"}, "--config", cfg, "--data", t.TempDir())
	})
	out := bed.ProviderOutput()
	if n := strings.Count(out, "grant success urn:ietf:params:oauth:grant-type:device_code\n"); n != signIns {
		t.Errorf("%d device code exchanges at the provider, want %d:\n%s", n, signIns, out)
	}
	if n := providerLines(bed, "GET /auth"); n != 0 {
		t.Errorf("%d authorization requests at the provider, want none", n)
	}
}

// A personAnswer is what the person on another machine does with the code
// a sign-in printed.
type personAnswer int

const (
	typeCode     personAnswer = iota // types it at the verification URI, confirms
	openComplete                     // opens the verification URI that holds it, confirms
	abortCode                        // types it, then aborts at the confirmation
)

// bedDeviceSignIn runs a headless auth login with flags and answers the
// code it prints as the person does; then checks the command signed in
// (and a call works), or, aborted, failed saying so.
func bedDeviceSignIn(t *testing.T, bed *peers.OIDCBed, answer personAnswer, flags []string, common ...string) {
	t.Helper()
	c := startHeadless(t, slices.Concat([]string{"auth", "login", "bed", "--wait", "20s"}, flags, common)...)
	verification := c.await(t, bedVerification)
	userCode := c.await(t, bedUserCode)
	if !strings.HasPrefix(verification, bed.Issuer+"/") {
		t.Fatalf("the verification URI %q is not the provider's (%s)", verification, bed.Issuer)
	}

	// The person, on another machine.
	browser := personBrowser(t, "")
	var confirm string
	var base *url.URL
	if answer == openComplete {
		uri := c.await(t, bedComplete)
		resp, err := browser.Get(uri)
		// The page posts the code at once, as its script would.
		post := bedPage(t, resp, err, "the complete verification URI")
		base = resp.Request.URL
		confirm = bedSubmit(t, browser, base, post, nil, "the code the complete URI holds")
	} else {
		resp, err := browser.Get(verification)
		input := bedPage(t, resp, err, "the verification URI")
		base = resp.Request.URL
		if !strings.Contains(input, `name="xsrf"`) || !strings.Contains(input, `name="user_code"`) {
			t.Fatalf("the verification page has no user code form:\n%s", input)
		}
		confirm = bedSubmit(t, browser, base, input, url.Values{"user_code": {strings.ToLower(userCode)}}, "entering the user code")
	}
	if !strings.Contains(confirm, `name="confirm"`) || !strings.Contains(confirm, userCode) {
		t.Fatalf("entering the user code did not ask to confirm it:\n%s", confirm)
	}
	if answer == abortCode {
		if aborted := bedSubmit(t, browser, base, confirm, url.Values{"abort": {"yes"}}, "aborting"); !strings.Contains(aborted, "interrupted") {
			t.Errorf("aborting did not end on the provider's page saying so:\n%s", aborted)
		}
		if exit := c.wait(t); exit == 0 || !strings.Contains(c.stderr.String(), "refused") {
			t.Fatalf("auth login aborted at the provider: exit %d, stderr %q; want a failure saying the sign-in was refused", exit, c.stderr.String())
		}
		return
	}
	done := bedSubmit(t, browser, base, confirm, nil, "confirming the user code")
	if !strings.Contains(done, "Sign-in Success") {
		t.Fatalf("the sign-in did not end on the provider's success page:\n%s", done)
	}

	if exit := c.wait(t); exit != 0 || !strings.Contains(c.stdout.String(), "signed in to bed") {
		t.Fatalf("auth login %s: exit %d, stdout %q, stderr %q", flags, exit, c.stdout.String(), c.stderr.String())
	}
	if scopes := bedWhoami(t, common...); !slices.Contains(scopes, "mcp:tools") {
		t.Errorf("whoami scopes = %q, want mcp:tools", scopes)
	}
	if st := bedAuth(t, common...); !st.SignedIn || st.TokenType != "Bearer" || !st.Refresh || st.Issuer != bed.Issuer {
		t.Errorf("auth status = %+v, want signed in at %s, Bearer, refreshable", st, bed.Issuer)
	}
}

// A headless auth login --no-browser where the provider offers no device
// flow: it prints the authorization URL; the person's browser on another
// machine follows it through the provider's login and consent up to the
// redirect to mcpvisor's loopback address, which it cannot load; the
// person pastes that address back, and the command ends signed in.
//
// Through a sidecar holding the data directory, a plain auth login (no
// flag: no browser can be opened here) finds no device flow and asks for
// the paste, which it hands to the sidecar.
func TestOIDCBedPasteBack(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{})
	cfg := bedConfig(t, bed)
	signIns := 0 // among the subtests run
	t.Run("command", func(t *testing.T) {
		bedPasteBack(t, bed, []string{"--no-browser"}, "--config", cfg, "--data", t.TempDir())
		signIns++
	})
	t.Run("sidecar", func(t *testing.T) {
		common := []string{"--config", cfg, "--data", t.TempDir()}
		sidecar := startServeProcess(t, append([]string{"--log-level", "info"}, common...)...)
		bedPasteBack(t, bed, nil, common...)
		signIns++
		if !strings.Contains(sidecar.stderr.String(), "oauth: signed in") {
			t.Errorf("the sidecar did not sign in:\n%s", sidecar.stderr)
		}
	})
	if n := providerLines(bed, "GET /auth"); n != signIns {
		t.Errorf("%d authorization requests at the provider, want %d", n, signIns)
	}
	if n := providerLines(bed, "POST /device/auth"); n != 0 {
		t.Errorf("%d device authorization requests at a provider that offers none", n)
	}
}

func bedPasteBack(t *testing.T, bed *peers.OIDCBed, flags []string, common ...string) {
	t.Helper()
	c := startHeadless(t, slices.Concat([]string{"auth", "login", "bed", "--wait", "20s"}, flags, common)...)
	authorization := c.await(t, bedAuthorize)
	au, err := url.Parse(authorization)
	if err != nil {
		t.Fatal(err)
	}
	redirect := au.Query().Get("redirect_uri")
	if !strings.HasPrefix(authorization, bed.Issuer+"/auth?") || !loopbackRedirect(redirect) {
		t.Fatalf("authorization URL %q, redirect URI %q; want the provider's, and a loopback redirect", authorization, redirect)
	}
	if q := au.Query(); !strings.Contains(" "+q.Get("scope")+" ", " offline_access ") || q.Get("prompt") != "consent" {
		t.Errorf("the authorization URL asks scope %q, prompt %q; want offline_access with consent", q.Get("scope"), q.Get("prompt"))
	}

	browser := personBrowser(t, redirect)
	resp, err := browser.Get(authorization)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || !strings.HasPrefix(loc, redirect+"?") {
		t.Fatalf("the provider ended with HTTP %d, Location %q; want the redirect to %s", resp.StatusCode, loc, redirect)
	}
	if _, err := io.WriteString(c.stdin, loc+"\n"); err != nil {
		t.Fatal(err)
	}
	if exit := c.wait(t); exit != 0 || !strings.Contains(c.stdout.String(), "signed in to bed") {
		t.Fatalf("auth login %s: exit %d, stdout %q, stderr %q", flags, exit, c.stdout.String(), c.stderr.String())
	}
	if scopes := bedWhoami(t, common...); !slices.Contains(scopes, "mcp:tools") {
		t.Errorf("whoami scopes = %q, want mcp:tools", scopes)
	}
	if st := bedAuth(t, common...); !st.SignedIn || st.TokenType != "Bearer" || !st.Refresh {
		t.Errorf("auth status = %+v, want signed in, Bearer, refreshable", st)
	}
}
