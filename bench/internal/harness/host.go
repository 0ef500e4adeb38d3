package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpvisor/mcpvisor"
)

// hostContender is mcpvisor embedded: one Host supervising every server,
// called with Host.Call. Over HTTP, every server is an "http" server with
// the same URL (the one echo server) and allowPrivate, for loopback.
// modern: the stdio echo servers run with -era modern; the host detects the
// era itself (server/discover first), as it does for every server.
// noHistory: the host keeps no call history (Journal.NoCallHistory), to
// show what journaling every call costs.
// traced: the host traces every call (Options.TracerProvider: the
// OpenTelemetry SDK sampling every call, a batch processor, spans
// discarded by the exporter), to show what tracing costs when it is on.
type hostContender struct{ http, modern, noHistory, traced bool }

func (ct hostContender) name() string {
	switch {
	case ct.modern:
		return McpvisorModern
	case ct.noHistory:
		return McpvisorNoHistory
	case ct.traced:
		return McpvisorTraced
	}
	return Mcpvisor
}

// modernReadyWait bounds the wait for the modern contender's servers: if
// the host cannot speak to a modern server it may retry for a long time,
// and the run must go on and say why.
const modernReadyWait = 30 * time.Second

func (ct hostContender) connect(ctx context.Context, env *Env, n int, _ bool) (client, error) {
	if ct.modern {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, modernReadyWait)
		defer cancel()
	}
	h, err := ct.start(ctx, env, n)
	if err != nil {
		return nil, err
	}
	if err := ct.checkEra(h); err != nil {
		h.close()
		return nil, err
	}
	c := &hostClient{benchHost: h, tools: make([]string, n)}
	for i := range c.tools {
		c.tools[i] = "mcp__" + serverName(i) + "__echo"
	}
	return c, nil
}

// start opens a host of n servers, named serverName(i), with the default
// options, and returns it once every server is ready.
func (ct hostContender) start(ctx context.Context, env *Env, n int) (*benchHost, error) {
	opts := mcpvisor.Options{Journal: mcpvisor.JournalOptions{NoCallHistory: ct.noHistory}}
	var tp *sdktrace.TracerProvider
	if ct.traced {
		tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
		opts.TracerProvider = tp
	}
	h, err := ct.startWith(ctx, env, n, opts)
	if err != nil || tp == nil {
		return h, err
	}
	h.onClose = func() { tp.Shutdown(context.Background()) }
	return h, nil
}

// discardSpans is an exporter that keeps nothing: the traced contender
// measures making and batching spans, not a collector.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// startWith is start with opts, whose Config it sets.
func (ct hostContender) startWith(ctx context.Context, env *Env, n int, opts mcpvisor.Options) (*benchHost, error) {
	servers := make([]mcpvisor.ServerConfig, n)
	for i := range servers {
		servers[i] = mcpvisor.ServerConfig{Name: serverName(i), Command: env.Server, Args: echoServerArgs(ct.modern), Enabled: true}
		if ct.http {
			servers[i] = mcpvisor.ServerConfig{Name: serverName(i), Type: "http", URL: env.httpURL, AllowPrivate: true, Enabled: true}
		}
	}
	opts.Config = &mcpvisor.Config{Servers: servers}
	h, err := openHost(ctx, env, opts)
	if err != nil {
		return nil, err
	}
	if err := h.WaitReady(ctx); err != nil {
		err = fmt.Errorf("%w%s", err, lastErrors(h))
		h.close()
		return nil, err
	}
	return h, nil
}

// checkEra returns an error unless every server speaks the contender's era:
// 2026-07-28 for the modern contender, a legacy revision otherwise.
func (ct hostContender) checkEra(h *benchHost) error {
	for _, st := range h.Status() {
		if modern := st.ProtocolVersion == modernVersion; modern != ct.modern {
			return fmt.Errorf("server %s is ready speaking protocol %q, not the %s era", st.Name, st.ProtocolVersion, map[bool]string{true: "modern", false: "legacy"}[ct.modern])
		}
	}
	return nil
}

// lastErrors gives the last error and restarts of the first servers that
// have one, for an error message: why the host could not make them ready.
func lastErrors(h *benchHost) string {
	const shown = 3
	var b strings.Builder
	more := 0
	for _, st := range h.Status() {
		switch {
		case st.LastError == "":
		case more < shown:
			fmt.Fprintf(&b, "; %s (%s, %d restart(s)): %s", st.Name, st.State, st.Restarts, st.LastError)
			more++
		default:
			more++
		}
	}
	if more > shown {
		fmt.Fprintf(&b, "; and %d more server(s) with an error", more-shown)
	}
	return b.String()
}

// benchHost is a Host with its own data directory, removed by close.
type benchHost struct {
	*mcpvisor.Host
	dataDir string
	cleanup func()
	onClose func() // after the host closes, if set
}

// openHost opens a host whose logs go nowhere and whose data directory is
// temporary. Open returns at once; servers start in the background.
func openHost(ctx context.Context, env *Env, opts mcpvisor.Options) (*benchHost, error) {
	dir, cleanup, err := env.tempDir("mcpbench-host-")
	if err != nil {
		return nil, err
	}
	opts.DataDir = dir
	opts.Logger = slog.New(slog.DiscardHandler)
	h, err := mcpvisor.Open(ctx, opts)
	if err != nil {
		cleanup()
		return nil, err
	}
	return &benchHost{Host: h, dataDir: dir, cleanup: cleanup}, nil
}

func (h *benchHost) close() error {
	err := h.Host.Close()
	if h.onClose != nil {
		h.onClose()
	}
	h.cleanup()
	return err
}

type hostClient struct {
	*benchHost
	tools []string
}

func (c *hostClient) call(ctx context.Context, server int) error {
	return c.callTool(ctx, c.tools[server], echoArgs)
}

// callTool calls tool; a result that is an error is one too.
func (h *benchHost) callTool(ctx context.Context, tool string, args json.RawMessage) error {
	res, err := h.Call(ctx, tool, args)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: tool error: %s", tool, res.Text)
	}
	return nil
}
