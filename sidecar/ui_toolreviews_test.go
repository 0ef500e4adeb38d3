package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// reviewCard selects the inbox page's card of a server's tool, narrowed by
// more (e.g. `[data-state="changed"]`).
func reviewCard(server, tool, more string) string {
	return fmt.Sprintf(`article.tool-review[data-server=%q][data-tool=%q]%s`, server, tool, more)
}

// Under hold, the page lists every withheld tool with its description
// and schema; Approve exposes echo. After a rug pull the page shows echo
// as changed, with the diff and the findings as text, and Reject keeps
// it withheld, marked rejected.
func TestUIToolReviewsInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openAPIHost(t, mcpvisor.Options{ToolPolicy: mcpvisor.ToolPolicyHold}, sidecar.Options{}, mcptest("rp"))
	bctx := browsertest.Start(t, ctx, path)
	echo := waitReview(t, ctx, a.h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.Held })

	newEcho := reviewCard("rp", "echo", `[data-state="new"]`)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(newEcho+` pre.description`)),
	); err != nil {
		t.Fatalf("echo's review never showed: %v", err)
	}
	count := fmt.Sprint(len(a.h.ToolReviews()))
	for sel, want := range map[string]string{
		`#tool-reviews-count`:          count,
		newEcho + ` .from .server`:     "rp",
		newEcho + ` .from .tool`:       "echo",
		newEcho + ` .from .badge.held`: "held",
		newEcho + ` .from .kind-new`:   "new",
		newEcho + ` .name code`:        "mcp__rp__echo",
		newEcho + ` pre.description`:   echo.Definition.Description,
	} {
		if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))); err != nil || got != want {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	schema, err := chromedp.Run(bctx, chromedp.Evaluate[string](
		`JSON.stringify(JSON.parse(document.querySelector('`+newEcho+` pre.inputSchema').textContent))`))
	if wantSchema, _ := json.Marshal(json.RawMessage(echo.Definition.InputSchema)); err != nil || schema != string(wantSchema) {
		t.Errorf("the input schema shows %s (%v), want %s", schema, err, wantSchema)
	}

	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(newEcho+` button.approve`)),
		chromedp.WaitNotPresent(chromedp.CSS(newEcho)),
	); err != nil {
		t.Fatalf("approving echo: %v", err)
	}
	waitHost(t, ctx, a.h, "echo exposed", func() bool { return exposes(a.h, "mcp__rp__echo") })
	if _, ok := reviewOf(a.h, "rp", "echo"); ok {
		t.Errorf("echo is still to review after Approve: %+v", a.h.ToolReviews())
	}
	hist, err := a.h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryTool, Tool: "mcp__rp__echo"})
	if err != nil || len(hist) != 2 || hist[1].Transition != "approved" || hist[1].By != "api:inbox" {
		t.Errorf("echo's history %+v (%v), want its approval by api:inbox", hist, err)
	}

	// The rug pull, through the host: rug_pull approved there first.
	rug := waitReview(t, ctx, a.h, "rp", "rug_pull", func(rv mcpvisor.ToolReview) bool { return rv.Held })
	if err := a.h.ApproveTool(ctx, "rp", "rug_pull", rug.Hash, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.h.Call(ctx, "mcp__rp__rug_pull", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("rug_pull: %v", err)
	}
	changed := reviewCard("rp", "echo", `[data-state="changed"]`)
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(changed+` pre.diff`))); err != nil {
		t.Fatalf("the changed echo never showed: %v", err)
	}
	if diff, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(changed+` pre.diff`))); err != nil || !strings.Contains(diff, "id_rsa") {
		t.Errorf("the diff shows %q (%v), want the poisoned text", diff, err)
	}
	rules, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('`+changed+` ul.findings .rule'), (e) => e.textContent)`))
	if err != nil || !strings.Contains(strings.Join(rules, " "), "secret-path") {
		t.Errorf("the findings show rules %q (%v), want secret-path among them", rules, err)
	}
	excerpts, err := chromedp.Run(bctx, chromedp.Evaluate[string](
		`Array.from(document.querySelectorAll('`+changed+` ul.findings .excerpt'), (e) => e.textContent).join("\n")`))
	if err != nil || !strings.Contains(excerpts, "id_rsa") {
		t.Errorf("the findings' excerpts show %q (%v)", excerpts, err)
	}
	// The poisoned description's <IMPORTANT> tag is text, never an element.
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#tool-reviews important").length`)); err != nil || n != 0 {
		t.Errorf("a server's text was parsed as HTML: %d elements (%v)", n, err)
	}

	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(changed+` button.reject`)),
		chromedp.WaitVisible(chromedp.CSS(changed+` .badge.rejected`)),
	); err != nil {
		t.Fatalf("rejecting the changed echo: %v", err)
	}
	rv := waitReview(t, ctx, a.h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.Rejected })
	if !rv.Held || rv.State != "changed" || exposes(a.h, "mcp__rp__echo") {
		t.Errorf("echo after Reject: %+v, exposed %v; want it withheld", rv, exposes(a.h, "mcp__rp__echo"))
	}
	if _, err := a.h.Call(ctx, "mcp__rp__echo", json.RawMessage(`{}`)); !errors.Is(err, mcpvisor.ErrToolWithheld) {
		t.Errorf("calling the rejected echo: %v, want ErrToolWithheld", err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('`+changed+` button.reject').length`)); err != nil || n != 0 {
		t.Errorf("the rejected echo still offers Reject: %d buttons (%v)", n, err)
	}
}
