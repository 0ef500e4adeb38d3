package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/sidecar"
	"golang.org/x/term"
)

// call: one tool call, on a host of its own that starts only the tool's
// server, or through the sidecar running on the data directory.

// maxArguments bounds the arguments read from stdin or a file, before
// they are held whole: a stdio frame's limit.
const maxArguments = protocol.DefaultMaxFrame

func cmdCall(ctx context.Context, e *env) error {
	f, pos := e.f, e.args
	if len(pos) < 1 || len(pos) > 2 {
		return &exitError{code: exitUsage, msg: "call: want TOOL [ARGS_JSON|-|@FILE]" + seeHelp("call")}
	}
	if f.json && f.raw {
		return &exitError{code: exitUsage, msg: "call: --json and --raw print the result differently: pass one"}
	}
	tool := pos[0]
	var args json.RawMessage
	if len(pos) == 2 {
		var err error
		if args, err = callArguments(pos[1], e.stdin); err != nil {
			return err
		}
	}
	rep := callReporter{w: e.stderr, data: e.f.data}
	var out callOutcome
	var err error
	if e.sidecar != nil {
		out, err = e.sidecar.call(ctx, tool, args, f.detach, rep)
	} else {
		out, err = callLocally(ctx, e, tool, args, rep)
	}
	if err != nil {
		return withLoginHint(ctx, e, tool, err)
	}
	return out.print(e.stdout, f, tool)
}

// withLoginHint adds to a call's failure, when the tool's server needs a
// sign-in, the command that signs it in: a command run with no one to
// sign in fails at once, and says what to run.
func withLoginHint(ctx context.Context, e *env, tool string, err error) error {
	server, _, ok := mcpvisor.SplitToolName(tool)
	if !ok {
		return err
	}
	needs := errors.Is(err, mcpvisor.ErrNeedsAuth)
	if e.sidecar != nil && !needs {
		// The API's error names no sentinel: the server's state says it.
		sts, serr := e.sidecar.servers(ctx, 0)
		for _, st := range sts {
			needs = needs || serr == nil && st.Name == server && st.State == mcpvisor.StateNeedsAuth
		}
	}
	if !needs {
		return err
	}
	return fmt.Errorf("%w\n  sign in with: %s", err, loginCommand(e.f, server, e.sidecar != nil))
}

// callLocally starts only the server the tool needs, on a host of its own;
// the registry (the config file's servers and those registered through
// the API) says whether it exists.
func callLocally(ctx context.Context, e *env, tool string, args json.RawMessage, rep callReporter) (callOutcome, error) {
	server, _, ok := mcpvisor.SplitToolName(tool)
	if !ok {
		return callOutcome{}, &exitError{code: exitUsage,
			msg: fmt.Sprintf("call: %q is not a namespaced tool name (mcp__<server>__<tool>)", tool)}
	}
	opts := hostOptions(e.f, e.cfg, e.logger)
	opts.Only = []string{server}
	if opts.Elicitation == nil {
		opts.Elicitation = localElicitation(e.stdin, rep)
	}
	// The call's duration is its own; the server's start, which it waited
	// for, is said apart.
	var serverStart time.Duration
	opts.CallMiddleware = append(opts.CallMiddleware, func(next mcpvisor.CallFunc) mcpvisor.CallFunc {
		return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
			res, err := next(ctx, c)
			serverStart += c.ServerStart
			return res, err
		}
	})
	h, err := mcpvisor.Open(ctx, opts)
	if err != nil {
		return callOutcome{}, lockHint(err)
	}
	defer h.Close()
	sts := h.Status()
	if len(sts) == 0 {
		return callOutcome{}, fmt.Errorf("call: no server %q in %s or the registry in %s", server, e.f.config, e.f.data)
	}
	if !sts[0].Enabled {
		return callOutcome{}, fmt.Errorf("call: server %q is disabled", server)
	}
	if e.f.detach && sts[0].Transport == "stdio" {
		// The server is this process's child: it stops when the command
		// exits, and a stdio server's tasks live in its memory.
		fmt.Fprintf(rep.w, "mcpvisor: no sidecar runs on %s: server %q stops when this command exits, and with it a task it started; run mcpvisor serve --data %s to keep tasks running\n",
			e.f.data, server, e.f.data)
	}
	res, err := h.CallWith(ctx, tool, args, mcpvisor.CallOptions{
		Detached:   e.f.detach,
		OnProgress: rep.progress,
		// The task is journaled: from here a killed CLI leaves it for the
		// next host to resume (mcpvisor tasks ID shows it).
		OnTask: rep.task,
	})
	if serverStart > 0 {
		fmt.Fprintf(rep.w, "mcpvisor: server %q started in %s\n", server, startedIn(serverStart))
	}
	if err != nil {
		return callOutcome{}, err
	}
	return newCallOutcome(res)
}

// callArguments reads the arguments: arg itself, "-" for stdin or "@FILE"
// for a file's contents. They must be a JSON object; anything else is a
// usage error, which for invalid JSON says where.
func callArguments(arg string, stdin io.Reader) (json.RawMessage, error) {
	from, raw := "ARGS_JSON", []byte(arg)
	switch {
	case arg == "-":
		from = "stdin"
		b, err := readBounded(stdin)
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("call: reading the arguments from %s: %v", from, err)}
		}
		raw = b
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		from = name
		file, err := os.Open(name)
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("call: %v", err), err: err}
		}
		defer file.Close()
		if raw, err = readBounded(file); err != nil {
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("call: reading the arguments from %s: %v", from, err)}
		}
	}
	var v json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(raw, syn)
			return nil, &exitError{code: exitUsage,
				msg: fmt.Sprintf("call: arguments from %s: not valid JSON: line %d, column %d: %v", from, line, col, err)}
		}
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("call: arguments from %s: not valid JSON: %v", from, err)}
	}
	if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("call: arguments from %s: want a JSON object, not %s", from, jsonKind(v))}
	}
	return v, nil
}

// readBounded reads r to its end, refusing more than maxArguments bytes
// before holding them.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxArguments+1))
	if err == nil && len(b) > maxArguments {
		err = fmt.Errorf("over %d MiB", maxArguments>>20)
	}
	return b, err
}

// position is the 1-based line and column (in bytes) in b of a syntax
// error: the byte at fault, whose end err.Offset is, or just past the end
// of b when it ended too soon.
func position(b []byte, err *json.SyntaxError) (line, col int) {
	at := int(err.Offset) - 1
	if at < 0 || at > len(b) || strings.HasPrefix(err.Error(), "unexpected end") {
		at = len(b)
	}
	before := b[:at]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// jsonKind names the kind of a JSON value, for an error.
func jsonKind(v json.RawMessage) string {
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '[':
		return "an array"
	case v[0] == '"':
		return "a string"
	case string(v) == "null":
		return "null"
	case string(v) == "true" || string(v) == "false":
		return "a boolean"
	}
	return "a number"
}

// callReporter says on stderr what happens to a call while it runs.
type callReporter struct {
	w    io.Writer
	data string // --data, for the commands it names
}

func (c callReporter) progress(p mcpvisor.Progress) {
	line := fmt.Sprintf("progress %g", p.Progress)
	if p.Total != nil {
		line += fmt.Sprintf("/%g", *p.Total)
	}
	if p.Message != "" {
		line += ": " + printable(p.Message)
	}
	fmt.Fprintln(c.w, line)
}

func (c callReporter) task(ti mcpvisor.TaskInfo) {
	fmt.Fprintf(c.w, "task %s started on %s\n", ti.ID, ti.Server)
}

// callOutcome is a call's result as the CLI prints it, whether a local
// host or a sidecar answered.
type callOutcome struct {
	wire    string          // Result.Wire: what a model is given
	isError bool            // the tool's own failure
	view    json.RawMessage // the result as POST /v1/call answers it (a ResultView)
}

func newCallOutcome(res *mcpvisor.Result) (callOutcome, error) {
	view, err := json.Marshal(sidecar.NewResultView(res))
	if err != nil {
		return callOutcome{}, err
	}
	return callOutcome{wire: res.Wire(), isError: res.IsError, view: view}, nil
}

// print writes the result on w as f asks: the whole result with --json, the
// wire string with --raw, else the wire string with JSON indented. A
// tool's error is said in the error returned (exit 1), not on w.
func (o callOutcome) print(w io.Writer, f flags, tool string) error {
	switch {
	case f.json:
		var b bytes.Buffer
		if err := json.Indent(&b, o.view, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	case o.isError:
	case f.raw:
		wire := o.wire
		if terminal(w) {
			wire = printableText(wire)
		}
		fmt.Fprintln(w, wire)
	default:
		writeResult(w, o.wire)
	}
	if o.isError {
		return &exitError{code: exitFailure, msg: fmt.Sprintf("%s returned an error: %s", tool, printableText(o.wire))}
	}
	return nil
}

// writeResult prints a result's wire string: indented by two spaces when
// it is a JSON object or array (structuredContent, or a text that is
// JSON), as it is otherwise.
//
// On a terminal, what a terminal would not print as text is escaped
// (printableText): a server's result cannot rewrite the screen.
func writeResult(w io.Writer, wire string) {
	if terminal(w) {
		wire = printableText(wire)
	}
	if t := strings.TrimSpace(wire); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var b bytes.Buffer
		if json.Indent(&b, []byte(t), "", "  ") == nil {
			fmt.Fprintln(w, b.String())
			return
		}
	}
	fmt.Fprintln(w, wire)
}

// terminal reports whether w is a terminal.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
