package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/opstats"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// topView is a view of three servers as the sidecar sends it: alpha busy
// and slowest, a long-named one failing half its calls and restarted,
// zeta idle; 60 ten-second points each.
func topView() sidecar.OpsView {
	now := time.Date(2026, 3, 4, 15, 4, 5, 0, time.UTC)
	step := 10 * time.Second
	points := func(f func(i int) opstats.Point) []opstats.Point {
		var ps []opstats.Point
		for i := range 60 {
			p := f(i)
			p.Time = now.Truncate(step).Add(time.Duration(i-59) * step)
			ps = append(ps, p)
		}
		return ps
	}
	return sidecar.OpsView{Time: now, StepMs: step.Milliseconds(), WindowMs: time.Hour.Milliseconds(), Servers: []sidecar.OpsServerView{
		{Name: "zeta", State: mcpvisor.StateReady, Points: points(func(int) opstats.Point { return opstats.Point{} })},
		{Name: "a-very-long-server-name-that-goes-on-and-on", State: mcpvisor.StateFailed, Restarts: 3,
			Recent: opstats.Summary{Calls: 10, Errors: 5, Rate: 10.0 / 60, ErrorRate: .5, P50: .512, P99: 3.044},
			Points: points(func(i int) opstats.Point {
				if i%2 == 0 { // a call every other step, failed every fourth
					p := opstats.Point{Calls: 1, Rate: .1, P50: 1, P99: 1}
					if i%4 == 0 {
						p.ErrorRate = 1
					}
					return p
				}
				return opstats.Point{}
			})},
		{Name: "alpha", State: mcpvisor.StateReady, Pending: 2,
			Recent: opstats.Summary{Calls: 1200, Errors: 12, Rate: 20, ErrorRate: .01, P50: 1.076, P99: 1234.5},
			Points: points(func(i int) opstats.Point {
				g := i / 3 // the sparkline's character: rising
				return opstats.Point{Calls: uint32(3 * g), Rate: .3 * float64(g), P50: 1, P99: float64(g + 1)}
			})},
	}}
}

// tableRows returns the names of the rows of a rendered table, in order,
// and its lines.
func tableRows(t *testing.T, out string) (names []string, lines []string) {
	t.Helper()
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 || lines[1] != "" || !strings.HasPrefix(lines[2], "NAME") {
		t.Fatalf("not a totals line, a blank line and the table:\n%s", out)
	}
	for _, l := range lines[3:] {
		if !strings.HasPrefix(l, "…") {
			names = append(names, strings.Fields(l)[0])
		}
	}
	return names, lines
}

func TestRenderTop(t *testing.T) {
	v := topView()
	long := v.Servers[1].Name
	for _, tc := range []struct {
		sort  string
		order []string
		spark string // the sparkline's title
	}{
		{"p99", []string{"alpha", long, "zeta"}, "P99 10m"},
		{"errors", []string{long, "alpha", "zeta"}, "ERR% 10m"},
		{"rate", []string{"alpha", long, "zeta"}, "CALLS/S 10m"},
		{"restarts", []string{long, "alpha", "zeta"}, "CALLS/S 10m"},
		{"name", []string{long, "alpha", "zeta"}, "CALLS/S 10m"},
	} {
		t.Run(tc.sort, func(t *testing.T) {
			out := renderTop(v, topOptions{sort: tc.sort})
			names, lines := tableRows(t, out)
			if !slices.Equal(names, tc.order) {
				t.Errorf("rows %q, want %q:\n%s", names, tc.order, out)
			}
			if want := "NAME                                         STATE   RESTARTS  CALLS/S   ERR%    P50    P99  PENDING  " + tc.spark; lines[2] != want {
				t.Errorf("head\n%q, want\n%q", lines[2], want)
			}
			if !strings.Contains(out, "  (last minute, by "+tc.sort+")") {
				t.Errorf("the totals line does not say the order:\n%s", lines[0])
			}
		})
	}

	// The figures, aligned under their heads, with no width limit.
	out := renderTop(v, topOptions{sort: "p99", source: "sidecar pid 42 at http://127.0.0.1:1"})
	_, lines := tableRows(t, out)
	wantTotals := "mcpvisor top  " + v.Time.Local().Format(time.TimeOnly) +
		"  3 servers, 2 ready  20.2 calls/s  errors 1.4%  pending 2  restarts 3  (last minute, by p99)  sidecar pid 42 at http://127.0.0.1:1"
	want := []string{
		wantTotals,
		"",
		"NAME                                         STATE   RESTARTS  CALLS/S   ERR%    P50    P99  PENDING  P99 10m",
		"alpha                                        ready          0     20.0   1.0%  1.1ms   1.2s        2   ▁▂▂▂▃▃▄▄▄▅▅▆▆▆▇▇███",
		"a-very-long-server-name-that-goes-on-and-on  failed         3     0.17  50.0%  512µs  3.0ms        0  ▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁▁",
		"zeta                                         ready          0        0      -      -      -        0",
	}
	if diff := strings.Join(lines, "\n"); diff != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", diff, strings.Join(want, "\n"))
	}

	// In a cluster, a NODE column says where each server runs ("here":
	// this member), and narrowing still drops the sparkline first.
	clustered := topView()
	clustered.Servers[0].Node = "10.0.0.7:7072"
	elsewhere := clustered.Servers[0].Name
	names, lines := tableRows(t, renderTop(clustered, topOptions{sort: "name"}))
	if !strings.Contains(lines[2], "  STATE   NODE           RESTARTS") {
		t.Errorf("the clustered table's head: %q", lines[2])
	}
	for i, name := range names {
		want := "  here  "
		if name == elsewhere {
			want = "  10.0.0.7:7072  "
		}
		if !strings.Contains(lines[3+i], want) {
			t.Errorf("%s's row %q lacks %q", name, lines[3+i], want)
		}
	}
	_, lines = tableRows(t, renderTop(clustered, topOptions{sort: "name", width: 100}))
	if strings.Contains(lines[2], "CALLS/S 10m") || !strings.Contains(lines[2], "NODE") {
		t.Errorf("the clustered table at 100 columns:\n%s", strings.Join(lines, "\n"))
	}

	// Narrower: the name is cut first, to 16; then the sparkline goes and
	// the name has the room left; then it is cut down to 6; past that the
	// lines themselves are cut. No line is ever wider than the terminal.
	for _, tc := range []struct {
		width int
		name  string // the long name's cell
		spark bool
	}{
		{130, long, true},
		{100, "a-very-long-server-n…", true},
		{95, "a-very-long-ser…", true},
		{94, "a-very-long-server-name-that-goes-on…", false},
		{63, "a-ver…", false},
		{60, "a-ver…", false},
		{30, "a-ver…", false},
	} {
		t.Run(fmt.Sprintf("width %d", tc.width), func(t *testing.T) {
			out := renderTop(v, topOptions{sort: "name", width: tc.width})
			_, lines := tableRows(t, out)
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > tc.width {
					t.Errorf("a line of %d columns:\n%s", n, l)
				}
			}
			if cell := strings.Fields(lines[3])[0]; cell != tc.name && !(tc.width < 57 && strings.HasPrefix(lines[3], tc.name)) {
				t.Errorf("the long name shows as %q, want %q:\n%s", cell, tc.name, out)
			}
			if got := strings.Contains(lines[2], "CALLS/S 10m"); got != tc.spark {
				t.Errorf("sparkline shown: %v, want %v:\n%s", got, tc.spark, out)
			}
			if !strings.HasPrefix(lines[4], "alpha ") {
				t.Errorf("the next row:\n%s", lines[4])
			}
		})
	}

	// Fewer lines than rows: the ones that fit, and how many do not.
	out = renderTop(v, topOptions{sort: "p99", height: 5})
	if names, lines := tableRows(t, out); len(lines) != 5 || !slices.Equal(names, []string{"alpha"}) || lines[4] != "… and 2 more" {
		t.Errorf("in 5 lines:\n%s", out)
	}
	if _, lines := tableRows(t, renderTop(v, topOptions{sort: "p99", height: 6})); len(lines) != 6 || strings.HasPrefix(lines[5], "…") {
		t.Errorf("in 6 lines, every row fits:\n%s", strings.Join(lines, "\n"))
	}

	// A server's name or state cannot put escapes on the terminal.
	v.Servers[0].Name = "evil\x1b[2Jname"
	if out := renderTop(v, topOptions{sort: "name"}); strings.Contains(out, "\x1b") || !strings.Contains(out, `evil\x1b[2Jname`) {
		t.Errorf("an escape in a name:\n%q", out)
	}
	// No servers, and no points: the head alone, no sparkline.
	if out := renderTop(sidecar.OpsView{Time: v.Time, StepMs: 10_000}, topOptions{sort: "p99"}); !strings.Contains(out, "  0 servers, 0 ready  0 calls/s  errors -  pending 0  restarts 0") ||
		!strings.HasSuffix(out, "\nNAME  STATE  RESTARTS  CALLS/S  ERR%  P50  P99  PENDING\n") {
		t.Errorf("no servers:\n%s", out)
	}
}

func TestSparkline(t *testing.T) {
	const step = 10 * time.Second
	pts := func(calls ...uint32) []opstats.Point {
		var ps []opstats.Point
		for _, c := range calls {
			p := opstats.Point{Calls: c, Rate: float64(c) / 10}
			if c > 0 {
				p.P99 = float64(c)
				p.ErrorRate = .5
			}
			ps = append(ps, p)
		}
		return ps
	}
	// One row, scaled to its own largest (in the table, the column's).
	sparkline := func(points []opstats.Point, step time.Duration, metric func([]opstats.Point, time.Duration) (float64, bool)) string {
		v, h := sparkSeries(points, step, metric)
		top := 0.0
		for i := range v {
			if h[i] {
				top = max(top, v[i])
			}
		}
		return sparkline(v, h, top)
	}
	rate, _ := sparkMetric("rate")
	p99, _ := sparkMetric("p99")
	errs, _ := sparkMetric("errors")
	for _, tc := range []struct {
		name   string
		points []opstats.Point
		metric func([]opstats.Point, time.Duration) (float64, bool)
		want   string
	}{
		{"one character a step", pts(0, 1, 2, 4, 8), rate, "▁▁▂▄█"},
		{"nothing to plot is blank for p99", pts(0, 8, 0, 4), p99, " █ ▄"},
		{"all zero", pts(0, 0, 0), rate, "▁▁▁"},
		{"error share", pts(2, 0, 2), errs, "█ █"},
		{"no points", nil, rate, ""},
		// 60 steps: 20 characters of 3 steps each.
		{"ten minutes in twenty", pts(slices.Repeat([]uint32{1, 1, 1, 0, 0, 0}, 10)...), rate, strings.Repeat("█▁", 10)},
		// More than ten minutes: the last 60 steps only.
		{"the last ten minutes", pts(append(slices.Repeat([]uint32{100}, 30), slices.Repeat([]uint32{1}, 60)...)...), rate, strings.Repeat("█", 20)},
		// 61 steps would be 4 a character; 7 are one each, ending with the last.
		{"fewer than twenty", pts(1, 2, 3, 4, 5, 6, 8), p99, "▁▂▃▄▅▆█"},
	} {
		if got := sparkline(tc.points, step, tc.metric); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// When the steps do not divide evenly, the newest character is whole.
	if got := sparkline(pts(append(slices.Repeat([]uint32{0}, 40), 9)...), 7*time.Second, rate); utf8.RuneCountInString(got) != 14 || !strings.HasSuffix(got, "█") || strings.Count(got, "█") != 1 {
		t.Errorf("41 steps of 7 s: %q", got)
	}
}

func TestTopFormats(t *testing.T) {
	for ms, want := range map[float64]string{0.012: "12µs", .5: "500µs", 1.076: "1.1ms", 42.3: "42ms", 999.4: "999ms", 1234.5: "1.2s",
		59_000: "59.0s", 671_088.64: "11.2m"} {
		if got := formatMs(ms); got != want {
			t.Errorf("formatMs(%v) = %q, want %q", ms, got, want)
		}
	}
	for r, want := range map[float64]string{0: "0", .001: "<0.01", .0667: "0.07", 2: "2.00", 12.34: "12.3", 1234.5: "1234"} {
		if got := formatRate(r); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", r, got, want)
		}
	}
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Second: "90s", 2500 * time.Millisecond: "2.5s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// fakeOps is a fetch that answers from a list, and cancels the context
// at the end of it.
func fakeOps(cancel context.CancelFunc, answers ...error) (func(context.Context) (sidecar.OpsView, string, error), *int) {
	calls := new(int)
	return func(context.Context) (sidecar.OpsView, string, error) {
		*calls++
		if *calls > len(answers) {
			cancel()
			return sidecar.OpsView{}, "", context.Canceled
		}
		v := topView()
		v.Servers[0].Pending = *calls // tells the frames apart
		return v, "src", answers[*calls-1]
	}, calls
}

// ticks is a channel holding n ticks.
func ticks(n int) <-chan time.Time {
	c := make(chan time.Time, n)
	for range n {
		c <- time.Time{}
	}
	return c
}

// On a terminal each frame is drawn over the last (the screen cleared
// once, then the cursor sent home, each line erased to its end and
// what is below erased), the cursor hidden meanwhile, within the
// terminal's size; a failure after the first frame is shown in its
// place, and the refresh goes on until the context ends.
func TestRunTopTerminal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fetch, calls := fakeOps(cancel, nil, errors.New("connection refused"), nil)
	var out, errOut bytes.Buffer
	s := &topScreen{out: &out, errOut: &errOut, tty: true, size: func() (int, int) { return 70, 24 }}
	if err := runTop(ctx, topOptions{sort: "p99", interval: 2 * time.Second}, fetch, ticks(3), s); err != nil {
		t.Fatalf("runTop: %v", err)
	}
	got := out.String()
	if *calls != 4 || s.frames != 3 || errOut.Len() != 0 {
		t.Errorf("%d fetches, %d frames, stderr %q", *calls, s.frames, errOut.String())
	}
	if !strings.HasPrefix(got, ansiHide+ansiClear+ansiHome) || !strings.HasSuffix(got, ansiEraseDown+ansiShow) ||
		strings.Count(got, ansiClear) != 1 || strings.Count(got, ansiHome) != 3 || strings.Count(got, ansiEraseDown) != 3 {
		t.Errorf("escapes:\n%q", got)
	}
	frames := strings.Split(strings.TrimSuffix(got, ansiShow), ansiHome)[1:]
	if !strings.Contains(frames[1], "src: connection refused; asking again every 2s"+ansiEraseLine) {
		t.Errorf("the second frame does not say the failure:\n%q", frames[1])
	}
	for i, f := range frames {
		for l := range strings.Lines(strings.TrimSuffix(f, ansiEraseDown)) {
			l, ok := strings.CutSuffix(l, ansiEraseLine+"\n")
			if !ok || utf8.RuneCountInString(l) > 70 || strings.Contains(l, "\x1b") {
				t.Errorf("frame %d: line %q", i, l)
			}
		}
	}
	if !strings.Contains(frames[2], "        3"+ansiEraseLine) {
		t.Errorf("the third frame is not the third view:\n%q", frames[2])
	}
}

// Not on a terminal: a table per refresh, a blank line between them, no
// escapes; a failure after the first goes to stderr and the refresh
// goes on. The first fetch's failure is the command's.
func TestRunTopStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fetch, _ := fakeOps(cancel, nil, errors.New("connection refused"), nil)
	var out, errOut bytes.Buffer
	s := &topScreen{out: &out, errOut: &errOut}
	if err := runTop(ctx, topOptions{sort: "errors", interval: time.Second}, fetch, ticks(3), s); err != nil {
		t.Fatalf("runTop: %v", err)
	}
	tables := strings.Split(out.String(), "\n\nmcpvisor top ")
	if len(tables) != 2 || strings.Contains(out.String(), "\x1b") || !strings.Contains(tables[1], "pending 5") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if !regexp.MustCompile(`^mcpvisor: top: \d\d:\d\d:\d\d: src: connection refused\n$`).MatchString(errOut.String()) {
		t.Errorf("stderr %q", errOut.String())
	}

	// --once: one table, however many ticks.
	out.Reset()
	fetch, calls := fakeOps(cancel, nil, nil)
	if err := runTop(context.Background(), topOptions{sort: "p99", once: true}, fetch, ticks(5), &topScreen{out: &out, tty: true,
		size: func() (int, int) { return 200, 4 }}); err != nil || *calls != 1 || strings.Contains(out.String(), "\x1b") ||
		strings.Count(out.String(), "\n") != 6 {
		t.Errorf("once: %v, %d fetches:\n%q", err, *calls, out.String())
	}

	failed := errors.New("sidecar: HTTP 500")
	fetch, _ = fakeOps(cancel, failed)
	if err := runTop(context.Background(), topOptions{sort: "p99", interval: time.Second}, fetch, ticks(1), &topScreen{out: &out}); err != failed {
		t.Errorf("the first fetch failed: runTop returned %v", err)
	}
}

// Without a sidecar, top says to start one; its usage errors exit 2.
func TestTopUsage(t *testing.T) {
	data := t.TempDir()
	_, errOut, code := runCLIData(t, data, "top", "--once")
	if code != 1 || !strings.Contains(errOut, "no sidecar is running on this data directory") ||
		!strings.Contains(errOut, "start one with mcpvisor serve --data "+data) {
		t.Errorf("top without a sidecar: exit %d, stderr %q", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"top", "--sort", "cpu"}, `top: --sort "cpu": want one of p99, errors, rate, restarts, name`},
		{[]string{"top", "--interval", "10ms"}, "top: --interval 10ms: want at least 100ms"},
		{[]string{"top", "alpha"}, "top: takes no arguments"},
	} {
		if out, errOut, code := runCLIData(t, data, tc.args...); code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// cancelAfter is a writer that cancels a context once it has been
// written n tables.
type cancelAfter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Count(w.b.String(), "\nNAME ") >= w.n {
		w.cancel()
	}
	return len(p), nil
}

func (w *cancelAfter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Through a running sidecar: calls (some failed) on two servers show in
// top's table, with their calls per second and error share; the order
// follows --sort; --json is the sidecar's view; without --once, a table
// per refresh until interrupted.
func TestTopThroughSidecar(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"laggy": {"command": "MCPTEST"}, "flaky": {"command": "MCPTEST"}}}`)
	s := startServe(t, "--config", cfg, "--data", data)
	token := s.token(t)
	call := func(tool, args string) {
		t.Helper()
		a := s.request(ctx, http.MethodPost, "/v1/call", token, `{"tool":"`+tool+`","arguments":`+args+`}`)
		if a.status != http.StatusOK {
			t.Fatalf("call %s %s: %d %s", tool, args, a.status, a.body)
		}
	}
	// flaky: 4 calls, 2 of them failed, all quick. laggy: 1 call of
	// 600 ms, not failed.
	for range 2 {
		call("mcp__flaky__echo", `{}`)
		call("mcp__flaky__slow", `{"ms":-1}`)
	}
	call("mcp__laggy__slow", `{"ms":600}`)

	out, errOut, code := runCLIData(t, data, "top", "--once")
	if code != 0 {
		t.Fatalf("top --once: exit %d, stderr %q", code, errOut)
	}
	names, lines := tableRows(t, out)
	if !slices.Equal(names, []string{"laggy", "flaky"}) {
		t.Errorf("by p99: rows %q:\n%s", names, out)
	}
	if !strings.Contains(lines[0], "2 servers, 2 ready") || !strings.Contains(lines[0], "errors 40.0%") || strings.Contains(out, "\x1b") {
		t.Errorf("the totals line: %q", lines[0])
	}
	// NAME STATE RESTARTS CALLS/S ERR% P50 P99 PENDING SPARKLINE
	for _, l := range lines[3:] {
		f := strings.Fields(l)
		if len(f) < 8 || f[1] != "ready" || f[3] == "0" || f[7] != "0" {
			t.Errorf("row %q: want ready, some calls a second, none pending", l)
		}
		switch f[0] {
		case "flaky":
			if f[4] != "50.0%" {
				t.Errorf("flaky's error share %q, want 50.0%%: %q", f[4], l)
			}
		case "laggy":
			if f[4] != "0.0%" || !regexp.MustCompile(`^\d+ms$`).MatchString(f[6]) || f[6] < "600ms" {
				t.Errorf("laggy: errors %q, p99 %q, want 0.0%% and 600 ms or more: %q", f[4], f[6], l)
			}
		}
	}
	if out, _, _ := runCLIData(t, data, "top", "--once", "--sort", "errors"); !slices.Equal(first(tableRows(t, out)), []string{"flaky", "laggy"}) {
		t.Errorf("by errors:\n%s", out)
	}

	out, errOut, code = runCLIData(t, data, "top", "--json")
	var v sidecar.OpsView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("top --json: exit %d (%s), not the view: %v\n%s", code, errOut, err, out)
	}
	byName := map[string]sidecar.OpsServerView{}
	for _, sv := range v.Servers {
		byName[sv.Name] = sv
	}
	if f := byName["flaky"]; len(v.Servers) != 2 || f.Recent.Calls != 4 || f.Recent.Errors != 2 || byName["laggy"].Recent.Calls != 1 ||
		len(f.Points) != int(v.WindowMs/v.StepMs) {
		t.Errorf("top --json: %d servers; flaky %+v with %d points", len(v.Servers), f.Recent, len(f.Points))
	}

	// Until interrupted: here, until the second table is written.
	w := &cancelAfter{n: 2}
	var errb bytes.Buffer
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	w.cancel = stop
	if err := run(runCtx, []string{"top", "--interval", "100ms", "--data", data}, w, &errb); err != nil {
		t.Fatalf("top: %v (%s)", err, errb.String())
	}
	if got := w.String(); strings.Count(got, "\nNAME ") != 2 || !strings.Contains(got, "\n\nmcpvisor top ") || strings.Contains(got, "\x1b") {
		t.Errorf("top, not on a terminal:\n%s", got)
	}
}

func first[A, B any](a A, _ B) A { return a }
