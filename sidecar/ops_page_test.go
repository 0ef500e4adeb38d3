package sidecar_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// openOpsAPI is openAPI with the operations statistics on, in one-second
// steps so that the charts move within a test.
func openOpsAPI(t *testing.T, servers ...mcpvisor.ServerConfig) *api {
	t.Helper()
	ops := sidecar.NewOps(sidecar.OpsOptions{Window: 5 * time.Minute, Step: time.Second})
	a := openAPIHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{ops.CallMiddleware}},
		sidecar.Options{Ops: ops}, servers...)
	ops.Watch(a.h)
	t.Cleanup(ops.Close) // before the host closes
	return a
}

func (a *api) ops(t *testing.T, query string) sidecar.OpsView {
	t.Helper()
	r := a.do("GET", "/v1/ops"+query, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/ops%s: %d %s", query, r.status, r.body)
	}
	var v sidecar.OpsView
	r.json(t, &v)
	return v
}

func opsServer(t *testing.T, v sidecar.OpsView, name string) sidecar.OpsServerView {
	t.Helper()
	for _, s := range v.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %q in %+v", name, v)
	return sidecar.OpsServerView{}
}

// callTool calls tool through the host, failing the test on a timeout only.
func callTool(t *testing.T, a *api, tool, args string) (*mcpvisor.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.h.Call(ctx, tool, json.RawMessage(args))
}

// waitFor polls cond on the host's status changes until it holds.
func waitFor(t *testing.T, a *api, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		changed := a.h.StatusChanged()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond): // figures change with no status change
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// GET /v1/ops counts each server's calls and failures, their latency and
// its state timeline; ?points=false leaves out the series; a bad ?since is
// refused; without Options.Ops the route is not there.
func TestOpsView(t *testing.T) {
	a := openOpsAPI(t, mcptest("good"), mcptest("bad"))
	for range 5 {
		if _, err := callTool(t, a, "mcp__good__echo", `{"text":"hi"}`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := callTool(t, a, "mcp__bad__crash", `{}`); err == nil {
		t.Fatal("crash answered")
	}
	if r := a.doAuth("GET", "/v1/ops", nil, "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/ops without a token: %d", r.status)
	}
	v := a.ops(t, "")
	if v.StepMs != 1000 || v.WindowMs != 300000 {
		t.Errorf("step %d ms, window %d ms", v.StepMs, v.WindowMs)
	}
	good, bad := opsServer(t, v, "good"), opsServer(t, v, "bad")
	if good.Recent.Calls != 5 || good.Recent.Errors != 0 || good.Recent.P50 <= 0 || good.Recent.P99 < good.Recent.P50 {
		t.Errorf("good: recent %+v", good.Recent)
	}
	if bad.Recent.Calls != 1 || bad.Recent.ErrorRate != 1 {
		t.Errorf("bad: recent %+v", bad.Recent)
	}
	if len(good.Points) != 300 {
		t.Errorf("%d points, want one per step of the window (300)", len(good.Points))
	}
	var inPoints uint32
	for _, p := range good.Points {
		inPoints += p.Calls
	}
	if inPoints != 5 {
		t.Errorf("the points hold %d calls, want 5", inPoints)
	}
	if n := len(good.Timeline); n == 0 || good.Timeline[n-1].State != "ready" {
		t.Errorf("good's timeline %+v, want it to end ready", good.Timeline)
	}
	// The crash shows in bad's timeline once it has restarted.
	waitFor(t, a, "bad's crash in its timeline", func() bool {
		b := opsServer(t, a.ops(t, "?points=false"), "bad")
		seen := map[string]bool{}
		for _, tr := range b.Timeline {
			seen[tr.State] = true
		}
		return seen["backoff"] && b.State == mcpvisor.StateReady && b.Restarts == 1
	})
	if v := a.ops(t, "?points=false"); len(opsServer(t, v, "good").Points) != 0 {
		t.Error("?points=false sent points")
	}
	// The points from since to the moment the view is made, one a second:
	// two or three when it is made at once, a point more for each second
	// a loaded machine takes to answer.
	asked := time.Now()
	since := asked.Add(-2 * time.Second).UnixMilli()
	n := len(opsServer(t, a.ops(t, "?since="+strconv.FormatInt(since, 10)), "good").Points)
	if late := int(time.Since(asked) / time.Second); n < 2 || n > 3+late+1 {
		t.Errorf("?since two seconds ago, answered %v later: %d points", time.Since(asked).Round(time.Millisecond), n)
	}
	for _, q := range []string{"?since=yesterday", "?since=-1", "?points=maybe"} {
		if r := a.do("GET", "/v1/ops"+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("GET /v1/ops%s: %d", q, r.status)
		}
	}
	plain := openAPI(t, sidecar.Options{})
	if r := plain.do("GET", "/v1/ops", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /v1/ops without Ops: %d", r.status)
	}
}

// POST /v1/servers/{name}/restart starts a new process at once, its
// restart count reset; a disabled server is refused with the reason.
func TestOpsRestart(t *testing.T) {
	a := openOpsAPI(t, mcptest("s"))
	before := opsServer(t, a.ops(t, "?points=false"), "s")
	r := a.do("POST", "/v1/servers/s/restart", nil)
	if r.status != http.StatusOK {
		t.Fatalf("restart: %d %s", r.status, r.body)
	}
	waitFor(t, a, "s ready with a new process", func() bool {
		s := opsServer(t, a.ops(t, "?points=false"), "s")
		return s.State == mcpvisor.StateReady && s.PID != before.PID && s.PID != 0
	})
	if r := a.do("POST", "/v1/servers/nope/restart", nil); r.status != http.StatusNotFound {
		t.Errorf("restart of an unknown server: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/servers/s/disable", nil); r.status/100 != 2 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	r = a.do("POST", "/v1/servers/s/restart", nil)
	if r.status/100 == 2 || !strings.Contains(string(r.body), "disabled") {
		t.Errorf("restart of a disabled server: %d %s", r.status, r.body)
	}
}

// The stream sends the whole window first, then, after a state change,
// an event with only the last steps.
func TestOpsStream(t *testing.T) {
	a := openOpsAPI(t, mcptest("s"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.ts.URL+"/v1/ops/stream", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("stream: %d %q", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	next := func() sidecar.OpsView {
		t.Helper()
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v sidecar.OpsView
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return sidecar.OpsView{}
	}
	if first := next(); len(opsServer(t, first, "s").Points) != 300 {
		t.Fatalf("the first event has %d points, want the window's 300", len(opsServer(t, first, "s").Points))
	}
	if err := a.h.SetEnabled(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	for {
		v := next()
		s := opsServer(t, v, "s")
		if n := len(s.Points); n < 2 || n > 3 {
			t.Fatalf("a later event has %d points, want the last steps only", n)
		}
		if s.State == mcpvisor.StateDisabled {
			break
		}
	}
}

// The operations page shows every server with its charts, follows a crash
// live, and its Restart, Disable and Enable buttons work.
func TestOpsPageInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openOpsAPI(t, mcptest("alpha"), mcptest("beta"), mcptest("gamma"))
	for i := range 20 {
		if _, err := callTool(t, a, "mcp__alpha__slow", `{"ms":`+strconv.Itoa(2+i%5)+`}`); err != nil {
			t.Fatal(err)
		}
		if _, err := callTool(t, a, "mcp__beta__echo", `{"text":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	bctx := browsertest.Start(t, ctx, path)
	card := func(name string) string { return `article.srv[data-server="` + name + `"]` }
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/ops.html#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(card("alpha"))),
		chromedp.WaitVisible(chromedp.CSS(card("gamma"))),
	); err != nil {
		t.Fatalf("the page never showed the servers: %v", err)
	}
	for _, sel := range []string{
		card("alpha") + ` svg.timeline rect.seg[data-state="ready"]`,
		card("alpha") + ` svg.latency polyline.p99`,
		card("beta") + ` svg.rate rect.bar`,
	} {
		if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Errorf("no %s: %v", sel, err)
		}
	}
	if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(card("alpha")+` .badge.state`))); err != nil || got != "ready" {
		t.Errorf("alpha's badge %q (%v)", got, err)
	}
	if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#total-servers`))); err != nil || got != "3" {
		t.Errorf("total servers %q (%v)", got, err)
	}

	// A crash: gamma's timeline gains a backoff band and its card says it
	// restarted, without a reload.
	if _, err := callTool(t, a, "mcp__gamma__crash", `{}`); err == nil {
		t.Fatal("crash answered")
	}
	if err := chromedp.Do(bctx,
		chromedp.WaitVisible(chromedp.CSS(card("gamma")+` svg.timeline rect.seg[data-state="backoff"]`)),
	); err != nil {
		t.Errorf("the crash never showed: %v", err)
	}
	waitText(t, bctx, card("gamma")+` .figures`, "restarts 1")

	// The controls, from the detail panel. The cards redraw (and resort)
	// as the servers change: found and clicked in one step in the page.
	clickNow(t, bctx, card("beta"))
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#detail`))); err != nil {
		t.Fatalf("opening beta: %v", err)
	}
	waitText(t, bctx, `#detail-name`, "beta")
	waitText(t, bctx, `#detail-log`, "") // read once opened
	pid := status(t, a, "beta").PID
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#detail-restart`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "beta restarted by the page", func() bool {
		st := status(t, a, "beta")
		return st.State == mcpvisor.StateReady && st.PID != pid
	})
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#detail-disable`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "beta disabled by the page", func() bool { return status(t, a, "beta").State == mcpvisor.StateDisabled })
	waitText(t, bctx, card("beta")+` .badge.state`, "disabled")
	if err := chromedp.Do(bctx,
		chromedp.WaitVisible(chromedp.CSS(`#detail-enable`)),
		chromedp.Click(chromedp.CSS(`#detail-enable`)),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "beta enabled by the page", func() bool { return status(t, a, "beta").State == mcpvisor.StateReady })
	waitText(t, bctx, card("beta")+` .badge.state`, "ready")
}

// The operations page puts the servers that need a look first whatever
// their latency: one not ready (crashing at start), then one whose calls
// fail, then the healthy ones by p99, the slowest first. Each chart has
// its y scale (its top value, with the unit) and the charts a time axis
// from the window's start to now.
func TestOpsPageSortsFailingFirstAndLabelsAxesInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	a := openOpsAPI(t, mcptest("fast"), mcptest("slow"), mcptest("erring"))
	for range 5 {
		if _, err := callTool(t, a, "mcp__slow__slow", `{"ms":40}`); err != nil {
			t.Fatal(err)
		}
		if _, err := callTool(t, a, "mcp__fast__echo", `{"text":"x"}`); err != nil {
			t.Fatal(err)
		}
		if _, err := callTool(t, a, "mcp__erring__slow", `{"ms":80}`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := callTool(t, a, "mcp__erring__echo", `{"bad":`); err == nil {
		t.Fatal("a malformed call answered")
	}
	if err := a.h.Register(ctx, mcptest("broken", "-exit-at-start", "1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "broken not ready after a crash", func() bool { return status(t, a, "broken").Restarts > 0 })

	bctx := browsertest.Start(t, ctx, path)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(a.ts.URL+"/ui/ops.html#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(`article.srv[data-server="broken"]`)),
	); err != nil {
		t.Fatal(err)
	}
	want := "broken,erring,slow,fast"
	order := `Array.from(document.querySelectorAll("article.srv")).map((c) => c.dataset.server).join(",")`
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](order+` === "`+want+`"`, chromedp.WithPollingMutation(),
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](order))
		t.Errorf("the cards are in the order %s, want %s: %v", got, want, err)
	}

	slow := `article.srv[data-server="slow"] `
	for sel, want := range map[string]string{
		slow + `.axis.time`:            "\u22125 min",
		slow + `.axis.time .ticks`:     "now",
		slow + `svg.latency + .axis.y`: "ms",
		slow + `svg.rate + .axis.y`:    "/s",
		slow + `svg.pending + .axis.y`: "pending",
	} {
		if got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel))); err != nil || !strings.Contains(got, want) {
			t.Errorf("%s shows %q (%v), want %q", sel, got, err, want)
		}
	}
	// The latency scale is the highest p99 of the window: slow's 40 ms
	// calls, not 0 and not seconds.
	top, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(slow+`svg.latency + .axis.y`)))
	if ms, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(top, "p99 "), " ms"), 64); err != nil || ms < 40 || ms > 1000 {
		t.Errorf("slow's latency scale says %q (%v), want its p99 in ms, at least 40", top, err)
	}
}

func status(t *testing.T, a *api, name string) mcpvisor.ServerStatus {
	t.Helper()
	for _, st := range a.h.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no server %q", name)
	return mcpvisor.ServerStatus{}
}

// waitText waits until sel's text contains want.
func waitText(t *testing.T, bctx context.Context, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err == nil && strings.Contains(got, want) && (want != "" || got != "") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s shows %q (%v), want %q", sel, got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpsPageScreenshot draws the README's picture of the operations page
// (docs/ops.png) from 40 s of real traffic: six servers, one slow, one
// failing a share of its calls, one crashing now and then, one disabled.
// It runs only with MCPVISOR_UPDATE_SCREENSHOT=1: it takes most of a minute, and
// TestOpsPageInBrowser checks the page.
func TestOpsPageScreenshot(t *testing.T) {
	if os.Getenv("MCPVISOR_UPDATE_SCREENSHOT") != "1" {
		t.Skip("set MCPVISOR_UPDATE_SCREENSHOT=1 to redraw docs/ops.png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path := browsertest.Need(t)
	ops := sidecar.NewOps(sidecar.OpsOptions{Window: time.Minute, Step: time.Second})
	a := openAPIHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{ops.CallMiddleware}},
		sidecar.Options{Ops: ops}, mcptest("github"), mcptest("postgres"), mcptest("browser"), mcptest("search"),
		mcptest("filesystem"), mcptest("legacy-crm"))
	ops.Watch(a.h)
	t.Cleanup(ops.Close)
	if err := a.h.SetEnabled(ctx, "legacy-crm", false); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(40 * time.Second)
	var calls sync.WaitGroup
	load := func(tool string, args func(i int) string, every time.Duration) {
		calls.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				a.h.Call(ctx, tool, json.RawMessage(args(i)))
				time.Sleep(every)
			}
		})
	}
	load("mcp__github__slow", func(i int) string { return `{"ms":` + strconv.Itoa(20+(i*37)%60) + `}` }, 30*time.Millisecond)
	load("mcp__postgres__slow", func(i int) string { return `{"ms":` + strconv.Itoa(2+(i*7)%9) + `}` }, 10*time.Millisecond)
	load("mcp__browser__slow", func(i int) string { return `{"ms":` + strconv.Itoa(300+(i*131)%900) + `}` }, 50*time.Millisecond)
	load("mcp__search__echo", func(i int) string {
		if i%9 == 0 {
			return `{"bad":` // refused: an error
		}
		return `{"text":"q"}`
	}, 15*time.Millisecond)
	load("mcp__filesystem__echo", func(int) string { return `{"text":"ls"}` }, 40*time.Millisecond)
	calls.Go(func() {
		for time.Now().Before(end) {
			time.Sleep(11 * time.Second)
			a.h.Call(ctx, "mcp__browser__crash", nil)
		}
	})
	calls.Wait()
	bctx := browsertest.Start(t, ctx, path)
	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(a.ts.URL+"/ui/ops.html#token="+testToken),
		chromedp.WaitVisible(chromedp.CSS(`article.srv[data-server="browser"] svg.latency polyline`)),
	); err != nil {
		t.Fatal(err)
	}
	clickNow(t, bctx, `article.srv[data-server="browser"]`)
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#detail`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, bctx, `#detail-log`, "")
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: a PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "ops.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
