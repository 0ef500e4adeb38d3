package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// The resources and prompts commands start the one server --server names,
// or every server, and ask them.

type resourceJSON struct {
	Server string `json:"server"`
	mcpvisor.Resource
}

type templateJSON struct {
	Server string `json:"server"`
	mcpvisor.ResourceTemplate
}

type promptJSON struct {
	Server string `json:"server"`
	mcpvisor.Prompt
}

func cmdResources(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, pos []string, stdout io.Writer) error {
	if len(pos) > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("resources: unexpected argument %q (want resources [flags] or resources read --server NAME URI)", pos[0])}
	}
	declared := func(c protocol.ServerCapabilities) bool { return c.Resources != nil }
	if f.templates {
		var out []templateJSON
		err := eachServer(ctx, f, cfg, logger, "resources", declared, func(h *mcpvisor.Host, server string) error {
			ts, err := h.ResourceTemplates(ctx, server)
			for _, t := range ts {
				out = append(out, templateJSON{server, t})
			}
			return err
		})
		printRows(stdout, f.json, err, out, "SERVER\tURI TEMPLATE\tNAME\tMIME TYPE\tTITLE", func(t templateJSON) []string {
			return []string{t.Server, t.URITemplate, t.Name, t.MimeType, t.Title}
		})
		return err
	}
	var out []resourceJSON
	err := eachServer(ctx, f, cfg, logger, "resources", declared, func(h *mcpvisor.Host, server string) error {
		rs, err := h.Resources(ctx, server)
		for _, r := range rs {
			out = append(out, resourceJSON{server, r})
		}
		return err
	})
	printRows(stdout, f.json, err, out, "SERVER\tURI\tNAME\tMIME TYPE\tTITLE", func(r resourceJSON) []string {
		return []string{r.Server, r.URI, r.Name, r.MimeType, r.Title}
	})
	return err
}

// cmdReadResource prints a resource's text contents as they are; binary
// contents are described, never written out.
func cmdReadResource(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, args []string, stdout io.Writer) error {
	if f.server == "" || len(args) != 1 {
		return &exitError{code: 2, msg: "resources read: want --server NAME URI" + seeHelp("resources read")}
	}
	h, err := openServer(ctx, f, cfg, logger, "resources read")
	if err != nil {
		return err
	}
	defer h.Close()
	cs, err := h.ReadResource(ctx, f.server, args[0])
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, cs)
	}
	for _, c := range cs {
		if len(cs) > 1 {
			fmt.Fprintf(stdout, "==> %s <==\n", c.URI)
		}
		if c.Blob != "" {
			fmt.Fprintln(stdout, c.URI+": "+describeBlob(c.MimeType, c.Blob))
			continue
		}
		fmt.Fprint(stdout, c.Text)
		if !strings.HasSuffix(c.Text, "\n") {
			fmt.Fprintln(stdout)
		}
	}
	return nil
}

// describeBlob says what base64 data holds: "image/png, 68 bytes (base64)".
func describeBlob(mime, data string) string {
	if mime == "" {
		mime = "no mime type"
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return fmt.Sprintf("%s, %d characters of invalid base64", mime, len(data))
	}
	return fmt.Sprintf("%s, %d bytes (base64)", mime, len(raw))
}

func cmdPrompts(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, pos []string, stdout io.Writer) error {
	if len(pos) > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("prompts: unexpected argument %q (want prompts [flags] or prompts get --server NAME PROMPT [key=value ...])", pos[0])}
	}
	var out []promptJSON
	err := eachServer(ctx, f, cfg, logger, "prompts", func(c protocol.ServerCapabilities) bool { return c.Prompts != nil },
		func(h *mcpvisor.Host, server string) error {
			ps, err := h.Prompts(ctx, server)
			for _, p := range ps {
				out = append(out, promptJSON{server, p})
			}
			return err
		})
	printRows(stdout, f.json, err, out, "SERVER\tPROMPT\tARGUMENTS\tDESCRIPTION", func(p promptJSON) []string {
		var args []string
		for _, a := range p.Arguments {
			if a.Required {
				args = append(args, a.Name)
			} else {
				args = append(args, "["+a.Name+"]")
			}
		}
		desc := firstLine(p.Description)
		if p.Title != "" {
			desc = strings.TrimSuffix(p.Title+": "+desc, ": ")
		}
		return []string{p.Server, p.Name, strings.Join(args, " "), desc}
	})
	return err
}

func cmdGetPrompt(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, args []string, stdout io.Writer) error {
	if f.server == "" || len(args) == 0 {
		return &exitError{code: 2, msg: "prompts get: want --server NAME PROMPT [key=value ...]" + seeHelp("prompts get")}
	}
	name := args[0]
	var pargs map[string]string
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return &exitError{code: 2, msg: fmt.Sprintf("prompts get: argument %q is not key=value", kv)}
		}
		if pargs == nil {
			pargs = map[string]string{}
		}
		pargs[k] = v
	}
	h, err := openServer(ctx, f, cfg, logger, "prompts get")
	if err != nil {
		return err
	}
	defer h.Close()
	res, err := h.GetPrompt(ctx, f.server, name, pargs)
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(stdout, res)
	}
	for _, m := range res.Messages {
		fmt.Fprintf(stdout, "%s: %s\n", m.Role, messageText(m.Content))
	}
	return nil
}

// messageText is a prompt message's text; other blocks are described, and
// binary data never written out.
func messageText(b mcpvisor.ContentBlock) string {
	switch b.Type {
	case protocol.ContentText:
		return b.Text
	case protocol.ContentImage, protocol.ContentAudio:
		return fmt.Sprintf("[%s: %s]", b.Type, describeBlob(b.MimeType, b.Data))
	case protocol.ContentResourceLink:
		return fmt.Sprintf("[resource link: %s]", b.URI)
	case protocol.ContentResource:
		if b.Resource == nil {
			return "[resource]"
		}
		if b.Resource.Blob != "" {
			return fmt.Sprintf("[resource %s: %s]", b.Resource.URI, describeBlob(b.Resource.MimeType, b.Resource.Blob))
		}
		return fmt.Sprintf("[resource %s]\n%s", b.Resource.URI, b.Resource.Text)
	}
	return fmt.Sprintf("[%s]", b.Type)
}

// openServer starts only the server --server names, as call does, and
// waits up to --wait for it to be ready, so that what it declared is known.
func openServer(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, cmd string) (*mcpvisor.Host, error) {
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger, Only: []string{f.server}})
	if err != nil {
		return nil, lockHint(err)
	}
	sts := h.Status()
	switch {
	case len(sts) == 0:
		err = fmt.Errorf("%s: no server %q in %s or the registry in %s", cmd, f.server, f.config, f.data)
	case !sts[0].Enabled:
		err = fmt.Errorf("%s: server %q is disabled", cmd, f.server)
	}
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	_ = h.WaitReady(wctx, f.server) // a server that cannot start: the request says why
	return h, nil
}

// eachServer runs list for the --server server, whatever it declared (the
// error then says what it lacks), or else for every ready server that
// declared the feature. Servers that did not become ready are an error
// after the others are listed.
func eachServer(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger, cmd string,
	declared func(protocol.ServerCapabilities) bool, list func(h *mcpvisor.Host, server string) error) error {
	if f.server != "" {
		h, err := openServer(ctx, f, cfg, logger, cmd)
		if err != nil {
			return err
		}
		defer h.Close()
		return list(h, f.server)
	}
	h, err := open(ctx, f, cfg, logger)
	if err != nil {
		return err
	}
	defer h.Close()
	bad := waitAll(ctx, h, f.wait)
	var errs []error
	for _, st := range h.Status() {
		if st.State == mcpvisor.StateReady && declared(st.Capabilities) {
			if err := list(h, st.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := notReadyError(bad, f, false); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// printRows writes rows as a JSON array, or as a table under header with
// "-" for empty cells. After an error it writes only the rows listed.
func printRows[T any](w io.Writer, asJSON bool, err error, rows []T, header string, cells func(T) []string) {
	if err != nil && len(rows) == 0 {
		return
	}
	if asJSON {
		if rows == nil {
			rows = []T{}
		}
		_ = printJSON(w, rows)
		return
	}
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		cs := cells(r)
		for i, c := range cs {
			if c == "" {
				cs[i] = "-"
			}
		}
		fmt.Fprintln(tw, strings.Join(cs, "\t"))
	}
	tw.Flush()
}

// jsonList writes a JSON array an element at a time, so that a listing
// read a page at a time (events --all) is never held whole: valid JSON
// however many elements, [] for none. A listing's --json is always one
// array; only a stream (events --follow) is a JSON value per line.
type jsonList struct {
	w io.Writer
	n int
}

// add writes v, already JSON when it is a json.RawMessage.
func (l *jsonList) add(v any) error {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	sep := ",\n"
	if l.n == 0 {
		sep = "[\n"
	}
	l.n++
	_, err := fmt.Fprintf(l.w, "%s%s", sep, b)
	return err
}

// close ends the array.
func (l *jsonList) close() error {
	end := "\n]\n"
	if l.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(l.w, end)
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
