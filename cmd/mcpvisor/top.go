package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/opstats"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// top: the running sidecar's operations view (GET /v1/ops) as a table in
// the terminal, one row per server, refreshed until interrupted.

// topSorts are the orders --sort takes, the default first.
var topSorts = []string{"p99", "errors", "rate", "restarts", "name"}

// minTopInterval is the shortest --interval: the figures move in steps of
// seconds, a faster refresh only loads the sidecar.
const minTopInterval = 100 * time.Millisecond

// sparkSpan is the time the sparkline covers; sparkWidth its most
// characters.
const (
	sparkSpan  = 10 * time.Minute
	sparkWidth = 20
)

// topDetail is top's help after its summary.
const topDetail = "Each server's figures over the last minute: calls per second, the share of calls that failed\n" +
	"(an error or a tool error), p50 and p99 latency, the calls in flight now, its state and restarts,\n" +
	"and a sparkline of the last 10 minutes of the column sorted by (calls/s when sorting by restarts\n" +
	"or name). The line above the table sums them. Rows are sorted by --sort, largest first (name:\n" +
	"A to Z): p99 latency, errors (the error rate, then the count), rate (calls/s), restarts, name.\n\n" +
	"On a terminal the table is redrawn in place every --interval, sized to the window (long names are\n" +
	"cut with …), until Ctrl-C. When stdout is not a terminal (a pipe, a file) a table is printed\n" +
	"every --interval, each after a blank line, without escape sequences, as top -b and vmstat do;\n" +
	"--once prints one table and exits, --json the sidecar's whole view (GET /v1/ops, with every\n" +
	"step's points) once. When the sidecar stops answering, top says so and keeps asking, finding it\n" +
	"again should it restart.\n\n" +
	"Needs a sidecar (mcpvisor serve) running on --data.\n\n" +
	"Exit status: 0 interrupted, or printed with --once or --json; 1 no sidecar answers, or it failed;\n" +
	"2 a usage error."

// topFlags are top's own flags.
func topFlags(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.sort, "sort", topSorts[0], "the order of the rows, a `KEY`: "+strings.Join(topSorts, ", "))
	fs.DurationVar(&f.interval, "interval", 2*time.Second, "how often the table is refreshed (a `DURATION`)")
	fs.BoolVar(&f.once, "once", false, "print one table and exit")
}

// cmdTop shows the sidecar's operations view until ctx ends or, with
// --once or --json, once.
func cmdTop(ctx context.Context, e *env) error {
	switch {
	case len(e.args) > 0:
		return &exitError{code: exitUsage, msg: "top: takes no arguments" + seeHelp("top")}
	case !slices.Contains(topSorts, e.f.sort):
		return &exitError{code: exitUsage, msg: fmt.Sprintf("top: --sort %q: want one of %s", e.f.sort, strings.Join(topSorts, ", ")) + seeHelp("top")}
	case e.f.interval < minTopInterval:
		return &exitError{code: exitUsage, msg: fmt.Sprintf("top: --interval %v: want at least %v", e.f.interval, minTopInterval) + seeHelp("top")}
	}
	r, err := findSidecar(ctx, e.f)
	if err != nil {
		return err
	}
	if e.f.json {
		raw, err := r.opsRaw(ctx, "")
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return fmt.Errorf("sidecar: the view: %w", err)
		}
		b.WriteByte('\n')
		_, err = e.stdout.Write(b.Bytes())
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	// Each refresh asks the sidecar found; when it does not answer, the
	// note is read again: a restarted sidecar listens elsewhere.
	fetch := func(ctx context.Context) (sidecar.OpsView, string, error) {
		ctx, cancel := context.WithTimeout(ctx, max(2*e.f.interval, 10*time.Second))
		defer cancel()
		v, err := r.ops(ctx)
		if err != nil && apiCode(err) == "" && ctx.Err() == nil {
			if again, ferr := findSidecar(ctx, e.f); ferr == nil {
				r = again
				v, err = r.ops(ctx)
			}
		}
		return v, fmt.Sprintf("sidecar pid %d at %s", r.info.PID, r.base), err
	}
	s := &topScreen{out: e.stdout, errOut: e.stderr}
	if f, ok := e.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		s.tty = true
		s.size = func() (int, int) {
			w, h, err := term.GetSize(fd)
			if err != nil {
				return 0, 0
			}
			return w, h
		}
	}
	ticker := time.NewTicker(e.f.interval)
	defer ticker.Stop()
	return runTop(ctx, topOptions{sort: e.f.sort, interval: e.f.interval, once: e.f.once}, fetch, ticker.C, s)
}

// opsRaw is GET /v1/ops with query (none: every step's points), as the
// sidecar answered it.
func (r *remote) opsRaw(ctx context.Context, query string) (json.RawMessage, error) {
	path := "/v1/ops"
	if query != "" {
		path += "?" + query
	}
	var raw json.RawMessage
	if err := r.do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// ops is GET /v1/ops with the points of the sparkline's span.
func (r *remote) ops(ctx context.Context) (sidecar.OpsView, error) {
	var v sidecar.OpsView
	since := time.Now().Add(-sparkSpan).UnixMilli()
	raw, err := r.opsRaw(ctx, "since="+strconv.FormatInt(since, 10))
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("sidecar: the view: %w", err)
	}
	return v, nil
}

// topScreen is where top draws: a terminal, redrawn in place, or a
// stream of tables.
type topScreen struct {
	out, errOut io.Writer
	tty         bool
	// size is the terminal's columns and rows (0: no limit); nil when
	// not a terminal.
	size   func() (int, int)
	frames int
}

// topOptions are how top shows the view.
type topOptions struct {
	sort     string
	interval time.Duration // between refreshes; 0: once
	once     bool
	// width and height bound the table in columns and lines (0: no
	// bound); source says where the view comes from.
	width, height int
	source        string
}

// ANSI sequences: cursor home, erase to the end of the line, erase below
// the cursor, hide and show the cursor.
const (
	ansiHome      = "\x1b[H"
	ansiClear     = "\x1b[2J"
	ansiEraseLine = "\x1b[K"
	ansiEraseDown = "\x1b[J"
	ansiHide      = "\x1b[?25l"
	ansiShow      = "\x1b[?25h"
)

// runTop draws a table of each view fetch gives, one per tick, until ctx
// ends (nil: interrupted), or once with o.once. The first fetch's error
// is the command's; a later one is said, and the next tick asks again.
func runTop(ctx context.Context, o topOptions, fetch func(context.Context) (sidecar.OpsView, string, error),
	ticks <-chan time.Time, s *topScreen) error {
	if o.once {
		s.tty = false // printed once: a table to keep, not a screen
	}
	if s.tty {
		fmt.Fprint(s.out, ansiHide)
		defer fmt.Fprint(s.out, ansiShow)
	}
	shown := false
	for {
		v, source, err := fetch(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !shown:
			return err
		case err != nil && s.tty:
			s.draw(fmt.Sprintf("%s  %s: %v; asking again every %v", time.Now().Format(time.TimeOnly), source, err, o.interval))
		case err != nil:
			fmt.Fprintf(s.errOut, "mcpvisor: top: %s: %s: %v\n", time.Now().Format(time.TimeOnly), source, err)
		default:
			shown = true
			oo := o
			oo.source = source
			if s.size != nil {
				oo.width, oo.height = s.size()
			}
			if o.once {
				oo.height = 0 // printed once: every row
			}
			s.draw(renderTop(v, oo))
		}
		if o.once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
		}
	}
}

// draw shows one frame: on a terminal in place of the last, else after
// it, separated by a blank line.
func (s *topScreen) draw(frame string) {
	defer func() { s.frames++ }()
	if !s.tty {
		if s.frames > 0 {
			fmt.Fprintln(s.out)
		}
		fmt.Fprint(s.out, frame)
		return
	}
	var b strings.Builder
	if s.frames == 0 {
		b.WriteString(ansiClear)
	}
	b.WriteString(ansiHome)
	for line := range strings.Lines(frame) {
		b.WriteString(strings.TrimSuffix(line, "\n"))
		b.WriteString(ansiEraseLine + "\n")
	}
	b.WriteString(ansiEraseDown)
	fmt.Fprint(s.out, b.String())
}

// topRow is one server's cells, and the figures it is sorted by.
type topRow struct {
	sv    sidecar.OpsServerView
	cells []string
}

// renderTop is the view as top shows it: the totals line, a blank line,
// the table's head and a row per server in o.sort's order, each line at
// most o.width columns, and at most o.height lines (the rows that do
// not fit are counted).
func renderTop(v sidecar.OpsView, o topOptions) string {
	servers := slices.Clone(v.Servers)
	sortServers(servers, o.sort)
	step := time.Duration(v.StepMs) * time.Millisecond

	head := []string{"NAME", "STATE", "RESTARTS", "CALLS/S", "ERR%", "P50", "P99", "PENDING"}
	right := []bool{false, false, true, true, true, true, true, true}
	// In a cluster, where each server runs.
	clustered := slices.ContainsFunc(servers, func(sv sidecar.OpsServerView) bool { return sv.Node != "" })
	if clustered {
		head = slices.Insert(head, 2, "NODE")
		right = slices.Insert(right, 2, false)
	}
	sparkAt := len(head)
	spark, sparkTitle := sparkMetric(o.sort)
	span := sparkCoverage(v, step)
	if span > 0 {
		head = append(head, sparkTitle+" "+shortDuration(span))
		right = append(right, false)
	}
	type series struct {
		values []float64
		has    []bool
	}
	sparks := make([]series, len(servers))
	top := 0.0
	if span > 0 {
		for i, sv := range servers {
			v, h := sparkSeries(sv.Points, step, spark)
			sparks[i] = series{v, h}
			for j := range v {
				if h[j] {
					top = max(top, v[j])
				}
			}
		}
	}
	rows := make([][]string, len(servers))
	for i, sv := range servers {
		rc := sv.Recent
		errPct, p50, p99 := "-", "-", "-"
		if rc.Calls > 0 {
			errPct = strconv.FormatFloat(rc.ErrorRate*100, 'f', 1, 64) + "%"
			p50, p99 = formatMs(rc.P50), formatMs(rc.P99)
		}
		rows[i] = []string{printable(sv.Name), printable(string(sv.State)), strconv.Itoa(sv.Restarts), formatRate(rc.Rate),
			errPct, p50, p99, strconv.Itoa(sv.Pending)}
		if clustered {
			node := "here"
			if sv.Node != "" {
				node = printable(sv.Node)
			}
			rows[i] = slices.Insert(rows[i], 2, node)
		}
		if span > 0 {
			rows[i] = append(rows[i], sparkline(sparks[i].values, sparks[i].has, top))
		}
	}

	widths := make([]int, len(head))
	for c := range head {
		widths[c] = utf8.RuneCountInString(head[c])
		for _, r := range rows {
			widths[c] = max(widths[c], utf8.RuneCountInString(r[c]))
		}
	}
	if o.width > 0 {
		widths, head = fitColumns(widths, head, o.width, sparkAt)
	}

	var b strings.Builder
	line := func(s string) {
		s = strings.TrimRight(s, " ")
		if o.width > 0 {
			s = truncate(s, o.width)
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	line(topTotals(v, o))
	line("")
	line(tableLine(head, widths, right))
	shown := len(rows)
	if o.height > 0 && 3+shown > o.height {
		shown = max(o.height-4, 0) // room for the line that counts the others
	}
	for _, r := range rows[:shown] {
		line(tableLine(r, widths, right))
	}
	if shown < len(rows) {
		line(fmt.Sprintf("… and %d more", len(rows)-shown))
	}
	return b.String()
}

// sortServers orders servers by key, largest first (name: A to Z), ties
// by name.
func sortServers(servers []sidecar.OpsServerView, key string) {
	slices.SortStableFunc(servers, func(a, b sidecar.OpsServerView) int {
		var c int
		switch key {
		case "p99":
			c = cmp.Compare(b.Recent.P99, a.Recent.P99)
		case "errors":
			c = cmp.Or(cmp.Compare(b.Recent.ErrorRate, a.Recent.ErrorRate), cmp.Compare(b.Recent.Errors, a.Recent.Errors))
		case "rate":
			c = cmp.Compare(b.Recent.Rate, a.Recent.Rate)
		case "restarts":
			c = cmp.Compare(b.Restarts, a.Restarts)
		}
		return cmp.Or(c, strings.Compare(a.Name, b.Name))
	})
}

// fitColumns narrows the table to width: the name is cut first, down
// to 16 characters; then the sparkline goes and the name has the room
// left, down to 6. A table that still does not fit has its lines cut.
func fitColumns(widths []int, head []string, width, sparkColumn int) ([]int, []string) {
	name := widths[0]
	others := func() int {
		n := 2 * (len(widths) - 1)
		for _, w := range widths[1:] {
			n += w
		}
		return n
	}
	if room := width - others(); room >= min(name, 16) || len(widths) <= sparkColumn {
		widths[0] = max(min(name, room), min(name, 16))
		if len(widths) <= sparkColumn {
			widths[0] = max(min(name, room), min(name, 6))
		}
		return widths, head
	}
	widths, head = widths[:sparkColumn], head[:sparkColumn]
	widths[0] = max(min(name, width-others()), min(name, 6))
	return widths, head
}

// tableLine lays cells out in columns of widths, two spaces apart, the
// numbers right-aligned; a cell wider than its column is cut with "…",
// the cells beyond the columns dropped.
func tableLine(cells []string, widths []int, right []bool) string {
	var b strings.Builder
	for c, w := range widths {
		if c > 0 {
			b.WriteString("  ")
		}
		cell := truncate(cells[c], w)
		pad := strings.Repeat(" ", w-utf8.RuneCountInString(cell))
		if right[c] {
			b.WriteString(pad + cell)
		} else {
			b.WriteString(cell + pad)
		}
	}
	return b.String()
}

// truncate cuts s to at most n characters, the last of a cut one "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// topTotals is the line above the table: the time of the view, the
// servers, and their figures summed.
func topTotals(v sidecar.OpsView, o topOptions) string {
	var ready, pending, restarts int
	var calls, errs uint64
	var rate float64
	for _, sv := range v.Servers {
		if sv.State == mcpvisor.StateReady {
			ready++
		}
		pending += sv.Pending
		restarts += sv.Restarts
		calls += sv.Recent.Calls
		errs += sv.Recent.Errors
		rate += sv.Recent.Rate
	}
	errPct := "-"
	if calls > 0 {
		errPct = strconv.FormatFloat(float64(errs)/float64(calls)*100, 'f', 1, 64) + "%"
	}
	s := fmt.Sprintf("mcpvisor top  %s  %d servers, %d ready  %s calls/s  errors %s  pending %d  restarts %d  (last minute, by %s)",
		v.Time.Local().Format(time.TimeOnly), len(v.Servers), ready, formatRate(rate), errPct, pending, restarts, o.sort)
	if o.source != "" {
		s += "  " + o.source
	}
	return s
}

// sparkMetric is what the sparkline of the order key plots, and its
// column's title: ok false for a step with nothing to plot.
func sparkMetric(key string) (func(group []opstats.Point, step time.Duration) (float64, bool), string) {
	switch key {
	case "p99":
		return func(g []opstats.Point, _ time.Duration) (float64, bool) {
			most, seen := 0.0, false
			for _, p := range g {
				if p.Calls > 0 {
					most, seen = max(most, p.P99), true
				}
			}
			return most, seen
		}, "P99"
	case "errors":
		return func(g []opstats.Point, _ time.Duration) (float64, bool) {
			var calls, errs float64
			for _, p := range g {
				calls += float64(p.Calls)
				errs += math.Round(p.ErrorRate * float64(p.Calls))
			}
			if calls == 0 {
				return 0, false
			}
			return errs / calls, true
		}, "ERR%"
	}
	return func(g []opstats.Point, step time.Duration) (float64, bool) {
		var calls float64
		for _, p := range g {
			calls += float64(p.Calls)
		}
		return calls / (float64(len(g)) * step.Seconds()), true
	}, "CALLS/S"
}

// sparkPoints is the last of points that the sparkline covers.
func sparkPoints(points []opstats.Point, step time.Duration) []opstats.Point {
	if step <= 0 {
		return nil
	}
	n := int(min(int64(len(points)), int64((sparkSpan+step-1)/step)))
	return points[len(points)-n:]
}

// sparkCoverage is the span the sparklines cover: the most points any
// server has, up to sparkSpan; 0 for none.
func sparkCoverage(v sidecar.OpsView, step time.Duration) time.Duration {
	n := 0
	for _, sv := range v.Servers {
		n = max(n, len(sparkPoints(sv.Points, step)))
	}
	return time.Duration(n) * step
}

// sparkLevels are the sparkline's characters, lowest first.
var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// sparkSeries is metric over the last sparkSpan of points, oldest
// first, at most sparkWidth values, each over as many steps as that
// takes (the last one ending with the step under way); has is false
// where there is nothing to plot.
func sparkSeries(points []opstats.Point, step time.Duration, metric func([]opstats.Point, time.Duration) (float64, bool)) (values []float64, has []bool) {
	points = sparkPoints(points, step)
	if len(points) == 0 {
		return nil, nil
	}
	per := (len(points) + sparkWidth - 1) / sparkWidth
	for end := len(points); end > 0; end -= per {
		v, ok := metric(points[max(end-per, 0):end], step)
		values = append(values, v)
		has = append(has, ok)
	}
	slices.Reverse(values)
	slices.Reverse(has)
	return values, has
}

// sparkline draws values scaled to top, the column's largest, so that
// the rows compare: a blank where there is nothing to plot.
func sparkline(values []float64, has []bool, top float64) string {
	out := make([]rune, len(values))
	for i, v := range values {
		switch {
		case !has[i]:
			out[i] = ' '
		case top <= 0 || v <= 0:
			out[i] = sparkLevels[0]
		default:
			l := int(math.Ceil(v/top*float64(len(sparkLevels)))) - 1
			out[i] = sparkLevels[min(max(l, 0), len(sparkLevels)-1)]
		}
	}
	return string(out)
}

// formatRate is calls per second, to two significant figures or so.
func formatRate(r float64) string {
	switch {
	case r <= 0:
		return "0"
	case r < 0.01:
		return "<0.01"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 2, 64)
	case r < 100:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// formatMs is a latency in milliseconds in its unit: µs, ms, s or m.
func formatMs(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms*1000, 'f', 0, 64) + "µs"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	case ms < 60_000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(ms/60_000, 'f', 1, 64) + "m"
}

// shortDuration is d as "10m", "90s" or "1h".
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
