package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// The commands that run the servers themselves: tools, call, status, run.

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
	opts := hostOptions(f, cfg, logger)
	opts.Only = []string{server}
	h, err := mcpvisor.Open(ctx, opts)
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
	fmt.Fprintln(tw, "SERVER\tSTATE\tPROTOCOL\tTOOLS\tRESTARTS\tPID\tDESCRIPTION\tLAST ERROR")
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
		proto := st.ProtocolVersion
		if proto == "" {
			proto = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", st.Name, st.State, proto, st.Tools, st.Restarts, pid, desc, st.LastError)
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
