package sidecar

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Metrics is the sidecar's Prometheus instrumentation: call counts and
// latencies, observed by a stage of the host's call pipeline
// (CallMiddleware), so every call is counted whoever made it (the API, the
// /mcp gateway, an embedder), and the host's state, read at scrape time
// (Watch). It has its own registry, so several sidecars (or tests) in one
// process do not collide and nothing leaks into prometheus.DefaultRegisterer.
//
// Its methods are safe for concurrent use. It starts no goroutine and holds
// nothing that needs closing.
type Metrics struct {
	registry     *prometheus.Registry
	calls        *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	toolDuration *prometheus.HistogramVec
	personWait   *prometheus.HistogramVec
	tools        toolLabels
	handler      http.Handler
}

// MetricsOptions tune a Metrics; the zero value takes the defaults.
type MetricsOptions struct {
	// MaxToolLabels caps the distinct (server, tool) pairs the per-tool
	// series are labelled with; a call to any other tool is counted under
	// tool "other" of its server. Zero: DefaultMaxToolLabels; below zero:
	// every tool is "other".
	MaxToolLabels int
}

// DefaultMaxToolLabels bounds the per-tool series: with 17 buckets each,
// about 20,000 series of tool latency at most, whatever the servers list.
const DefaultMaxToolLabels = 1000

// otherTool is the tool label of the calls past MaxToolLabels.
const otherTool = "other"

// toolLabels hands out tool labels up to a cap, first come first served:
// a tool once labelled keeps its label for the life of the Metrics, so a
// series never changes meaning.
type toolLabels struct {
	max  int
	mu   sync.RWMutex
	seen map[[2]string]bool
}

func (l *toolLabels) label(server, tool string) string {
	k := [2]string{server, tool}
	l.mu.RLock()
	ok := l.seen[k]
	l.mu.RUnlock()
	if ok {
		return tool
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[k] {
		return tool
	}
	if len(l.seen) >= l.max {
		return otherTool
	}
	l.seen[k] = true
	return tool
}

// callDurationBuckets span a cached lookup (1 ms) to a long tool run
// (5 min); the default buckets stop at 10 s, short of many real tools.
var callDurationBuckets = []float64{
	.001, .0025, .005, .01, .025, .05, .1, .25, .5,
	1, 2.5, 5, 10, 30, 60, 120, 300,
}

// NewMetrics registers the call metrics, the Go runtime's and the
// process's on a new registry. Pass its CallMiddleware to the host's
// Options, then Watch the host once it is open.
func NewMetrics(opts MetricsOptions) *Metrics {
	if opts.MaxToolLabels == 0 {
		opts.MaxToolLabels = DefaultMaxToolLabels
	}
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpvisor_calls_total",
			Help: "Tool calls, by server, tool (the server's own name; \"other\" past the label cap) and outcome.",
		}, []string{"server", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpvisor_call_duration_seconds",
			Help:    "Latency of tool calls, by server and outcome.",
			Buckets: callDurationBuckets,
		}, []string{"server", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpvisor_tool_call_duration_seconds",
			Help:    "Latency of tool calls, by server and tool (the server's own name; \"other\" past the label cap).",
			Buckets: callDurationBuckets,
		}, []string{"server", "tool"}),
		personWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpvisor_call_person_wait_seconds",
			Help:    "Time tool calls waited for a person's answer (an elicitation, an approval), by server; left out of the call latencies. Only calls that waited are observed.",
			Buckets: callDurationBuckets,
		}, []string{"server"}),
		tools: toolLabels{max: max(opts.MaxToolLabels, 0), seen: map[[2]string]bool{}},
	}
	m.registry.MustRegister(
		m.calls,
		m.duration,
		m.toolDuration,
		m.personWait,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
	return m
}

// Watch registers h's state (servers, pending calls, the journal, the
// inboxes), read on each scrape, not cached. Call it once per host; h may
// be closed before the Metrics is dropped (a scrape then reports what the
// closed host still knows).
func (m *Metrics) Watch(h *mcpvisor.Host) {
	m.registry.MustRegister(newHostCollector(h))
}

// CallMiddleware is the stage of the host's request pipeline that observes
// every tool call: pass it in mcpvisor.Options.CallMiddleware. A call's
// latency is Call.Latency, without the time it waited for a person, which
// is observed apart (mcpvisor_call_person_wait_seconds), nor for its
// server to start (the server's lifecycle says how long that took).
func (m *Metrics) CallMiddleware(next mcpvisor.CallFunc) mcpvisor.CallFunc {
	return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
		res, err := next(ctx, c)
		if c.Method == protocol.MethodToolsCall { // a resource's URI is no label
			m.ObserveCall(c.Server, c.Name, callOutcome(res, err), c.Latency())
			if w := c.Waited(); w > 0 {
				m.personWait.WithLabelValues(c.Server).Observe(w.Seconds())
			}
		}
		return res, err
	}
}

// callOutcome is a finished call's outcome label: "ok", "tool_error" (the
// tool answered with IsError) or the API's error code.
func callOutcome(res *mcpvisor.Result, err error) string {
	switch {
	case err != nil:
		return classify(err).Code
	case res != nil && res.IsError:
		return "tool_error"
	}
	return "ok"
}

// Handler serves the metrics in the Prometheus exposition formats (text or
// protobuf, as the scraper asks). It does no authentication: mount it
// behind the API's.
func (m *Metrics) Handler() http.Handler { return m.handler }

// ObserveCall records one finished tool call: server is "" for the host's
// own tools, tool the server's own name for it (not the namespaced
// mcp__<server>__<tool>), outcome a short stable word such as "ok",
// "tool_error" (the tool answered with IsError) or an error code. It never
// blocks.
func (m *Metrics) ObserveCall(server, tool, outcome string, d time.Duration) {
	tool = m.tools.label(server, tool)
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.duration.WithLabelValues(server, outcome).Observe(d.Seconds())
	m.toolDuration.WithLabelValues(server, tool).Observe(d.Seconds())
}

// Gatherer is the registry the metrics are on: telemetry.StartMetrics
// exports it over OTLP, under the same names.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

// serverStates are every state a server can be in, so the state gauge has a
// series per state and a query need not treat a missing series as 0.
var serverStates = []mcpvisor.State{
	mcpvisor.StateStarting,
	mcpvisor.StateInitializing,
	mcpvisor.StateReady,
	mcpvisor.StateBackoff,
	mcpvisor.StateStopped,
	mcpvisor.StateDisabled,
	mcpvisor.StateFailed,
	mcpvisor.StateNeedsAuth,
}

// hostCollector reads the host at scrape time. Host.Status, Journal.Stats,
// Host.Elicitations, Host.Approvals and Host.AuthStatuses are snapshots
// that do not queue behind the actors (nor wait on an authorization
// server), so a scrape cannot wedge on a busy or silent server.
type hostCollector struct {
	host *mcpvisor.Host

	serverState, serverRestarts, serverTools, pendingCalls *prometheus.Desc

	eventsIngested, eventsDropped, eventsPending *prometheus.Desc
	eventsRateLimited                            *prometheus.Desc

	journalCommits, journalRecords, journalWriteFailures *prometheus.Desc
	journalQueued, journalSize                           *prometheus.Desc
	journalReadOnly, journalDiskFree                     *prometheus.Desc

	elicitationsPending, approvalsPending *prometheus.Desc

	authSignedIn, authExpiry *prometheus.Desc
}

func newHostCollector(h *mcpvisor.Host) *hostCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("mcpvisor_"+name, help, labels, nil)
	}
	return &hostCollector{
		host:           h,
		serverState:    d("server_state", "1 for the state each server is in now, 0 for the others.", "server", "state"),
		serverRestarts: d("server_restarts", "Restarts of each server since it was started or last re-enabled (resets, so a gauge).", "server"),
		serverTools:    d("server_tools", "Tools in each server's current catalog.", "server"),
		pendingCalls:   d("pending_calls", "Requests in flight on each ready server's connection.", "server"),

		eventsIngested:    d("events_ingested_total", "Server events committed to the journal since the host started."),
		eventsDropped:     d("events_dropped_total", "Records from servers (events, lifecycle, call history) dropped because the journal's queue was full or a write failed."),
		eventsPending:     d("events_pending", "Events in the journal not yet acknowledged."),
		eventsRateLimited: d("events_rate_limited_total", "Events each server pushed past its rate bound (Options.EventRate), dropped and summarised in the journal.", "server"),

		journalCommits:       d("journal_commits_total", "Journal transactions committed (one sync each)."),
		journalRecords:       d("journal_records_total", "Records committed to the journal."),
		journalWriteFailures: d("journal_write_failures_total", "Journal commits that failed."),
		journalQueued:        d("journal_queued_records", "Records ingested from servers waiting for the journal's next commit."),
		journalSize:          d("journal_size_bytes", "Size of the journal on disk, by part: lsm (tables) and vlog (value log, preallocated).", "part"),
		journalReadOnly:      d("journal_read_only", "1 while the journal is read-only because less than its reserve is free on its disk (writes fail, records from servers are dropped and counted), else 0."),
		journalDiskFree:      d("journal_disk_free_bytes", "Space free on the journal's filesystem at its last check."),

		elicitationsPending: d("elicitations_pending", "Elicitations waiting in the built-in inbox for a person's answer."),
		approvalsPending:    d("approvals_pending", "Host-tool calls (register_mcp, delete_mcp, toggle_item) waiting in the approval inbox for a person's decision."),

		authSignedIn: d("server_auth_signed_in", "1 when a remote server that uses OAuth holds a token, 0 when it has none.", "server"),
		authExpiry:   d("server_auth_expiry_seconds", "When the token of a remote server that uses OAuth expires, as a Unix time; absent without a token or an expiry.", "server"),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.serverState, c.serverRestarts, c.serverTools, c.pendingCalls,
		c.eventsIngested, c.eventsDropped, c.eventsPending, c.eventsRateLimited,
		c.journalCommits, c.journalRecords, c.journalWriteFailures, c.journalQueued, c.journalSize,
		c.journalReadOnly, c.journalDiskFree,
		c.elicitationsPending, c.approvalsPending,
		c.authSignedIn, c.authExpiry,
	} {
		ch <- d
	}
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}

	for _, st := range c.host.Status() {
		for _, s := range serverStates {
			v := 0.0
			if st.State == s {
				v = 1
			}
			gauge(c.serverState, v, st.Name, string(s))
		}
		gauge(c.serverRestarts, float64(st.Restarts), st.Name)
		gauge(c.serverTools, float64(st.Tools), st.Name)
	}
	for server, n := range c.host.PendingCalls() {
		gauge(c.pendingCalls, float64(n), server)
	}
	for server, n := range c.host.EventsRateLimited() {
		ch <- prometheus.MustNewConstMetric(c.eventsRateLimited, prometheus.CounterValue, float64(n), server)
	}

	w, s := c.host.Journal().Stats()
	counter(c.eventsIngested, w.Events)
	counter(c.eventsDropped, w.Dropped)
	gauge(c.eventsPending, float64(s.PendingEvents))
	counter(c.journalCommits, w.Commits)
	counter(c.journalRecords, w.Records)
	counter(c.journalWriteFailures, w.WriteFailures)
	gauge(c.journalQueued, float64(w.Queued))
	gauge(c.journalSize, float64(s.LSMBytes), "lsm")
	gauge(c.journalSize, float64(s.VLogBytes), "vlog")
	readOnly := 0.0
	if w.ReadOnly != "" {
		readOnly = 1
	}
	gauge(c.journalReadOnly, readOnly)
	gauge(c.journalDiskFree, float64(w.DiskFree))

	gauge(c.elicitationsPending, float64(len(c.host.Elicitations())))
	gauge(c.approvalsPending, float64(len(c.host.Approvals())))

	// One series per server with an authorizer, whatever its state: the
	// labels are as bounded as the server list.
	for _, a := range c.host.AuthStatuses() {
		v := 0.0
		if a.SignedIn {
			v = 1
		}
		gauge(c.authSignedIn, v, a.Server)
		if a.SignedIn && !a.Expiry.IsZero() {
			gauge(c.authExpiry, float64(a.Expiry.Unix()), a.Server)
		}
	}
}
