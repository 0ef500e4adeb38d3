package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol/sse"
	"github.com/mcpvisor/mcpvisor/sidecar"
	"golang.org/x/term"
)

// A call that waits on an elicitation says so on stderr: what is asked
// and where a person answers it. Through a sidecar, the inbox page or
// `mcpvisor elicitations resolve`; standalone, the person at this
// terminal, or nobody (the call is told cancel).

// callClient is how `mcpvisor call` names itself to the sidecar (POST
// /v1/call's client): the inbox shows it beside the question, and this
// process finds its own call's questions by it.
func callClient() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("mcpvisor call (pid %d on %s)", os.Getpid(), host)
}

// watchElicitations reads the sidecar's inbox stream until ctx ends and
// says once each elicitation of the call client made. It gives up
// quietly when the stream cannot be read: the call goes on without it.
func (r *remote) watchElicitations(ctx context.Context, client string, rep callReporter) {
	resp, err := r.open(ctx, http.MethodGet, "/v1/inbox/stream", nil, "text/event-stream")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body, 0)
	told := map[string]bool{}
	for {
		ev, err := rd.Next()
		if err != nil {
			return
		}
		if ev.Type != "inbox" {
			continue
		}
		var in struct {
			Elicitations []sidecar.ElicitationView `json:"elicitations"`
		}
		if json.Unmarshal(ev.Data, &in) != nil {
			continue
		}
		for _, el := range in.Elicitations {
			if el.Client != client || told[el.ID] {
				continue
			}
			told[el.ID] = true
			rep.elicitationAway(el, r.base)
		}
	}
}

// elicitationAway says what a call's elicitation asks and how to answer
// it through the sidecar at base: the inbox page (whose signed-in
// address `mcpvisor token --url` prints; a token is never printed here)
// or `mcpvisor elicitations resolve`.
func (c callReporter) elicitationAway(el sidecar.ElicitationView, base string) {
	var b strings.Builder
	fmt.Fprintf(&b, "mcpvisor: %s waits for a person's answer: %s\n", printable(askerOf(el.Tool, el.Server)), printable(el.Message))
	if el.URL != "" {
		fmt.Fprintf(&b, "  it asks you to open %s\n", printable(el.URL))
	}
	for _, f := range el.Fields {
		fmt.Fprintf(&b, "  %s\n", fieldLine(f.Name, f.Title, f.Type, f.Required, f.Sensitive, optionValues(f.Options)))
	}
	fmt.Fprintf(&b, "  answer it on the inbox page, %s/ui/ (its signed-in address: %s)\n", base, c.command("token", "--url"))
	resolve := []string{"elicitations", "resolve", shellQuote(el.ID), "accept"}
	if el.Mode != string(mcpvisor.ElicitURL) {
		resolve = append(resolve, shellQuote(exampleContent(el.Fields)))
	}
	fmt.Fprintf(&b, "  or: %s   (or decline, cancel)\n", c.command(resolve...))
	io.WriteString(c.w, b.String())
}

// command is a mcpvisor command line with the data directory the call
// used, when it is not the default.
func (c callReporter) command(args ...string) string {
	words := append([]string{"mcpvisor"}, args...)
	if c.data != "" && c.data != mcpvisor.DefaultDataDir {
		words = append(words, "--data", shellQuote(c.data))
	}
	return strings.Join(words, " ")
}

// askerOf names who asks: the call's tool, else its server.
func askerOf(tool, server string) string {
	if tool != "" {
		return tool
	}
	return "server " + strconv.Quote(server)
}

func optionValues(opts []sidecar.OptionView) []string {
	var vs []string
	for _, o := range opts {
		vs = append(vs, o.Value)
	}
	return vs
}

// fieldLine describes one field of a form: "name (type, required): title".
func fieldLine(name, title, typ string, required, sensitive bool, options []string) string {
	kind := typ
	if len(options) > 0 {
		kind = "one of " + strings.Join(options, ", ")
	}
	if sensitive {
		kind += ", secret"
	}
	if required {
		kind += ", required"
	}
	line := fmt.Sprintf("%s (%s)", printable(name), printable(kind))
	if title != "" && title != name {
		line += ": " + printable(title)
	}
	return line
}

// exampleContent is a CONTENT_JSON to edit: each field with a value of
// its type.
func exampleContent(fields []sidecar.FieldView) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		b.Write(name)
		b.WriteByte(':')
		switch {
		case len(f.Options) > 0 && !f.Multi:
			v, _ := json.Marshal(f.Options[0].Value)
			b.Write(v)
		case f.Multi:
			b.WriteString("[]")
		case f.Type == "number" || f.Type == "integer":
			b.WriteString("0")
		case f.Type == "boolean":
			b.WriteString("true")
		default:
			b.WriteString(`"…"`)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// localElicitation is a standalone call's elicitation handler: it says
// what is asked; a person at the terminal (stdin and stderr terminals)
// answers the form's simple fields there, and otherwise nobody can: the
// call is told cancel, and the message says what can answer.
func localElicitation(stdin io.Reader, rep callReporter) mcpvisor.ElicitationHandler {
	in, _ := stdin.(*os.File)
	interactive := in != nil && term.IsTerminal(int(in.Fd())) && terminal(rep.w)
	var lines *bufio.Reader
	if interactive {
		lines = bufio.NewReader(in)
	}
	return func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
		fmt.Fprintf(rep.w, "mcpvisor: %s waits for a person's answer: %s\n",
			printable(askerOf(req.Caller.Tool, req.Server)), printable(req.Message))
		if !interactive {
			fmt.Fprintf(rep.w, "  nobody can answer it here (stdin is not a terminal): answering cancel; with %s running, the call goes through it and its inbox page (%s) answers\n",
				rep.command("serve"), rep.command("token", "--url"))
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitCancel}, nil
		}
		readSecret := func() (string, error) {
			b, err := term.ReadPassword(int(in.Fd()))
			fmt.Fprintln(rep.w)
			return string(b), err
		}
		return promptElicitation(req, lines, readSecret, rep)
	}
}

// promptElicitation asks the person for each field of req on rep.w,
// reading answers from lines (a secret with readSecret, unechoed), and
// accepts; an empty line leaves a field unset (its default applies). A
// URL, or a field of a kind a line cannot answer (a multi-select), is
// left to the inbox page: the answer is cancel. End of input declines.
func promptElicitation(req *mcpvisor.ElicitationRequest, lines *bufio.Reader, readSecret func() (string, error), rep callReporter) (mcpvisor.ElicitationResponse, error) {
	cancel := mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitCancel}
	if req.Mode == mcpvisor.ElicitURL {
		fmt.Fprintf(rep.w, "  it asks to open %s: answering cancel (a URL is answered on the inbox page of %s)\n", printable(req.URL), rep.command("serve"))
		return cancel, nil
	}
	content := map[string]any{}
	for _, f := range req.Fields {
		if f.Multi {
			fmt.Fprintf(rep.w, "  %s is a multi-select: answering cancel (the inbox page of %s answers it)\n", printable(f.Name), rep.command("serve"))
			return cancel, nil
		}
		var options []string
		for _, o := range f.Options {
			options = append(options, o.Value)
		}
		for {
			fmt.Fprintf(rep.w, "  %s: ", fieldLine(f.Name, f.Title, f.Type, f.Required, f.Sensitive, options))
			var text string
			var err error
			if f.Sensitive && readSecret != nil {
				text, err = readSecret()
			} else {
				text, err = lines.ReadString('\n')
				if errors.Is(err, io.EOF) && text != "" {
					err = nil
				}
			}
			if err != nil {
				fmt.Fprintln(rep.w, "\n  no answer: declining")
				return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitDecline}, nil
			}
			text = strings.TrimRight(text, "\r\n")
			if text == "" && !f.Required {
				break
			}
			v, err := fieldValue(f.Type, text)
			if err == nil {
				content[f.Name] = v
				break
			}
			fmt.Fprintf(rep.w, "  %v; again\n", err)
		}
	}
	return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: content}, nil
}

// fieldValue is text as a value of a field of type typ.
func fieldValue(typ, text string) (any, error) {
	switch typ {
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return n, nil
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", text)
		}
		return n, nil
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", text)
	}
	if text == "" {
		return nil, errors.New("required")
	}
	return text, nil
}

// startedIn says how long a server took to start, as a person reads it.
func startedIn(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
