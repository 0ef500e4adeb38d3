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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// commands is the command table: the usage text, the flag parser and the
// dispatcher all read it, and doc.go lists it.
func commands() []command {
	return []command{
		{name: "run", summary: "start every server and supervise them until interrupted", setup: setupHost,
			flags: []flagGroup{waitFlag},
			run:   func(ctx context.Context, e *env) error { return cmdRun(ctx, e.f, e.cfg, e.logger, e.stdout) }},
		{name: "serve", summary: "supervise the servers behind the HTTP API (the sidecar), on loopback unless given TLS",
			detail: "The token is in DIR/token unless --token-file names one. /mcp is every server as one MCP server\n" +
				"(Streamable HTTP); a model's register_mcp, delete_mcp and toggle_item wait for approval\n" +
				"unless --approve-host-tools.",
			setup: setupData, flags: []flagGroup{configFlag, logFlags, serveFlags,
				approveFlag("each waits in the approval inbox (GET /v1/approvals, the inbox page, mcpvisor approvals)")},
			run: func(ctx context.Context, e *env) error { return cmdServe(ctx, e.f, e.args, e.stderr) }},
		{name: "stdio", summary: "the MCP gateway on stdin/stdout, for MCP clients", setup: setupHost,
			flags: []flagGroup{approveFlag("each is put to the client's user (elicitation)")},
			run:   func(ctx context.Context, e *env) error { return cmdStdio(ctx, e.f, e.cfg, e.logger, e.stdin, e.stdout) }},
		{name: "tools", summary: "start the servers, list every namespaced tool, exit", setup: setupHost,
			flags: []flagGroup{waitFlag, jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdTools(ctx, e.f, e.cfg, e.logger, e.stdout, e.stderr)
			}},
		{name: "call", args: "TOOL [ARGS_JSON]", summary: "start the one server TOOL needs, call it, print the result",
			detail: "Progress and task ids go to stderr.", setup: setupHost,
			flags: []flagGroup{jsonFlag, func(fs *flag.FlagSet, f *flags) {
				fs.BoolVar(&f.detach, "detach", false, "return once a task-running tool has started its task")
			}},
			run: func(ctx context.Context, e *env) error {
				return cmdCall(ctx, e.f, e.cfg, e.logger, e.args, e.stdout, e.stderr)
			}},
		{name: "status", summary: "start the servers, wait for them, print their states", setup: setupHost,
			flags: []flagGroup{waitFlag, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdStatus(ctx, e.f, e.cfg, e.logger, e.stdout) }},
		{name: "events", summary: "list the events servers pushed (oldest first), or follow them with --follow",
			detail: "Through the sidecar's API when one holds the journal.", setup: setupLogging,
			flags: []flagGroup{eventsFlags, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdEvents(ctx, e.f, e.logger, e.args, e.stdout) }},
		{name: "events ack", args: "ID...", summary: "mark events processed",
			detail: "Through the sidecar's API when one holds the journal.", setup: setupLogging,
			run: func(ctx context.Context, e *env) error { return cmdAck(ctx, e.f, e.logger, e.args, e.stdout) }},
		{name: "history", summary: "server transitions, or tool calls with --calls (newest first)", setup: setupLogging,
			flags: []flagGroup{serverFlag("only the records of server `NAME`"), historyFlags, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdHistory(e.f, e.logger, e.stdout) }},
		{name: "tasks", args: "[ID]", summary: "list the journal's tasks, or show one with its outcome", setup: setupLogging,
			flags: []flagGroup{pendingFlag("only the unfinished tasks"), jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdTasks(e.f, e.logger, e.args, e.stdout) }},
		{name: "resources", summary: "list the resources (or resource templates) of every server, or of one", setup: setupHost,
			flags: []flagGroup{waitFlag, serverFlag("start only server `NAME` and list its resources"), jsonFlag,
				func(fs *flag.FlagSet, f *flags) {
					fs.BoolVar(&f.templates, "templates", false, "list the resource templates instead")
				}},
			run: func(ctx context.Context, e *env) error {
				return cmdResources(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "resources read", args: "URI", summary: "print a resource's text; binary contents are described, not printed",
			setup: setupHost, flags: []flagGroup{waitFlag, serverFlag("the server `NAME` to read from (required)"), jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdReadResource(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "prompts", summary: "list the prompts of every server, or of one", setup: setupHost,
			flags: []flagGroup{waitFlag, serverFlag("start only server `NAME` and list its prompts"), jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdPrompts(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "prompts get", args: "PROMPT [key=value ...]", summary: `render a prompt with its arguments, one "role: text" line per message`,
			setup: setupHost, flags: []flagGroup{waitFlag, serverFlag("the server `NAME` of the prompt (required)"), jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdGetPrompt(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "elicitations", summary: "the running sidecar's pending requests for input", setup: setupData,
			flags: []flagGroup{jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdElicitations(ctx, e.f, e.args, e.stdout) }},
		{name: "elicitations resolve", args: "ID accept|decline|cancel [CONTENT_JSON]", summary: "answer one (through the sidecar's API)",
			setup: setupData, run: sidecarVerb(cmdElicitations, "resolve")},
		{name: "approvals", summary: "the running sidecar's host-tool calls waiting for approval",
			detail: "Each stdio registration is shown with its full command line.", setup: setupData,
			flags: []flagGroup{jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdApprovals(ctx, e.f, e.args, e.stdout) }},
		{name: "approvals allow", args: "ID", summary: "let a host-tool call run", setup: setupData,
			run: sidecarVerb(cmdApprovals, "allow")},
		{name: "approvals deny", args: "ID", summary: "refuse a host-tool call; the reason is shown to the model", setup: setupData,
			flags: []flagGroup{func(fs *flag.FlagSet, f *flags) {
				fs.StringVar(&f.reason, "reason", "", "why, in a `REASON` the model is shown")
			}},
			run: sidecarVerb(cmdApprovals, "deny")},
		{name: "servers", args: "enable|disable|delete NAME", summary: "change a server of the running sidecar, at once",
			setup: setupData, run: func(ctx context.Context, e *env) error { return cmdServers(ctx, e.f, e.args, e.stdout) }},
		{name: "help", args: "[COMMAND]", summary: "print the usage of mcpvisor, or of one command",
			run: func(ctx context.Context, e *env) error { return cmdHelp(commands(), e.args, e.stdout) }},
		{name: "version", summary: "print the version of this binary and what it was built from",
			run: func(ctx context.Context, e *env) error { return cmdVersion(e.stdout) }},
	}
}

// sidecarVerb runs a sidecar command whose first argument is verb, which
// the table gives as a subcommand of its own with its own flags.
func sidecarVerb(cmd func(context.Context, flags, []string, io.Writer) error, verb string) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return cmd(ctx, e.f, append([]string{verb}, e.args...), e.stdout)
	}
}

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

// run runs the command args name; without any it prints the overview and
// exits 2.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := commands()
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, overview(cmds))
		return &exitError{code: 2}
	case args[0] == "-h" || args[0] == "--help":
		args = []string{"help"}
	case args[0] == "--version":
		args = []string{"version"}
	}
	return dispatch(ctx, cmds, args, stdout, stderr)
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
		return &exitError{code: 2, msg: "call: want TOOL [ARGS_JSON]" + seeHelp("call")}
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
