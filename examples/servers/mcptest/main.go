// Command mcptest is a scriptable, deliberately misbehaving MCP stdio server
// for mcpvisor's integration tests: flags make it hang, crash, flood, print
// banners, ignore signals or leave grandchildren behind. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

// config is every flag. MCPTEST_ARGS holds the same flags, split on white
// space and applied before the command line, which wins.
type config struct {
	version              string
	noVersion            bool
	tools                int
	page                 int
	endlessCursor        bool
	banner               int
	hangCalls            bool
	hangInit             bool
	slowModern           bool
	dual                 bool
	initArrived          chan struct{} // -slow-modern: closed when initialize arrives
	initOnce             sync.Once
	stopReadingAfterInit bool
	stopReadingAfterList bool
	stopped              atomic.Bool // a stop-reading flag took effect: stdin reads nothing more
	crashAfter           int
	exitAtStart          int
	crashAfterMS         int
	floodBytes           int
	endlessOutput        bool
	oversizeResponse     int
	stderrChatter        int
	grandchild           bool
	ignoreSIGTERM        bool
	name                 string
	duplicateTools       bool
	longDescription      int
	badSchema            bool
	eventAtStart         bool
	tasks                bool
	taskState            string
	toolNames            []string
	rugPull              string
}

func parseConfig(args []string, env string, stderr io.Writer) (*config, error) {
	var c config
	fs := flag.NewFlagSet("mcptest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.version, "version", "", `protocolVersion to answer in initialize (default: echo the client's if it is "2025-11-25", else "2025-11-25")`)
	fs.BoolVar(&c.noVersion, "no-version", false, "leave protocolVersion out of the initialize result")
	fs.IntVar(&c.tools, "tools", 0, "add `N` extra tools t0000, t0001, ...")
	fs.IntVar(&c.page, "page", 0, "tools/list page size `N` (0: no paging)")
	fs.BoolVar(&c.endlessCursor, "endless-cursor", false, "always return a nextCursor from tools/list (a new one each page)")
	fs.IntVar(&c.banner, "banner", 0, "print `N` non-JSON lines on stdout before anything else")
	fs.BoolVar(&c.hangCalls, "hang-calls", false, "accept tools/call and never answer")
	fs.BoolVar(&c.hangInit, "hang-init", false, "never answer initialize")
	fs.BoolVar(&c.dual, "dual", false, "speak 2026-07-28 too (server/discover, no handshake) beside the initialize era: a dual-era server")
	fs.BoolVar(&c.slowModern, "slow-modern", false, "speak 2026-07-28 only, and answer server/discover only once an initialize has arrived (a modern server still starting when its client stopped waiting for a first answer); initialize is refused, as a modern-only server does")
	fs.BoolVar(&c.stopReadingAfterInit, "stop-reading-after-init", false, "stop reading stdin after notifications/initialized, but stay alive")
	fs.BoolVar(&c.stopReadingAfterList, "stop-reading-after-list", false, "answer the first tools/list, then read nothing more (the client sees a ready server that stopped reading), but stay alive")
	fs.IntVar(&c.crashAfter, "crash-after", 0, "exit(3) when the `N`th tools/call arrives")
	fs.IntVar(&c.exitAtStart, "exit-at-start", -1, "exit immediately with `CODE`")
	fs.IntVar(&c.crashAfterMS, "crash-after-ms", 0, "exit(3) `N` ms after answering initialize")
	fs.IntVar(&c.floodBytes, "flood-bytes", 0, "on the first tools/call write an `N`-byte frame with no newline, then a newline")
	fs.BoolVar(&c.endlessOutput, "endless-output", false, "on the first tools/call start a response frame and never end it: text without a newline, for as long as stdout takes it")
	fs.IntVar(&c.oversizeResponse, "oversize-response", 0, "answer echo with a valid response frame of about `N` bytes")
	fs.IntVar(&c.stderrChatter, "stderr-chatter", 0, "write `N` lines to stderr at startup")
	fs.BoolVar(&c.grandchild, "grandchild", false, `start "sleep 1000" at startup and print "grandchild pid N" to stderr`)
	fs.BoolVar(&c.ignoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM and stdin EOF (only SIGKILL ends it)")
	fs.StringVar(&c.name, "name", "mcptest", "serverInfo.name")
	fs.BoolVar(&c.duplicateTools, "duplicate-tools", false, "list the tool echo twice")
	fs.IntVar(&c.longDescription, "long-description", 0, "make echo's description `N` bytes long")
	fs.BoolVar(&c.badSchema, "bad-schema", false, `add the tool bad_schema, whose inputSchema is a JSON string and outputSchema an array`)
	fs.BoolVar(&c.eventAtStart, "event-at-start", false, `send a custom "event/test" {"n":0} notification once notifications/initialized arrives`)
	fs.BoolVar(&c.tasks, "tasks", true, "declare the tasks capability and answer tasks/* (sleep_task needs it); -tasks=false turns it off")
	fs.StringVar(&c.taskState, "task-state", "", "keep every task as `DIR`/<taskId>.json; a server restarted on DIR answers for them and finishes a sleep_task left working")
	fs.StringVar(&c.rugPull, "rug-pull", "description", "what the tool rug_pull changes of echo: `WHAT` is description (poisoned), icons (its icon's URL) or meta (its _meta.ui.resourceUri); with icons or meta echo lists an icon and a _meta.ui from the start")
	fs.Func("tool-name", "add a tool named `NAME` (any string; repeatable) that answers \"called <the name it was called by>\"", func(name string) error {
		c.toolNames = append(c.toolNames, name)
		return nil
	})
	all := append(strings.Fields(env), args...)
	if err := fs.Parse(all); err != nil {
		return nil, err
	}
	c.initArrived = make(chan struct{})
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch c.rugPull {
	case "description", "icons", "meta":
	default:
		return nil, fmt.Errorf("-rug-pull %q: want description, icons or meta", c.rugPull)
	}
	return &c, nil
}

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv("MCPTEST_ARGS"), os.Stderr)
	if err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(2)
	}
	os.Exit(run(cfg))
}

func run(cfg *config) int {
	if cfg.exitAtStart >= 0 {
		return cfg.exitAtStart
	}
	if cfg.ignoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	for i := range cfg.stderrChatter {
		fmt.Fprintf(os.Stderr, "mcptest: startup chatter %d/%d\n", i+1, cfg.stderrChatter)
	}
	if cfg.grandchild {
		pid, err := startSleeper()
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "grandchild pid %d\n", pid)
	}
	for i := range cfg.banner {
		fmt.Fprintf(os.Stdout, "Starting server v1.0... (banner line %d/%d)\n", i+1, cfg.banner)
	}

	// SIGINT ends Serve; watching a signal also keeps the runtime from
	// declaring a deadlock while -stop-reading-after-init idles.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := newServer(cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	var stdin io.Reader = os.Stdin
	if cfg.stopReadingAfterInit || cfg.stopReadingAfterList {
		stdin = gateStdin(&cfg.stopped)
	}
	if err := srv.Serve(ctx, stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
	}
	if cfg.ignoreSIGTERM {
		for {
			time.Sleep(time.Hour) // stdin EOF ignored too: wait for SIGKILL
		}
	}
	return 0
}

// startSleeper starts "sleep 1000" with stdio on /dev/null (so it holds none
// of our pipes) in our process group, and reaps it if it ever exits.
func startSleeper() (int, error) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start grandchild: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// testServer holds the state the tools and middleware share.
type testServer struct {
	cfg            *config
	srv            *mcpserve.Server
	calls          atomic.Int64
	flooded        atomic.Bool
	crashArm       sync.Once
	askSlot        chan struct{} // serialises ask_then_answer: its ids are fixed
	echoTool       mcpserve.Tool
	endless        atomic.Int64
	endlessCursors sync.Map // "endless-N" → the real cursor it stands for
}

func newServer(cfg *config, logger *slog.Logger) *mcpserve.Server {
	ts := &testServer{cfg: cfg, askSlot: make(chan struct{}, 1)}
	ts.srv = mcpserve.New(mcpserve.Options{
		Name:             cfg.name,
		Version:          "1.0.0",
		NegotiateVersion: ts.negotiate,
		PageSize:         cfg.page,
		Logger:           logger,
		Tasks:            cfg.tasks,
		TaskPollInterval: 500 * time.Millisecond,
		TaskTTL:          time.Minute,
		TaskStateDir:     cfg.taskState,
		Modern:           cfg.slowModern || cfg.dual,
		Middleware: []mcpserve.Middleware{
			ts.crashAfterMiddleware,
			ts.initMiddleware,
			ts.callMiddleware,
			ts.listMiddleware,
		},
	})
	ts.addTools()
	return ts.srv
}

func (ts *testServer) negotiate(requested string) string {
	switch {
	case ts.cfg.noVersion:
		return ""
	case ts.cfg.version != "":
		return ts.cfg.version
	}
	return mcpserve.LatestProtocolVersion // which is also the echo of "2025-11-25"
}

func (ts *testServer) crashAfterMiddleware(next mcpserve.Handler) mcpserve.Handler {
	return func(ctx context.Context, req *mcpserve.Request) (any, error) {
		if req.Method == "tools/call" && ts.cfg.crashAfter > 0 && ts.calls.Add(1) == int64(ts.cfg.crashAfter) {
			fmt.Fprintf(os.Stderr, "mcptest: crash-after: tools/call number %d arrived, exiting with code 3\n", ts.cfg.crashAfter)
			os.Exit(3)
		}
		return next(ctx, req)
	}
}

func (ts *testServer) initMiddleware(next mcpserve.Handler) mcpserve.Handler {
	return func(ctx context.Context, req *mcpserve.Request) (any, error) {
		switch req.Method {
		case "server/discover":
			if ts.cfg.slowModern {
				select {
				case <-ts.cfg.initArrived:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		case "initialize":
			if ts.cfg.slowModern {
				ts.cfg.initOnce.Do(func() { close(ts.cfg.initArrived) })
				return nil, mcpserve.Errorf(mcpserve.CodeUnsupportedProtocolVersion,
					"initialize is not supported: this server speaks only protocol version %s (send server/discover)", mcpserve.ModernVersion)
			}
			if ts.cfg.hangInit {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			res, err := next(ctx, req)
			if err == nil && ts.cfg.crashAfterMS > 0 {
				ts.crashArm.Do(func() {
					time.AfterFunc(time.Duration(ts.cfg.crashAfterMS)*time.Millisecond, func() {
						fmt.Fprintf(os.Stderr, "mcptest: crash-after-ms: %d ms after initialize, exiting with code 3\n", ts.cfg.crashAfterMS)
						os.Exit(3)
					})
				})
			}
			return res, err
		case "tools/list":
			res, err := next(ctx, req)
			if ts.cfg.stopReadingAfterList {
				ts.cfg.stopped.Store(true) // before the answer leaves
				ts.srv.StopReading()
			}
			return res, err
		case "notifications/initialized":
			res, err := next(ctx, req)
			if ts.cfg.eventAtStart {
				if err := ts.srv.Notify("event/test", map[string]any{"n": 0}); err != nil {
					return res, err
				}
			}
			if ts.cfg.stopReadingAfterInit {
				ts.cfg.stopped.Store(true)
				return res, mcpserve.ErrStopReading
			}
			return res, err
		}
		return next(ctx, req)
	}
}

func (ts *testServer) callMiddleware(next mcpserve.Handler) mcpserve.Handler {
	return func(ctx context.Context, req *mcpserve.Request) (any, error) {
		if req.Method != "tools/call" {
			return next(ctx, req)
		}
		if ts.cfg.floodBytes > 0 && ts.flooded.CompareAndSwap(false, true) {
			if err := ts.srv.WriteRaw(floodFrame(req.ID, ts.cfg.floodBytes)); err != nil {
				return nil, err
			}
			return nil, mcpserve.ErrNoResponse
		}
		if ts.cfg.endlessOutput && ts.flooded.CompareAndSwap(false, true) {
			ts.writeEndless(req.ID)
			return nil, mcpserve.ErrNoResponse
		}
		if ts.cfg.hangCalls {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return next(ctx, req)
	}
}

// writeEndless writes the start of a response frame to id and then text
// with no newline until stdout fails (the client closed it, or the
// process is stopped).
func (ts *testServer) writeEndless(id json.RawMessage) {
	head := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
	if ts.srv.WriteRaw([]byte(head)) != nil {
		return
	}
	block := []byte(strings.Repeat("a", 64<<10))
	for ts.srv.WriteRaw(block) == nil {
	}
}

// floodFrame is n bytes of the start of a response frame to id, padded with
// 'a' inside the text string and never closed, followed by a newline.
func floodFrame(id json.RawMessage, n int) []byte {
	prefix := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
	b := make([]byte, 0, max(n, len(prefix))+1)
	b = append(b, prefix...)
	for len(b) < n {
		b = append(b, 'a')
	}
	b = b[:n]
	return append(b, '\n')
}

// listMiddleware implements -duplicate-tools and -endless-cursor. Endless
// mode hands out a fresh cursor "endless-N" for every page, standing for
// the real next page or, past the last page, for the first one: the list
// never ends and no cursor repeats.
func (ts *testServer) listMiddleware(next mcpserve.Handler) mcpserve.Handler {
	return func(ctx context.Context, req *mcpserve.Request) (any, error) {
		if req.Method != "tools/list" || (!ts.cfg.endlessCursor && !ts.cfg.duplicateTools) {
			return next(ctx, req)
		}
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(req.Params, &p)
		if ts.cfg.endlessCursor && p.Cursor != "" {
			real, ok := ts.endlessCursors.Load(p.Cursor)
			if !ok {
				return nil, mcpserve.Errorf(mcpserve.CodeInvalidParams, "Invalid params: invalid cursor %q", p.Cursor)
			}
			p.Cursor = real.(string)
			params, _ := json.Marshal(map[string]any{"cursor": p.Cursor})
			if p.Cursor == "" {
				params = nil
			}
			req = &mcpserve.Request{ID: req.ID, Method: req.Method, Params: params}
		}
		res, err := next(ctx, req)
		list, ok := res.(*mcpserve.ListToolsResult)
		if err != nil || !ok {
			return res, err
		}
		if ts.cfg.duplicateTools && p.Cursor == "" {
			list.Tools = append(list.Tools, ts.echoTool)
		}
		if ts.cfg.endlessCursor {
			cursor := "endless-" + strconv.FormatInt(ts.endless.Add(1), 10)
			ts.endlessCursors.Store(cursor, list.NextCursor)
			list.NextCursor = cursor
		}
		return list, nil
	}
}
