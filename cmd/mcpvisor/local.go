package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// The commands that run the servers themselves, or ask the sidecar that
// runs them: tools, status, run. (call is in call.go.)

func cmdTools(ctx context.Context, e *env) error {
	if len(e.args) > 0 {
		// A mistyped subcommand (tools aprove) must not list the tools as
		// if it had been run.
		return &exitError{code: exitUsage, msg: fmt.Sprintf("tools: unknown subcommand %q: want tools, tools review, tools approve or tools reject",
			e.args[0]) + seeHelp("tools")}
	}
	var tools []mcpvisor.Tool
	var bad []mcpvisor.ServerStatus
	if r := e.sidecar; r != nil {
		sts, err := r.servers(ctx, e.f.wait)
		if err != nil {
			return err
		}
		bad = notReady(sts)
		if tools, err = r.tools(ctx); err != nil {
			return err
		}
	} else {
		h, err := open(ctx, e.f, e.cfg, e.logger)
		if err != nil {
			return err
		}
		defer h.Close()
		bad = waitStarting(ctx, h, e.f.wait, e.stderr)
		tools = h.Tools()
	}
	if e.f.json {
		if tools == nil {
			tools = []mcpvisor.Tool{}
		}
		if err := printJSON(e.stdout, tools); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, t := range tools {
			mark := ""
			if t.Destructive {
				mark = " [destructive]"
			}
			if t.Tool != "" && t.Name != t.Tool && t.Name != mcpvisor.ToolName(t.Server, t.Tool) {
				// A name models would refuse, mapped: say what the server calls it.
				mark += fmt.Sprintf(" [server's name: %s]", strconv.Quote(t.Tool))
			}
			fmt.Fprintf(tw, "%s\t%s%s\n", t.Name, printable(firstLine(t.Description)), mark)
		}
		tw.Flush()
	}
	return notReadyError(bad, e.f, e.sidecar != nil)
}

func cmdStatus(ctx context.Context, e *env) error {
	var sts []mcpvisor.ServerStatus
	var journal string // what opening the journal found wrong
	if r := e.sidecar; r != nil {
		var err error
		if sts, journal, err = r.serversAndJournal(ctx, e.f.wait); err != nil {
			return err
		}
	} else {
		h, err := open(ctx, e.f, e.cfg, e.logger)
		if err != nil {
			return err
		}
		defer h.Close()
		waitStarting(ctx, h, e.f.wait, e.stderr)
		sts = h.Status()
		if rec := h.JournalRecovery(); rec.Damaged() {
			journal = rec.String()
		}
	}
	printStatus(e.stdout, sts, e.f.json)
	if journal != "" {
		// On stderr, so that --json's output stays the servers' list.
		fmt.Fprintln(e.stderr, "journal damaged when it was opened: "+journal+" (mcpvisor doctor says more)")
	}
	return notReadyError(notReady(sts), e.f, e.sidecar != nil)
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
	fmt.Fprintln(tw, "SERVER\tSTATE\tPROTOCOL\tTOOLS\tRESTARTS\tPID\tDESCRIPTION\tLAST ERROR")
	reviews := 0
	for _, st := range sts {
		pid := "-"
		if st.PID > 0 {
			pid = fmt.Sprint(st.PID)
		}
		if st.LegacyPID > 0 {
			pid += fmt.Sprintf(" (+%d legacy)", st.LegacyPID)
		}
		desc := firstLine(st.Description)
		if st.FriendlyName != "" {
			desc = strings.TrimSpace(st.FriendlyName + ": " + desc)
		}
		if desc == "" {
			desc = "-"
		}
		proto := st.ProtocolVersion
		if proto == "" {
			proto = "-"
		}
		tools := fmt.Sprint(st.Tools)
		if st.Held > 0 {
			tools += fmt.Sprintf(" (+%d held)", st.Held)
		}
		reviews += len(st.Reviews)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", st.Name, st.State, proto, tools, st.Restarts, pid, desc, st.LastError)
	}
	tw.Flush()
	if reviews > 0 {
		fmt.Fprintf(w, "\n%d tool definition(s) await a person's review: mcpvisor tools review\n", reviews)
	}
}

func cmdRun(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, stdout io.Writer) error {
	events := make(chan mcpvisor.Event, 256)
	tp, stopTracing := startTracing(ctx, logger)
	defer stopTracing()
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger, ReapOrphans: true, TracerProvider: tp,
		Journal: f.journalOptions(), OnEvent: func(ev mcpvisor.Event) {
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
