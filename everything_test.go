package mcpvisor_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// These tests drive the reference server, @modelcontextprotocol/server-everything
// (installed by scripts/peers.sh), through the host: every scenario over
// stdio and over Streamable HTTP. They skip when it is not installed.

// everythingName is the server name the tests register; its tools are
// mcp__everything__<tool>.
const everythingName = "everything"

// everythingTransports are the two ways to reach server-everything; each
// returns the config of a server of its own.
var everythingTransports = []struct {
	name   string
	server func(t *testing.T) mcpvisor.ServerConfig
}{
	{"stdio", func(t *testing.T) mcpvisor.ServerConfig {
		node, args := peers.Everything(t)
		return mcpvisor.ServerConfig{Name: everythingName, Type: "stdio", Command: node, Args: args, Enabled: true}
	}},
	{"http", func(t *testing.T) mcpvisor.ServerConfig {
		return httpServer(everythingName, peers.EverythingHTTP(t))
	}},
}

// forEachEverythingTransport runs test over stdio and over HTTP, in parallel.
func forEachEverythingTransport(t *testing.T, test func(t *testing.T, server mcpvisor.ServerConfig)) {
	for _, tr := range everythingTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			test(t, tr.server(t))
		})
	}
}

func everythingTool(name string) string { return "mcp__" + everythingName + "__" + name }

// openEverything opens a host with one server-everything and waits until
// tool is in its catalog: tools that depend on the client's capabilities
// are registered after initialized and announced with list_changed.
func openEverything(t *testing.T, opts mcpvisor.Options, server mcpvisor.ServerConfig, tool string) *mcpvisor.Host {
	t.Helper()
	onEvent, events := eventSink()
	opts.OnEvent = onEvent
	h := openHost(t, opts, server)
	waitEverythingTool(t, h, events, everythingTool(tool))
	return h
}

// waitEverythingTool waits, on the host's tools events, until tool is listed.
func waitEverythingTool(t *testing.T, h *mcpvisor.Host, events <-chan mcpvisor.Event, tool string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		for _, tl := range h.Tools() {
			if tl.Name == tool {
				return
			}
		}
		select {
		case <-events:
		case <-timeout:
			t.Fatalf("%s never listed; tools: %v", tool, toolsOf(h, everythingName))
		}
	}
}

// callEverything calls a tool of server-everything and fails on an error
// or a tool error.
func callEverything(t *testing.T, h *mcpvisor.Host, tool, args string) *mcpvisor.Result {
	t.Helper()
	res := call(t, h, everythingTool(tool), args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, res.Text)
	}
	return res
}

func TestEverythingEcho(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, "echo")
		res := callEverything(t, h, "echo", `{"message":"hello, host"}`)
		if res.Type != mcpvisor.ResultString || res.Text != "Echo: hello, host" {
			t.Errorf("echo = %s %q, want string %q", res.Type, res.Text, "Echo: hello, host")
		}
	})
}

func TestEverythingStructuredContent(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, "get-structured-content")
		for _, tl := range h.Tools() {
			if tl.Name == everythingTool("get-structured-content") && len(tl.OutputSchema) == 0 {
				t.Error("get-structured-content listed without its outputSchema: nothing would be validated")
			}
		}
		// A result that did not match the outputSchema would be an error.
		res := callEverything(t, h, "get-structured-content", `{"location":"Chicago"}`)
		if res.Type != mcpvisor.ResultJSON {
			t.Fatalf("type %s, want json; text %q", res.Type, res.Text)
		}
		var got map[string]any
		if err := json.Unmarshal(res.JSON, &got); err != nil {
			t.Fatalf("structuredContent %s: %v", res.JSON, err)
		}
		want := map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("structuredContent (-want +got):\n%s", diff)
		}
		if wire := res.Wire(); wire != `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}` {
			t.Errorf("Wire = %q", wire)
		}
	})
}

func TestEverythingTinyImage(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		dataDir := t.TempDir()
		h := openEverything(t, mcpvisor.Options{DataDir: dataDir}, server, "get-tiny-image")
		res := callEverything(t, h, "get-tiny-image", `{}`)
		if len(res.Media) != 1 {
			t.Fatalf("media = %+v, want one image", res.Media)
		}
		m := res.Media[0]
		if m.Kind != mcpvisor.MediaKindImage || m.MimeType != "image/png" || !mcpvisor.ValidMediaName(m.Name) || !strings.HasSuffix(m.Name, ".png") {
			t.Errorf("media file = %+v, want a generated .png image", m)
		}
		if m.URL != mcpvisor.DefaultMediaURLBase+m.Name {
			t.Errorf("URL %q, want %q", m.URL, mcpvisor.DefaultMediaURLBase+m.Name)
		}
		b, err := os.ReadFile(filepath.Join(dataDir, "media", m.Name))
		if err != nil {
			t.Fatalf("media file: %v", err)
		}
		if int64(len(b)) != m.Size {
			t.Errorf("file has %d bytes, Size says %d", len(b), m.Size)
		}
		// The bytes are the block's, as sent. (Not png.Decode: the server's
		// image has a bad CRC on its iCCP chunk, which Go's decoder refuses.)
		var sent []byte
		for _, c := range res.Content {
			if c.Type == "image" {
				if sent, err = base64.StdEncoding.DecodeString(c.Data); err != nil {
					t.Fatalf("the server's image block: %v", err)
				}
			}
		}
		if !bytes.Equal(b, sent) {
			t.Errorf("saved %d bytes, not the %d the server sent", len(b), len(sent))
		}
		if cfg, err := png.DecodeConfig(bytes.NewReader(b)); err != nil || cfg.Width != 20 || cfg.Height != 20 {
			t.Errorf("saved image: %+v, %v; want a 20×20 PNG", cfg, err)
		}
		for _, want := range []string{"Here's the image you requested:", "![image](" + m.URL + ")", "The image above is the MCP logo."} {
			if !strings.Contains(res.Text, want) {
				t.Errorf("text %q lacks %q", res.Text, want)
			}
		}
		if res.Type != mcpvisor.ResultString || strings.Contains(res.Wire(), "base64") {
			t.Errorf("wire %q: want the markdown, not the bytes", res.Wire())
		}
	})
}

func TestEverythingResourceLinks(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, "get-resource-links")
		res := callEverything(t, h, "get-resource-links", `{"count":2}`)
		want := "Here are 2 resource links to resources available in this server:\n" +
			"[text/plain](demo://resource/dynamic/blob/1)\n" +
			"[text/plain](demo://resource/dynamic/text/2)"
		if res.Text != want {
			t.Errorf("text:\n%s\nwant:\n%s", res.Text, want)
		}
		if len(res.Media) != 0 {
			t.Errorf("links saved as media: %+v", res.Media)
		}
	})
}

func TestEverythingProgress(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, "trigger-long-running-operation")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []mcpvisor.Progress // OnProgress runs on this goroutine
		res, err := h.CallWith(ctx, everythingTool("trigger-long-running-operation"), json.RawMessage(`{"duration":1,"steps":4}`),
			mcpvisor.CallOptions{OnProgress: func(p mcpvisor.Progress) { got = append(got, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || !strings.Contains(res.Text, "Long running operation completed") {
			t.Errorf("result %q", res.Text)
		}
		if len(got) != 4 {
			t.Fatalf("%d progress notifications, want 4: %+v", len(got), got)
		}
		for i, p := range got {
			if p.Progress != float64(i+1) || p.Total == nil || *p.Total != 4 {
				t.Errorf("progress %d = %v of %v, want %d of 4", i, p.Progress, p.Total, i+1)
			}
		}
	})
}

// everythingElicitResult is the ElicitResult server-everything echoes back after
// "Raw result: ", i.e. what the host sent.
func everythingElicitResult(t *testing.T, res *mcpvisor.Result) (action string, content map[string]any) {
	t.Helper()
	_, raw, ok := strings.Cut(res.Text, "Raw result: ")
	if !ok {
		t.Fatalf("no raw result in %q", res.Text)
	}
	var r struct {
		Action  string
		Content map[string]any
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("raw result %q: %v", raw, err)
	}
	return r.Action, r.Content
}

func TestEverythingElicitationHandler(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		var (
			mu   sync.Mutex
			seen []*mcpvisor.ElicitationRequest
		)
		handler := func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
		}
		h := openEverything(t, mcpvisor.Options{Elicitation: handler}, server, "trigger-elicitation-request")
		res := callEverything(t, h, "trigger-elicitation-request", `{}`)
		if !strings.HasPrefix(res.Text, "✅ User provided the requested information!") || !strings.Contains(res.Text, "- Name: Ada") {
			t.Errorf("result %q", res.Text)
		}
		action, content := everythingElicitResult(t, res)
		if action != "accept" {
			t.Errorf("action %q, want accept", action)
		}
		// The handler gave only the name; the schema's defaults filled in
		// the rest before the answer went out.
		want := map[string]any{
			"name":                       "Ada",
			"firstLine":                  "It was a dark and stormy night.",
			"integer":                    42.0,
			"number":                     3.14,
			"untitledSingleSelectEnum":   "Monica",
			"untitledMultipleSelectEnum": []any{"Guitar"},
			"titledSingleSelectEnum":     "hero-1",
			"titledMultipleSelectEnum":   []any{"fish-1"},
			"legacyTitledEnum":           "pet-1",
		}
		if diff := cmp.Diff(want, content); diff != "" {
			t.Errorf("content sent (-want +got):\n%s", diff)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 {
			t.Fatalf("handler called %d times", len(seen))
		}
		req := seen[0]
		if req.Server != everythingName || req.Mode != mcpvisor.ElicitForm || len(req.Fields) != 13 {
			t.Errorf("request: server %q mode %q, %d fields", req.Server, req.Mode, len(req.Fields))
		}
	})
}

func TestEverythingElicitationInbox(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{Inbox: true}, server, "trigger-elicitation-request")
		type outcome struct {
			res *mcpvisor.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := h.Call(ctx, everythingTool("trigger-elicitation-request"), json.RawMessage(`{}`))
			done <- outcome{res, err}
		}()

		var pending []mcpvisor.ElicitationRequest
		timeout := time.After(30 * time.Second)
		for len(pending) == 0 {
			changed := h.ElicitationsChanged() // before listing: no change is missed
			if pending = h.Elicitations(); len(pending) > 0 {
				break
			}
			select {
			case <-changed:
			case o := <-done:
				t.Fatalf("the call returned before any elicitation was pending: %+v, %v", o.res, o.err)
			case <-timeout:
				t.Fatal("no elicitation pending")
			}
		}
		if len(pending) != 1 {
			t.Fatalf("%d pending elicitations, want 1", len(pending))
		}
		req := pending[0]
		if req.ID == "" || req.Server != everythingName || req.Mode != mcpvisor.ElicitForm {
			t.Errorf("pending: id %q server %q mode %q", req.ID, req.Server, req.Mode)
		}
		fields := map[string]mcpvisor.ElicitationField{}
		for _, f := range req.Fields {
			fields[f.Name] = f
			if f.Sensitive {
				t.Errorf("field %q marked sensitive", f.Name)
			}
			if f.Required != (f.Name == "name") {
				t.Errorf("field %q: required %v", f.Name, f.Required)
			}
		}
		if f := fields["name"]; f.Type != "string" {
			t.Errorf("name field: %+v", f)
		}
		if f := fields["integer"]; f.Type != "integer" || string(f.Default) != "42" || f.Minimum == nil || *f.Minimum != 1 || f.Maximum == nil || *f.Maximum != 100 {
			t.Errorf("integer field: %+v", f)
		}
		if f := fields["titledSingleSelectEnum"]; len(f.Options) != 3 || f.Multi {
			t.Errorf("titled single select: %+v", f)
		}
		if f := fields["untitledMultipleSelectEnum"]; len(f.Options) != 5 || !f.Multi {
			t.Errorf("untitled multi select: %+v", f)
		}

		if err := h.ResolveElicitation(req.ID, mcpvisor.ElicitDecline, nil); err != nil {
			t.Fatal(err)
		}
		o := <-done // bounded by the call's context
		if o.err != nil {
			t.Fatal(o.err)
		}
		if !strings.HasPrefix(o.res.Text, "❌ User declined") {
			t.Errorf("result %q", o.res.Text)
		}
		if action, _ := everythingElicitResult(t, o.res); action != "decline" {
			t.Errorf("action %q, want decline", action)
		}
		if left := h.Elicitations(); len(left) != 0 {
			t.Errorf("still pending after the answer: %+v", left)
		}
	})
}

func TestEverythingSampling(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		var (
			mu   sync.Mutex
			asks []*protocol.CreateMessageParams
		)
		sampling := func(ctx context.Context, server string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
			if server != everythingName {
				return nil, errors.New("sampling asked by " + server)
			}
			mu.Lock()
			asks = append(asks, req)
			mu.Unlock()
			return &protocol.CreateMessageResult{
				Role: "assistant", Content: json.RawMessage(`{"type":"text","text":"hi from test"}`), Model: "test-model",
			}, nil
		}
		h := openEverything(t, mcpvisor.Options{Sampling: sampling}, server, "trigger-sampling-request")
		res := callEverything(t, h, "trigger-sampling-request", `{"prompt":"say hi","maxTokens":7}`)
		for _, want := range []string{"LLM sampling result:", "hi from test", "test-model"} {
			if !strings.Contains(res.Text, want) {
				t.Errorf("result %q lacks %q", res.Text, want)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asks) != 1 {
			t.Fatalf("sampling handler called %d times", len(asks))
		}
		if a := asks[0]; a.MaxTokens != 7 || len(a.Messages) != 1 || !strings.Contains(string(a.Messages[0].Content), "say hi") {
			t.Errorf("sampling request: %+v", a)
		}
	})
}

// Without a sampling handler the host does not declare sampling, so the
// server never registers its sampling tool.
func TestEverythingNoSamplingWithoutHandler(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		// simulate-research-query is registered with the capability-dependent
		// tools: once it is listed, the catalog is complete.
		h := openEverything(t, mcpvisor.Options{}, server, "simulate-research-query")
		for _, tool := range []string{"trigger-sampling-request", "trigger-elicitation-request"} {
			for _, tl := range h.Tools() {
				if tl.Name == everythingTool(tool) {
					t.Errorf("%s listed, though the host declared no capability for it", tool)
				}
			}
			_, err := h.Call(context.Background(), everythingTool(tool), json.RawMessage(`{"prompt":"x"}`))
			if !errors.Is(err, mcpvisor.ErrUnknownTool) {
				t.Errorf("calling %s = %v, want ErrUnknownTool", tool, err)
			}
		}
	})
}

const everythingResearch = "simulate-research-query"

// everythingOnlyTask returns the host's one task.
func everythingOnlyTask(t *testing.T, h *mcpvisor.Host) mcpvisor.TaskInfo {
	t.Helper()
	tasks, err := h.Tasks(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d tasks, want 1: %+v", len(tasks), tasks)
	}
	return tasks[0]
}

func TestEverythingTask(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, everythingResearch)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := h.Call(ctx, everythingTool(everythingResearch), json.RawMessage(`{"topic":"go"}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || res.Task != nil || !strings.HasPrefix(res.Text, "# Research Report: go\n") {
			t.Errorf("result: error %v task %v text %q", res.IsError, res.Task, res.Text)
		}
		task := everythingOnlyTask(t, h)
		if !task.Done || task.Status != mcpvisor.TaskCompleted || task.Detached || task.Tool != everythingTool(everythingResearch) ||
			task.Server != everythingName || task.ID == "" || task.Error != "" {
			t.Errorf("task record: %+v", task)
		}
		if unfinished, err := h.Tasks(true); err != nil || len(unfinished) != 0 {
			t.Errorf("unfinished tasks: %+v, %v", unfinished, err)
		}
	})
}

// An ambiguous query goes input_required; the elicitation arrives on the
// tasks/result stream and the task continues with the answer.
func TestEverythingTaskInputRequired(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		var (
			mu   sync.Mutex
			seen []*mcpvisor.ElicitationRequest
		)
		handler := func(ctx context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"interpretation": "programming"}}, nil
		}
		h := openEverything(t, mcpvisor.Options{Elicitation: handler}, server, everythingResearch)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := h.Call(ctx, everythingTool(everythingResearch), json.RawMessage(`{"topic":"python","ambiguous":true}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || !strings.HasPrefix(res.Text, "# Research Report: python (programming)\n") ||
			!strings.Contains(res.Text, "**Clarification**: programming") {
			t.Errorf("result: error %v text %q", res.IsError, res.Text)
		}
		task := everythingOnlyTask(t, h)
		if !task.Done || task.Status != mcpvisor.TaskCompleted {
			t.Errorf("task record: %+v", task)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 {
			t.Fatalf("elicitation handler called %d times, want 1", len(seen))
		}
		req := seen[0]
		if req.RelatedTask != task.ID {
			t.Errorf("elicitation's related task %q, want %q", req.RelatedTask, task.ID)
		}
		if len(req.Fields) != 1 || req.Fields[0].Name != "interpretation" || !req.Fields[0].Required || len(req.Fields[0].Options) != 3 {
			t.Errorf("elicitation fields: %+v", req.Fields)
		}
	})
}

// A caller that gives up cancels the task at the server, and the record
// says so.
func TestEverythingTaskCancelled(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, everythingResearch)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := h.Call(ctx, everythingTool(everythingResearch), json.RawMessage(`{"topic":"cancel me"}`))
			done <- err
		}()

		// The task's record is journaled before the call polls it; no
		// event announces it, so watch the state it is in.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		timeout := time.After(30 * time.Second)
		for created := false; !created; {
			select {
			case <-tick.C:
				tasks, err := h.Tasks(true)
				if err != nil {
					t.Fatal(err)
				}
				created = len(tasks) == 1
			case err := <-done:
				t.Fatalf("the call returned before its task was created: %v", err)
			case <-timeout:
				t.Fatal("no task created")
			}
		}
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the call did not return after its context was cancelled")
		}
		if !errors.Is(err, context.Canceled) && !errors.Is(err, mcpvisor.ErrCancelled) {
			t.Errorf("err = %v, want context.Canceled or ErrCancelled", err)
		}
		task := everythingOnlyTask(t, h)
		if !task.Done || task.Status != mcpvisor.TaskCancelled {
			t.Errorf("task record: %+v", task)
		}
	})
}

// A detached call returns at once; the outcome arrives as an mcpvisor/task
// journal event and through Host.Task.
func TestEverythingTaskDetached(t *testing.T) {
	t.Parallel()
	forEachEverythingTransport(t, func(t *testing.T, server mcpvisor.ServerConfig) {
		h := openEverything(t, mcpvisor.Options{}, server, everythingResearch)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := h.CallWith(ctx, everythingTool(everythingResearch), json.RawMessage(`{"topic":"rust"}`), mcpvisor.CallOptions{Detached: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Task == nil {
			t.Fatalf("detached call returned no task: %q", res.Text)
		}
		id := res.Task.ID
		if id == "" || res.Task.Done || !res.Task.Detached || res.Task.Status != mcpvisor.TaskWorking || !strings.Contains(res.Text, id) {
			t.Errorf("handle: %+v, text %q", *res.Task, res.Text)
		}

		// The channel closes when ctx ends: the receive is bounded.
		ev, ok := <-h.Journal().Subscribe(ctx, mcpvisor.EventFilter{Server: everythingName, Method: mcpvisor.EventMethodTask})
		if !ok || ev.Method != mcpvisor.EventMethodTask {
			t.Fatalf("no %s event", mcpvisor.EventMethodTask)
		}
		var params struct{ TaskID, Tool, Status, Error string }
		if err := json.Unmarshal(ev.Params, &params); err != nil {
			t.Fatal(err)
		}
		if params.TaskID != id || params.Tool != everythingTool(everythingResearch) || params.Status != mcpvisor.TaskCompleted || params.Error != "" {
			t.Errorf("event params: %s", ev.Params)
		}
		task, err := h.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		if !task.Done || task.Status != mcpvisor.TaskCompleted || !task.Detached || task.Result == nil {
			t.Fatalf("task: %+v", task)
		}
		if task.Result.IsError || !strings.HasPrefix(task.Result.Text, "# Research Report: rust\n") {
			t.Errorf("task result: error %v text %q", task.Result.IsError, task.Result.Text)
		}
	})
}
