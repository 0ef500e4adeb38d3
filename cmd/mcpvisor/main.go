// Command mcpvisor supervises MCP servers and calls their tools.
//
//	mcpvisor run    --config FILE            supervise in the foreground until interrupted
//	mcpvisor serve  --config FILE [--listen ADDR] [--token-file F] [--tls-cert F --tls-key F] [--approve-host-tools]   the HTTP API (sidecar)
//	mcpvisor stdio  --config FILE [--approve-host-tools]   the MCP gateway on stdin/stdout
//	mcpvisor tools  --config FILE [--json]   list every namespaced tool
//	mcpvisor call   --config FILE TOOL [ARGS_JSON] [--json]
//	mcpvisor status --config FILE [--json]
//	mcpvisor events [--pending] [--server S] [--json]
//	mcpvisor events --follow --config FILE
//	mcpvisor events ack ID...
//	mcpvisor history [--server S] [--calls] [--json]
//	mcpvisor resources --config FILE [--server S] [--templates] [--json]
//	mcpvisor resources read --config FILE --server S URI
//	mcpvisor prompts --config FILE [--server S] [--json]
//	mcpvisor prompts get --config FILE --server S PROMPT [key=value ...]
//	mcpvisor approvals [--json]               the running sidecar's host-tool calls waiting for approval
//	mcpvisor approvals allow|deny ID [--reason R]
//
// It is a thin shell over the package mcpvisor API that Go platforms embed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

const usage = `usage: mcpvisor <command> [flags]

commands:
  run     --config FILE             start every server and supervise them until interrupted
  serve   --config FILE [--listen ADDR] [--token-file F] [--tls-cert F --tls-key F] [--approve-host-tools]
                                    supervise the servers behind the HTTP API on loopback
                                    (default 127.0.0.1:7071; token in DIR/token unless given);
                                    /mcp is every server as one MCP server (Streamable HTTP);
                                    a model's register_mcp, delete_mcp and toggle_item wait for
                                    approval unless --approve-host-tools
  stdio   --config FILE [--approve-host-tools]
                                    the same MCP gateway on stdin/stdout, for MCP clients; a
                                    model's register_mcp, delete_mcp and toggle_item are put to the
                                    client's user (elicitation) unless --approve-host-tools
  tools   --config FILE [--json]    start the servers, list every namespaced tool, exit
  call    --config FILE TOOL [ARGS_JSON] [--json] [--detach]
                                    start the one server TOOL needs, call it, print the result;
                                    progress and task ids go to stderr; --detach returns once a
                                    task-running tool has started its task
  tasks   [ID] [--pending] [--json] list the journal's tasks (--pending: unfinished), or show one
  elicitations [--json]             the running sidecar's pending requests for input
  elicitations resolve ID accept|decline|cancel [CONTENT_JSON]
                                    answer one (through the sidecar's API)
  approvals [--json]                the running sidecar's host-tool calls waiting for approval,
                                    with the full command line of each stdio registration
  approvals allow|deny ID [--reason R]
                                    answer one; a denial's reason is shown to the model
  servers enable|disable|delete NAME
                                    change a server of the running sidecar, at once
  (events and events ack go through the sidecar's API when one holds the journal)
  status  --config FILE [--json]    start the servers, wait for them, print their states
  events  [--pending] [--server S] [--method M] [--after ID] [--limit N] [--json]
                                    list the events servers pushed (oldest first)
  events  --follow --config FILE [filters]
                                    run the servers and print their events as they are journaled
  events ack ID...                  mark events processed
  history [--server S] [--calls] [--limit N] [--json]
                                    server transitions, or tool calls with --calls (newest N, default 50)
  resources --config FILE [--server S] [--templates] [--json]
                                    list the resources (or resource templates) of S, or of every server
  resources read --config FILE --server S URI
                                    print a resource's text; binary contents are described, not printed
  prompts --config FILE [--server S] [--json]
                                    list the prompts of S, or of every server
  prompts get --config FILE --server S PROMPT [key=value ...]
                                    render a prompt with its arguments, one "role: text" line per message

flags (every command):
  --config FILE      MCP servers, in the mcpServers JSON format (required by all but events and history)
  --data DIR         data directory: the journal in DIR/journal, logs in DIR/logs (default ./.mcpvisor)
  --log-level LEVEL  debug, info, warn or error (default warn)
  --log-format FMT   text or json (structured slog records, one JSON object per line)
  --wait DURATION    how long tools, status, resources and prompts wait for servers (default 30s)
`

// exitError carries a process exit code with its message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(os.Stderr, "mcpvisor: "+strings.TrimSpace(msg))
	}
	os.Exit(code)
}

type flags struct {
	config    string
	data      string
	logLevel  string
	logFormat string
	json      bool
	wait      time.Duration

	// events, history
	pending, follow, calls bool
	templates              bool   // resources
	detach                 bool   // call
	approveHostTools       bool   // stdio
	reason                 string // approvals deny
	server, method         string
	after                  uint64
	limit                  int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return &exitError{code: 2}
		}
		return nil
	}
	cmd := args[0]
	if cmd == "serve" {
		return cmdServe(ctx, args[1:], stderr)
	}
	switch cmd {
	case "run", "tools", "call", "status", "events", "history", "resources", "prompts", "tasks", "stdio", "elicitations", "approvals", "servers":
	default:
		return &exitError{code: 2, msg: fmt.Sprintf("unknown command %q\n\n%s", cmd, usage)}
	}
	var f flags
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.config, "config", "", "")
	fs.StringVar(&f.data, "data", mcpvisor.DefaultDataDir, "")
	fs.StringVar(&f.logLevel, "log-level", "warn", "")
	fs.StringVar(&f.logFormat, "log-format", "text", "")
	fs.BoolVar(&f.json, "json", false, "")
	fs.DurationVar(&f.wait, "wait", 30*time.Second, "")
	fs.BoolVar(&f.pending, "pending", false, "")
	fs.BoolVar(&f.follow, "follow", false, "")
	fs.BoolVar(&f.calls, "calls", false, "")
	fs.BoolVar(&f.templates, "templates", false, "")
	fs.BoolVar(&f.detach, "detach", false, "")
	fs.BoolVar(&f.approveHostTools, "approve-host-tools", false, "")
	fs.StringVar(&f.reason, "reason", "", "")
	fs.StringVar(&f.server, "server", "", "")
	fs.StringVar(&f.method, "method", "", "")
	fs.Uint64Var(&f.after, "after", 0, "")
	fs.IntVar(&f.limit, "limit", 0, "")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return &exitError{code: 2, msg: fmt.Sprintf("%s: %v\n\n%s", cmd, err, usage)}
	}
	logger, err := newLogger(f.logLevel, f.logFormat, stderr)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	switch cmd {
	case "events":
		return cmdEvents(ctx, f, logger, pos, stdout)
	case "history":
		return cmdHistory(f, logger, stdout)
	case "tasks":
		return cmdTasks(f, logger, pos, stdout)
	case "elicitations":
		return cmdElicitations(ctx, f, pos, stdout)
	case "approvals":
		return cmdApprovals(ctx, f, pos, stdout)
	case "servers":
		return cmdServers(ctx, f, pos, stdout)
	}
	if f.config == "" {
		return &exitError{code: 2, msg: cmd + ": --config FILE is required"}
	}
	cfg, err := mcpvisor.LoadConfig(f.config)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	ctx, stop := signalContext(ctx)
	defer stop()

	switch cmd {
	case "tools":
		return cmdTools(ctx, f, cfg, logger, stdout, stderr)
	case "call":
		return cmdCall(ctx, f, cfg, logger, pos, stdout, stderr)
	case "status":
		return cmdStatus(ctx, f, cfg, logger, stdout)
	case "stdio":
		return cmdStdio(ctx, f, cfg, logger, os.Stdin, stdout)
	case "resources":
		return cmdResources(ctx, f, cfg, logger, pos, stdout)
	case "prompts":
		return cmdPrompts(ctx, f, cfg, logger, pos, stdout)
	default: // "run"
		return cmdRun(ctx, f, cfg, logger, stdout)
	}
}

// signalContext ends with Ctrl-C or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// parseInterspersed parses flags wherever they appear among the positional
// arguments, as users type them (call TOOL ARGS --json).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

func open(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger) (*mcpvisor.Host, error) {
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger})
	return h, lockHint(err)
}

// lockHint adds what to do about a journal another process holds.
func lockHint(err error) error {
	if errors.Is(err, mcpvisor.ErrJournalLocked) {
		return fmt.Errorf("%w (another mcpvisor is running on this data directory; stop it or pass a different --data)", err)
	}
	return err
}

// waitAll waits for every enabled server and reports the ones not ready.
func waitAll(ctx context.Context, h *mcpvisor.Host, wait time.Duration) []mcpvisor.ServerStatus {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, st := range h.Status() {
		if st.Enabled {
			_ = h.WaitReady(ctx, st.Name) // each server on its own: one failure does not stop the wait for others
		}
	}
	var bad []mcpvisor.ServerStatus
	for _, st := range h.Status() {
		if st.Enabled && st.State != mcpvisor.StateReady {
			bad = append(bad, st)
		}
	}
	return bad
}

func notReadyError(bad []mcpvisor.ServerStatus) error {
	if len(bad) == 0 {
		return nil
	}
	var b strings.Builder
	for i, st := range bad {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "server %q is %s", st.Name, st.State)
		if st.LastError != "" {
			fmt.Fprintf(&b, ": %s", st.LastError)
		}
	}
	return &exitError{code: 1, msg: b.String()}
}

func cmdTools(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, stdout, stderr io.Writer) error {
	h, err := open(ctx, f, cfg, logger)
	if err != nil {
		return err
	}
	defer h.Close()
	bad := waitAll(ctx, h, f.wait)
	tools := h.Tools()
	if f.json {
		if tools == nil {
			tools = []mcpvisor.Tool{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(tools); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, t := range tools {
			mark := ""
			if t.Destructive {
				mark = " [destructive]"
			}
			fmt.Fprintf(tw, "%s\t%s%s\n", t.Name, firstLine(t.Description), mark)
		}
		tw.Flush()
	}
	return notReadyError(bad)
}

func cmdCall(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, pos []string, stdout, stderr io.Writer) error {
	if len(pos) < 1 || len(pos) > 2 {
		return &exitError{code: 2, msg: "call: want TOOL [ARGS_JSON]\n\n" + usage}
	}
	tool := pos[0]
	var args json.RawMessage
	if len(pos) == 2 {
		args = json.RawMessage(pos[1])
		if !json.Valid(args) {
			return &exitError{code: 2, msg: fmt.Sprintf("call: ARGS_JSON is not valid JSON: %s", pos[1])}
		}
	}
	server, _, ok := mcpvisor.SplitToolName(tool)
	if !ok {
		return &exitError{code: 2, msg: fmt.Sprintf("call: %q is not a namespaced tool name (mcp__<server>__<tool>)", tool)}
	}
	// Start only the server the tool needs; the registry (the config file's
	// servers and those registered through the API) says whether it exists.
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger, Only: []string{server}})
	if err != nil {
		return lockHint(err)
	}
	defer h.Close()
	sts := h.Status()
	if len(sts) == 0 {
		return fmt.Errorf("call: no server %q in %s or the registry in %s", server, f.config, f.data)
	}
	if !sts[0].Enabled {
		return fmt.Errorf("call: server %q is disabled", server)
	}
	res, err := h.CallWith(ctx, tool, args, mcpvisor.CallOptions{
		Detached: f.detach,
		OnProgress: func(p mcpvisor.Progress) {
			line := fmt.Sprintf("progress %g", p.Progress)
			if p.Total != nil {
				line += fmt.Sprintf("/%g", *p.Total)
			}
			if p.Message != "" {
				line += ": " + p.Message
			}
			fmt.Fprintln(stderr, line)
		},
		OnTask: func(ti mcpvisor.TaskInfo) {
			// The task is journaled: from here a killed CLI leaves it for
			// the next host to resume (mcpvisor tasks ID shows it).
			fmt.Fprintf(stderr, "task %s started on %s\n", ti.ID, ti.Server)
		},
	})
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sidecar.NewResultView(res)); err != nil {
			return err
		}
	} else if !res.IsError {
		fmt.Fprintln(stdout, res.Wire())
	}
	if res.IsError {
		return &exitError{code: 1, msg: fmt.Sprintf("%s returned an error: %s", tool, res.Wire())}
	}
	return nil
}

func cmdStatus(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, stdout io.Writer) error {
	h, err := open(ctx, f, cfg, logger)
	if err != nil {
		return err
	}
	defer h.Close()
	waitAll(ctx, h, f.wait)
	printStatus(stdout, h.Status(), f.json)
	return nil
}

func printStatus(w io.Writer, sts []mcpvisor.ServerStatus, asJSON bool) {
	if asJSON {
		if sts == nil {
			sts = []mcpvisor.ServerStatus{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sts)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tTOOLS\tRESTARTS\tPID\tDESCRIPTION\tLAST ERROR")
	for _, st := range sts {
		pid := "-"
		if st.PID > 0 {
			pid = fmt.Sprint(st.PID)
		}
		desc := firstLine(st.Description)
		if st.FriendlyName != "" {
			desc = strings.TrimSpace(st.FriendlyName + ": " + desc)
		}
		if desc == "" {
			desc = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", st.Name, st.State, st.Tools, st.Restarts, pid, desc, st.LastError)
	}
	tw.Flush()
}

func cmdRun(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, stdout io.Writer) error {
	events := make(chan mcpvisor.Event, 256)
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger,
		OnEvent: func(ev mcpvisor.Event) {
			select {
			case events <- ev:
			default:
			}
		}})
	if err != nil {
		return lockHint(err)
	}
	defer h.Close()
	fmt.Fprintf(stdout, "mcpvisor: supervising %d server(s) from %s; logs in %s/logs; Ctrl-C to stop\n", len(cfg.Servers), f.config, f.data)
	ready := make(chan struct{})
	waited := ready // joined before returning: the wait ends with ctx
	go func() {
		defer close(waited)
		waitAll(ctx, h, f.wait)
	}()
	for {
		select {
		case <-ctx.Done():
			<-waited
			fmt.Fprintln(stdout, "mcpvisor: stopping every server")
			return nil
		case <-ready:
			ready = nil
			printStatus(stdout, h.Status(), false)
			fmt.Fprintf(stdout, "%d tool(s):\n", len(h.Tools()))
			for _, t := range h.Tools() {
				fmt.Fprintf(stdout, "  %s\n", t.Name)
			}
		case ev := <-events:
			switch ev.Kind {
			case mcpvisor.EventState:
				line := fmt.Sprintf("%s %s: %s", ev.Time.Format(time.TimeOnly), ev.Server, ev.State)
				if ev.Err != "" && (ev.State == mcpvisor.StateBackoff || ev.State == mcpvisor.StateFailed) {
					line += " (" + ev.Err + ")"
				}
				fmt.Fprintln(stdout, line)
			case mcpvisor.EventNotification:
				fmt.Fprintf(stdout, "%s %s: notification %s %s\n", ev.Time.Format(time.TimeOnly), ev.Server, ev.Method, ev.Params)
			}
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
