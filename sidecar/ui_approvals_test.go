package sidecar_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

type hostCallOutcome struct {
	res *mcpvisor.Result
	err error
}

// sessionCall calls a host tool as session s in the background, as a model
// would; the call is cancelled, and waited for, when the test ends.
func sessionCall(t *testing.T, ctx context.Context, a *api, session, tool string, args map[string]any) <-chan hostCallOutcome {
	t.Helper()
	raw, _ := json.Marshal(args)
	done := make(chan hostCallOutcome, 1)
	var calls sync.WaitGroup
	callCtx, cancelCall := context.WithCancel(ctx)
	t.Cleanup(func() { cancelCall(); calls.Wait() })
	calls.Go(func() {
		res, err := a.h.Session(session, "").Call(callCtx, tool, raw)
		done <- hostCallOutcome{res, err}
	})
	return done
}

func awaitHostCall(t *testing.T, ctx context.Context, done <-chan hostCallOutcome, what string) *mcpvisor.Result {
	t.Helper()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("%s: %v", what, o.err)
		}
		return o.res
	case <-ctx.Done():
		t.Fatalf("%s did not return", what)
		return nil
	}
}

// A model registers a stdio server: the page shows who asks and the whole
// command line, one argument per item, with an invisible character made
// visible; Allow lets the call run and the server comes up.
func TestUIApprovesRegistrationInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true, AlwaysOn: []string{mcpvisor.ConfigGroup}}, sidecar.Options{})
	bctx := browsertest.Start(t, ctx, path)

	argv := []string{"-name", "fresh server\u202e", "-tools", "2"}
	args := map[string]any{"name": "fresh", "transport": "stdio", "command": mcptestBin, "args": argv,
		"env": map[string]string{"TOKEN": secretValue}}
	done := sessionCall(t, ctx, a, "chat-7", "register_mcp", args)

	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(`form.approval ol.command li`)),
	); err != nil {
		t.Fatalf("the approval never showed: %v", err)
	}
	for sel, want := range map[string]string{
		`form.approval .tool`:    "register_mcp",
		`form.approval .session`: "chat-7",
		`#approvals-count`:       "1",
	} {
		if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))); err != nil || got != want {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	summary, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`form.approval .summary`)))
	if err != nil || !strings.Contains(summary, `Register stdio server "fresh"`) || !strings.Contains(summary, "TOKEN") {
		t.Errorf("the summary shows %q (%v)", summary, err)
	}
	shown, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("form.approval ol.command li"), (li) => li.textContent)`))
	want := []string{mcptestBin, "-name", "fresh server\u27e8U+202E\u27e9", "-tools", "2"}
	if err != nil || !slices.Equal(shown, want) {
		t.Errorf("the command line shows %q (%v), want %q", shown, err, want)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("form.approval .badge.destructive").length`)); err != nil || n != 0 {
		t.Errorf("register_mcp is marked destructive: %d badges (%v)", n, err)
	}
	if dl, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(`form.approval .deadline`), "datetime")); err != nil || dl.Value == "" {
		t.Errorf("no deadline on the card: %+v (%v)", dl, err)
	}
	if leaked, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.outerHTML.includes(`+"`"+secretValue+"`"+`)`)); err != nil || leaked {
		t.Errorf("the page holds the secret env value (%v)", err)
	}

	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`form.approval button.allow`))); err != nil {
		t.Fatalf("clicking Allow: %v", err)
	}
	res := awaitHostCall(t, ctx, done, "the allowed register_mcp")
	if res.IsError || !strings.Contains(res.Wire(), "ready") {
		t.Fatalf("the allowed register_mcp returned %q", res.Wire())
	}
	if st, ok := serverStatus(a.h, "fresh"); !ok || st.State != mcpvisor.StateReady {
		t.Errorf("fresh after Allow: %+v", st)
	}
	if err := chromedp.Do(bctx,
		chromedp.WaitNotPresent(chromedp.CSS(`form.approval`)),
		chromedp.WaitVisible(chromedp.CSS(`#approvals-empty`)),
	); err != nil {
		t.Errorf("the answered approval stays on the page: %v", err)
	}
}

// delete_mcp is marked destructive; Deny with a reason gives the model the
// reason, and the server stays.
func TestUIDeniesWithReasonInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPIHost(t, mcpvisor.Options{ApprovalInbox: true, AlwaysOn: []string{mcpvisor.ConfigGroup}}, sidecar.Options{},
		mcptest("victim"))
	bctx := browsertest.Start(t, ctx, path)

	done := sessionCall(t, ctx, a, "chat-8", "delete_mcp", map[string]any{"name": "victim"})
	reason := chromedp.CSS(`form.approval input[name="reason"]`)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(reason),
	); err != nil {
		t.Fatalf("the approval never showed: %v", err)
	}
	if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`form.approval .badge.destructive`))); err != nil || got != "destructive" {
		t.Errorf("the destructive badge shows %q (%v)", got, err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("form.approval ol.command").length`)); err != nil || n != 0 {
		t.Errorf("delete_mcp shows a command line: %d (%v)", n, err)
	}
	const why = "not <b>this</b> one"
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(reason, why),
		chromedp.Click(chromedp.CSS(`form.approval button.deny`)),
	); err != nil {
		t.Fatalf("denying: %v", err)
	}
	res := awaitHostCall(t, ctx, done, "the denied delete_mcp")
	if !res.IsError || !strings.Contains(res.Wire(), why) {
		t.Fatalf("the denied delete_mcp returned %q, want a tool error with %q", res.Wire(), why)
	}
	if _, ok := serverStatus(a.h, "victim"); !ok {
		t.Error("victim was deleted although denied")
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(`form.approval`))); err != nil {
		t.Errorf("the answered approval stays on the page: %v", err)
	}
}
