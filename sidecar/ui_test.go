package sidecar_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

func TestUIServesStaticFilesWithoutToken(t *testing.T) {
	a := openAPI(t, sidecar.Options{})
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html", `<script src="inbox.js"`},
		{"/ui/inbox.js", "text/javascript", "mcpvisorUI.session"},
		{"/ui/inbox.css", "text/css", ".card"},
		{"/ui/ops.html", "text/html", `<script src="ops.js"`},
		{"/ui/ops.js", "text/javascript", "mcpvisorUI.session"},
		{"/ui/session.js", "text/javascript", "Authorization"},
		{"/ui/ops.css", "text/css", ".srv"},
	} {
		r := a.doAuth("GET", tc.path, nil, "", nil)
		if r.status != http.StatusOK {
			t.Errorf("GET %s without a token: %d", tc.path, r.status)
			continue
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.contentType)
		}
		if !strings.Contains(string(r.body), tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") ||
			!strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
	}
	if r := a.doAuth("GET", "/ui/nope.js", nil, "", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /ui/nope.js: %d", r.status)
	}
	// The page's data still needs the token.
	if r := a.doAuth("GET", "/v1/elicitations", nil, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/elicitations without a token: %d", r.status)
	}
}

// TestUIRendersNoHTMLFromData keeps server-provided text out of the HTML
// parser: the script builds nodes and sets textContent only.
func TestUIRendersNoHTMLFromData(t *testing.T) {
	for _, name := range []string{"session.js", "inbox.js", "ops.js"} {
		js, err := os.ReadFile(filepath.Join("ui", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(string(js), bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
}

func TestUIAnswersPasswordElicitationInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{}, mcptest("vault"))
	bctx := browsertest.Start(t, ctx, path)

	const password = "s3cret-pw"
	sum := sha256.Sum256([]byte(password))
	args, _ := json.Marshal(map[string]string{"expect_sha256": hex.EncodeToString(sum[:])})
	type outcome struct {
		res *mcpvisor.Result
		err error
	}
	done := make(chan outcome, 1)
	var calls sync.WaitGroup
	callCtx, cancelCall := context.WithCancel(ctx)
	t.Cleanup(func() { cancelCall(); calls.Wait() }) // before the Host closes
	// A model's call through a session: the card says which.
	sess := a.h.Session("claude-code-7f3a", "")
	if err := sess.Activate(ctx, "vault"); err != nil {
		t.Fatal(err)
	}
	calls.Go(func() {
		res, err := sess.Call(callCtx, "mcp__vault__login", args)
		done <- outcome{res, err}
	})

	field := chromedp.CSS(`form.elicitation input[name="password"]`)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(field),
		chromedp.WaitVisible(chromedp.CSS(`#servers tbody tr`)),
	); err != nil {
		t.Fatalf("the password field never showed: %v", err)
	}
	typ, err := chromedp.Run(bctx, chromedp.AttributeValue(field, "type"))
	if err != nil || typ.Value != "password" {
		t.Fatalf("the sensitive field's type is %q (%v), want password", typ.Value, err)
	}
	for sel, want := range map[string]string{
		`form.elicitation .server`:          "vault",
		`form.elicitation .caller .tool`:    "mcp__vault__login",
		`form.elicitation .caller .session`: "claude-code-7f3a",
		`form.elicitation .caller .call-id`: "-",
		`form.elicitation .message`:         "Password for mcptest",
		`#servers tbody tr`:                 "vault",
	} {
		got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil || strings.Contains(loc, testToken) {
		t.Errorf("the token stays in the address bar: %q (%v)", loc, err)
	}

	if err := chromedp.Do(bctx, chromedp.SendKeys(field, password)); err != nil {
		t.Fatalf("typing the password: %v", err)
	}
	// The screenshot shows the form with the masked field, before it is sent.
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Saved with the test's files always; over the README's picture
	// (docs/inbox.png) when MCPVISOR_UPDATE_SCREENSHOT=1, so an ordinary
	// test run leaves the checkout clean.
	dsts := []string{filepath.Join(t.TempDir(), "inbox.png")}
	if os.Getenv("MCPVISOR_UPDATE_SCREENSHOT") == "1" {
		dsts = append(dsts, filepath.Join("..", "docs", "inbox.png"))
	}
	for _, dst := range dsts {
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Errorf("saving the screenshot: %v", err)
		} else {
			t.Logf("screenshot: %s", dst)
		}
	}

	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`form.elicitation button.accept`))); err != nil {
		t.Fatalf("clicking Accept: %v", err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("the login call did not return after Accept")
	}
	if o.err != nil {
		t.Fatalf("login call: %v", o.err)
	}
	if got := o.res.Wire(); got != "login ok" || o.res.IsError {
		t.Fatalf("login call returned %q (is_error %v), want login ok", got, o.res.IsError)
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(`form.elicitation`))); err != nil {
		t.Errorf("the answered request stays on the page: %v", err)
	}
}

func TestUILoginFormInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	bctx := browsertest.Start(t, ctx, path)

	tokenField := chromedp.CSS(`#token-input`)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/"),
		chromedp.WaitVisible(tokenField),
	); err != nil {
		t.Fatalf("no login form without a token: %v", err)
	}
	if typ, err := chromedp.Run(bctx, chromedp.AttributeValue(tokenField, "type")); err != nil || typ.Value != "password" {
		t.Errorf("the token input's type is %q (%v), want password", typ.Value, err)
	}

	// A wrong token is refused by the API: the form comes back with a reason.
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(tokenField, "wrong-token"),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#login-error`)),
		chromedp.WaitVisible(tokenField),
	); err != nil {
		t.Fatalf("wrong token: %v", err)
	}
	if msg, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#login-error`))); err != nil || !strings.Contains(msg, "refused") {
		t.Errorf("login error %q (%v)", msg, err)
	}

	if err := chromedp.Do(bctx,
		chromedp.SendKeys(tokenField, testToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#servers tbody tr`)),
	); err != nil {
		t.Fatalf("right token: %v", err)
	}
	for sel, want := range map[string]string{
		`#servers tbody tr td:nth-child(1)`: "t",
		`#servers tbody tr td:nth-child(2)`: "ready",
		`#servers tbody tr td:nth-child(3)`: "0",
	} {
		if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))); err != nil || strings.TrimSpace(got) != want {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	stored, err := chromedp.Run(bctx, chromedp.Evaluate[string](`sessionStorage.getItem("mcpvisor.token")`))
	if err != nil || stored != testToken {
		t.Errorf("sessionStorage token %q (%v)", stored, err)
	}
}

// askInBrowser calls the mcptest tool ask with args in the background and
// returns a channel with its structured answer.
func askInBrowser(t *testing.T, ctx context.Context, a *api, tool string, args map[string]any) <-chan string {
	t.Helper()
	raw, _ := json.Marshal(args)
	done := make(chan string, 1)
	var calls sync.WaitGroup
	callCtx, cancelCall := context.WithCancel(ctx)
	t.Cleanup(func() { cancelCall(); calls.Wait() })
	calls.Go(func() {
		res, err := a.h.Call(callCtx, tool, raw)
		switch {
		case err != nil:
			done <- "error: " + err.Error()
		case res.IsError:
			done <- "tool error: " + res.Wire()
		default:
			done <- string(res.JSON)
		}
	})
	return done
}

func answer(t *testing.T, ctx context.Context, done <-chan string) map[string]any {
	t.Helper()
	select {
	case got := <-done:
		var v map[string]any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Fatalf("the call returned %s", got)
		}
		return v
	case <-ctx.Done():
		t.Fatal("the call did not return after the answer")
		return nil
	}
}

func TestUIFormFieldsInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	bctx := browsertest.Start(t, ctx, path)

	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name":   map[string]any{"type": "string", "title": "Name", "default": "<b>ada</b>"},
		"age":    map[string]any{"type": "integer", "default": 36},
		"ratio":  map[string]any{"type": "number"},
		"agree":  map[string]any{"type": "boolean", "default": true},
		"color":  map[string]any{"type": "string", "enum": []string{"red", "green", "blue"}, "default": "green"},
		"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"a", "b", "c"}}, "default": []string{"a"}},
		"pin":    map[string]any{"type": "string", "format": "password", "default": "0000"},
		"remark": map[string]any{"type": "string"},
	}, "required": []string{"name", "pin"}}
	done := askInBrowser(t, ctx, a, "mcp__t__ask", map[string]any{"message": "Fill <i>this</i> in", "schema": schema})

	in := func(name string) chromedp.CSS { return chromedp.CSS(`form.elicitation [name="` + name + `"]`) }
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(in("pin")),
	); err != nil {
		t.Fatalf("the form never showed: %v", err)
	}
	for _, tc := range []struct {
		name, tag, typ string
		multiple       bool
	}{
		{"name", "INPUT", "text", false},
		{"age", "INPUT", "number", false},
		{"ratio", "INPUT", "number", false},
		{"agree", "INPUT", "checkbox", false},
		{"color", "SELECT", "select-one", false},
		{"tags", "SELECT", "select-multiple", true},
		{"pin", "INPUT", "password", false},
		{"remark", "INPUT", "text", false},
	} {
		got, err := chromedp.Run(bctx, chromedp.Evaluate[string](
			`(() => { const e = document.querySelector('form.elicitation [name="`+tc.name+`"]'); return e.tagName + " " + e.type; })()`))
		if want := tc.tag + " " + tc.typ; err != nil || got != want {
			t.Errorf("field %s is %q (%v), want %q", tc.name, got, err, want)
		}
	}
	// Defaults are pre-filled, never for the sensitive field; text is text.
	for name, want := range map[string]string{"name": "<b>ada</b>", "age": "36", "color": "green", "pin": "", "remark": ""} {
		if got, err := chromedp.Run(bctx, chromedp.Value(in(name))); err != nil || got != want {
			t.Errorf("field %s holds %q (%v), want %q", name, got, err, want)
		}
	}
	if msg, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`form.elicitation .message`))); err != nil || msg != "Fill <i>this</i> in" {
		t.Errorf("message %q (%v)", msg, err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#inbox b, #inbox i").length`)); err != nil || n != 0 {
		t.Errorf("server text was parsed as HTML: %d elements (%v)", n, err)
	}

	if err := chromedp.Do(bctx,
		chromedp.SendKeys(in("pin"), "1234"),
		chromedp.SendKeys(in("ratio"), "0.5"),
		chromedp.Click(in("agree")),
		chromedp.SetValue(in("color"), "blue"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('form.elicitation [name="tags"] option[value="c"]').selected = true`),
		chromedp.Click(chromedp.CSS(`form.elicitation button.accept`)),
	); err != nil {
		t.Fatalf("filling the form: %v", err)
	}
	got := answer(t, ctx, done)
	want := map[string]any{"action": "accept", "content": map[string]any{
		"name": "<b>ada</b>", "age": float64(36), "ratio": 0.5, "agree": false, "color": "blue",
		"tags": []any{"a", "c"}, "pin": "1234",
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the server got (-want +got):\n%s", diff)
	}
}

func TestUIURLRequestInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{}, mcptest("t"))
	bctx := browsertest.Start(t, ctx, path)

	const url = "https://auth.example.com/connect?state=1&next=<x>"
	done := askInBrowser(t, ctx, a, "mcp__t__ask", map[string]any{"mode": "url", "message": "Connect your account", "url": url})
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(`form.elicitation .url`)),
	); err != nil {
		t.Fatalf("the URL request never showed: %v", err)
	}
	for sel, want := range map[string]string{
		`form.elicitation .url`:    url,
		`form.elicitation .host`:   "auth.example.com",
		`form.elicitation .server`: "t",
	} {
		if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))); err != nil || got != want {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#inbox a").length`)); err != nil || n != 0 {
		t.Errorf("the URL is a link: %d anchors (%v)", n, err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`form.elicitation button.decline`))); err != nil {
		t.Fatalf("clicking Decline: %v", err)
	}
	if got := answer(t, ctx, done); got["action"] != "decline" {
		t.Errorf("the server got %v, want a decline", got)
	}
}

// TestUIPushesChangesInBrowser checks that the page follows the host without
// polling or reloading: a server disabled, a server registered and a server
// removed through the API each reach the table over /v1/inbox/stream, and
// the page never lists /v1/servers or /v1/elicitations.
func TestUIPushesChangesInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{}, mcptest("alpha"))
	bctx := browsertest.Start(t, ctx, path)

	state := func(name string) string {
		return fmt.Sprintf(`Array.from(document.querySelectorAll("#servers tbody tr")).
			filter((tr) => tr.cells[0].querySelector("strong").textContent === %q).
			map((tr) => tr.cells[1].textContent).join(",")`, name)
	}
	waitFor := func(what, expr string) { t.Helper(); waitForServers(t, bctx, what, expr) }
	if err := chromedp.Do(bctx, chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken)); err != nil {
		t.Fatal(err)
	}
	waitFor("alpha ready", state("alpha")+` === "ready"`)

	if err := a.h.SetEnabled(ctx, "alpha", false); err != nil {
		t.Fatal(err)
	}
	waitFor("alpha disabled", state("alpha")+` === "disabled"`)

	if err := a.h.Register(ctx, mcptest("beta")); err != nil {
		t.Fatal(err)
	}
	waitFor("beta ready", state("beta")+` === "ready"`)

	if err := a.h.Unregister(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	waitFor("alpha gone", state("alpha")+` === ""`)

	polled, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`performance.getEntriesByType("resource").
		map((e) => new URL(e.name).pathname).
		filter((p) => p === "/v1/servers" || p === "/v1/elicitations")`))
	if err != nil {
		t.Fatal(err)
	}
	if len(polled) > 0 {
		t.Errorf("the page fetched %v: it should follow /v1/inbox/stream instead", polled)
	}
}

// A server crashing in a loop shows in the page's events as it loops,
// each lifecycle change live, with no reload: its backoffs, with why.
func TestUIShowsLifecycleEventsInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPI(t, sidecar.Options{}, mcptest("steady"))
	bctx := browsertest.Start(t, ctx, path)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(`#servers tbody tr`)),
	); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](`window.sameLoad = true`)); err != nil {
		t.Fatal(err)
	}
	if err := a.h.Register(ctx, mcptest("crashy", "-crash-after-ms", "50")); err != nil {
		t.Fatal(err)
	}
	backoffs := `document.querySelectorAll('#events li.lifecycle[data-server="crashy"][data-state="backoff"]').length`
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](backoffs+` >= 2`, chromedp.WithPollingMutation())); err != nil {
		got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#events").textContent`))
		t.Fatalf("the crash loop's backoffs never showed in the events: %v (they show %q)", err, got)
	}
	for _, state := range []string{"starting", "ready"} {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](
			`document.querySelectorAll('#events li.lifecycle[data-server="crashy"][data-state="`+state+`"]').length`))
		if err != nil || n == 0 {
			t.Errorf("no %s of crashy in the events (%v)", state, err)
		}
	}
	// Read in one step in the page: the crash loop redraws the list under
	// any node found first.
	why, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(
		'#events li.lifecycle[data-server="crashy"][data-state="backoff"]'), (li) => li.querySelector(".params")?.textContent ?? "")`))
	if err != nil || len(why) == 0 || !slices.ContainsFunc(why, func(w string) bool { return strings.Contains(w, "exit") }) {
		t.Errorf("the backoffs say %q (%v), want why the server went: its exit", why, err)
	}
	if same, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.sameLoad === true`)); err != nil || !same {
		t.Errorf("the page reloaded (%v)", err)
	}
}

// waitForServers waits until expr, evaluated on the page after each
// change of its DOM, is true; on failure it shows the servers table.
func waitForServers(t *testing.T, bctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingMutation())); err != nil {
		got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#servers tbody").textContent`))
		t.Fatalf("%s: %v (the table shows %q)", what, err, got)
	}
}

// clickNow clicks the first element sel selects, found and clicked in one
// step in the page: the servers table is drawn again at every inbox event
// (a server's state change), so a node found first and clicked after may
// be gone by then.
func clickNow(t *testing.T, bctx context.Context, sel string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const b = document.querySelector(%q); if (!b) return false; b.click(); return true; })()`, sel)
	eventually(t, "a "+sel+" to click", func() bool {
		clicked, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js))
		return err == nil && clicked
	})
}
