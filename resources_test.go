package mcpvisor_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/protocol"
)

func everythingServer(t *testing.T, name string) mcpvisor.ServerConfig {
	t.Helper()
	node, args := peers.Everything(t)
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: node, Args: args, Enabled: true}
}

func featureCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Against the reference server: lists, reads, prompts and errors as a real
// SDK server sends them.
func TestResourcesEverything(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, everythingServer(t, "everything"))
	ctx := featureCtx(t)

	// No WaitReady: a server still starting is waited for.
	resources, err := h.Resources(ctx, "everything")
	if err != nil {
		t.Fatalf("Resources: %v", err)
	}
	byURI := map[string]mcpvisor.Resource{}
	for _, r := range resources {
		if _, dup := byURI[r.URI]; dup {
			t.Errorf("resource %q listed twice", r.URI)
		}
		byURI[r.URI] = r
	}
	const features = "demo://resource/static/document/features.md"
	if r := byURI[features]; r.Name != "features.md" || r.MimeType != "text/markdown" {
		t.Errorf("%s = %+v, want name features.md, text/markdown (all: %d resources)", features, r, len(resources))
	}

	templates, err := h.ResourceTemplates(ctx, "everything")
	if err != nil {
		t.Fatalf("ResourceTemplates: %v", err)
	}
	var uriTemplates []string
	for _, tp := range templates {
		uriTemplates = append(uriTemplates, tp.URITemplate)
	}
	for _, want := range []string{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"} {
		if !slices.Contains(uriTemplates, want) {
			t.Errorf("templates %q lack %q", uriTemplates, want)
		}
	}

	t.Run("read", func(t *testing.T) {
		cs, err := h.ReadResource(ctx, "everything", "demo://resource/dynamic/text/1")
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].URI != "demo://resource/dynamic/text/1" || cs[0].Blob != "" ||
			!strings.HasPrefix(cs[0].Text, "Resource 1: This is a plaintext resource") {
			t.Errorf("text resource = %+v", cs)
		}
		cs, err = h.ReadResource(ctx, "everything", "demo://resource/dynamic/blob/2")
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Text != "" || cs[0].Blob == "" {
			t.Fatalf("blob resource = %+v", cs)
		}
		raw, err := base64.StdEncoding.DecodeString(cs[0].Blob)
		if err != nil || !strings.HasPrefix(string(raw), "Resource 2: This is a base64 blob") {
			t.Errorf("blob decodes to %q, %v", raw, err)
		}
		cs, err = h.ReadResource(ctx, "everything", features)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].MimeType != "text/markdown" || !strings.Contains(cs[0].Text, "## Resources") {
			t.Errorf("static document = %+v", cs)
		}
	})

	t.Run("read unknown", func(t *testing.T) {
		_, err := h.ReadResource(ctx, "everything", "demo://nope")
		var perr *protocol.Error
		if !errors.As(err, &perr) || perr.Code != protocol.CodeInvalidParams {
			t.Fatalf("err = %v, want a JSON-RPC -32602", err)
		}
		if want := `server "everything": resources/read "demo://nope": code -32602: `; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %q, want it to start %q", err, want)
		}
	})

	t.Run("prompts", func(t *testing.T) {
		prompts, err := h.Prompts(ctx, "everything")
		if err != nil {
			t.Fatal(err)
		}
		var args []mcpvisor.PromptArgument
		for _, p := range prompts {
			if p.Name == "args-prompt" {
				args = p.Arguments
			}
		}
		want := []mcpvisor.PromptArgument{
			{Name: "city", Description: "Name of the city", Required: true},
			{Name: "state"},
		}
		if diff := cmp.Diff(want, args); diff != "" {
			t.Errorf("args-prompt arguments (-want +got):\n%s", diff)
		}

		res, err := h.GetPrompt(ctx, "everything", "args-prompt", map[string]string{"city": "Paris", "state": "TX"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" || res.Messages[0].Content.Text != "What's weather in Paris, TX?" {
			t.Errorf("args-prompt = %+v", res.Messages)
		}
		// A prompt embedding a resource: the block keeps it, blob and all.
		res, err = h.GetPrompt(ctx, "everything", "resource-prompt", map[string]string{"resourceType": "Blob", "resourceId": "3"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Messages); n != 2 || res.Messages[1].Content.Type != protocol.ContentResource ||
			res.Messages[1].Content.Resource.URI != "demo://resource/dynamic/blob/3" || res.Messages[1].Content.Resource.Blob == "" {
			t.Errorf("resource-prompt = %+v", res.Messages)
		}

		_, err = h.GetPrompt(ctx, "everything", "args-prompt", nil)
		var perr *protocol.Error
		if !errors.As(err, &perr) || !strings.HasPrefix(err.Error(), `server "everything": prompts/get "args-prompt": code -32602`) {
			t.Errorf("missing required argument: %v", err)
		}
	})
}

// Subscribing makes the server send notifications/resources/updated, which
// arrive as events; unsubscribing stops them for that URI only.
// server-everything sends updates for every subscribed URI, in the order
// they were first subscribed, once when toggle-subscriber-updates turns
// them on and every 5 s after.
func TestResourceSubscribe(t *testing.T) {
	onEvent, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: onEvent}, everythingServer(t, "everything"))
	ctx := featureCtx(t)
	const a, b = "demo://resource/dynamic/text/1", "demo://resource/dynamic/text/2"
	for _, uri := range []string{a, b} {
		if err := h.SubscribeResource(ctx, "everything", uri); err != nil {
			t.Fatalf("Subscribe(%s): %v", uri, err)
		}
	}
	toggle := func() {
		t.Helper()
		if res := call(t, h, "mcp__everything__toggle-subscriber-updates", `{}`); res.IsError {
			t.Fatalf("toggle-subscriber-updates: %s", res.Wire())
		}
	}
	// One deadline for the whole test: updates arrive every 5 s, so a
	// wait per update would never end if the one awaited never comes.
	timeout := time.After(30 * time.Second)
	updated := func() string {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind != mcpvisor.EventNotification || ev.Method != protocol.MethodResourcesUpdated {
					continue
				}
				var p protocol.ResourceUpdatedParams
				if err := json.Unmarshal(ev.Params, &p); err != nil {
					t.Fatalf("updated params %s: %v", ev.Params, err)
				}
				return p.URI
			case <-timeout:
				t.Fatal("no (further) notifications/resources/updated in time")
			}
		}
	}

	toggle() // on
	if got := []string{updated(), updated()}; !cmp.Equal(got, []string{a, b}) {
		t.Fatalf("updates = %q, want %q", got, []string{a, b})
	}
	toggle() // off
	if err := h.UnsubscribeResource(ctx, "everything", a); err != nil {
		t.Fatalf("Unsubscribe: %v", err)
	}
	toggle() // on: b alone
	// Updates of both sent before the toggle off (the 5 s timer) may still
	// be queued, always as the pair a, b. A b that does not follow an a is
	// the one sent after the unsubscribe.
	for prev := b; ; {
		uri := updated()
		if uri == b && prev != a {
			break
		}
		prev = uri
	}
	toggle() // off
}

// A server that declared neither resources nor prompts is refused at once
// once ready: no request reaches it.
func TestResourcesUnsupported(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("plain"))
	waitReady(t, h)
	ctx := featureCtx(t)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"Resources", func() error { _, err := h.Resources(ctx, "plain"); return err }, `server "plain": resources/list: not supported by the server`},
		{"ResourceTemplates", func() error { _, err := h.ResourceTemplates(ctx, "plain"); return err }, `server "plain": resources/templates/list: `},
		{"ReadResource", func() error { _, err := h.ReadResource(ctx, "plain", "file:///a"); return err }, `server "plain": resources/read "file:///a": not supported`},
		{"Subscribe", func() error { return h.SubscribeResource(ctx, "plain", "file:///a") }, `resources/subscribe "file:///a": not supported by the server (no resources.subscribe capability`},
		{"Unsubscribe", func() error { return h.UnsubscribeResource(ctx, "plain", "file:///a") }, `resources/unsubscribe "file:///a": `},
		{"Prompts", func() error { _, err := h.Prompts(ctx, "plain"); return err }, `server "plain": prompts/list: not supported by the server (no prompts capability`},
		{"GetPrompt", func() error { _, err := h.GetPrompt(ctx, "plain", "p", nil); return err }, `server "plain": prompts/get "p": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, mcpvisor.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrUnsupported saying %q", err, tt.want)
			}
		})
	}
	if _, err := h.Resources(ctx, "nope"); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
}

// featureServer is a Streamable HTTP MCP server (JSON replies) whose
// initialize result and methods a test chooses, and which records the
// params of every request.
type featureServer struct {
	caps    string                               // the initialize result's capabilities
	methods map[string]func(json.RawMessage) any // a result, or a *protocol.Error
	gate    chan struct{}                        // initialize answers once it is closed; nil: at once
	inInit  chan struct{}                        // closed when initialize arrives

	mu   sync.Mutex
	seen map[string][]json.RawMessage
	once sync.Once
}

func startFeatureServer(t *testing.T, f *featureServer) string {
	f.seen = map[string][]json.RawMessage{}
	f.inInit = make(chan struct{})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *featureServer) requests(method string) []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[method]
}

func (f *featureServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if r.Method != http.MethodDelete {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if len(msg.ID) == 0 || msg.Method == "" { // a notification, or an answer to us
		w.WriteHeader(http.StatusAccepted)
		return
	}
	f.mu.Lock()
	f.seen[msg.Method] = append(f.seen[msg.Method], msg.Params)
	f.mu.Unlock()
	var result any
	switch msg.Method {
	case "initialize":
		f.once.Do(func() { close(f.inInit) })
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-r.Context().Done():
				return
			}
		}
		result = json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + f.caps + `,"serverInfo":{"name":"features","version":"1"}}`)
	case "tools/list":
		result = json.RawMessage(`{"tools":[]}`)
	case "ping":
		result = struct{}{}
	default:
		if fn := f.methods[msg.Method]; fn != nil {
			result = fn(msg.Params)
		} else {
			result = &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "Method not found"}
		}
	}
	reply := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
	if perr, ok := result.(*protocol.Error); ok {
		reply["error"] = perr
	} else {
		reply["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// paged serves a list method: pages pages (-1: no end) of per items under
// key, made by item(n). next(i) is the cursor after page i; only cursors
// it handed out are accepted, so a cursor changed on the way is an error.
func pagedList(key string, pages, per int, next func(page int) string, item func(n int) any) func(json.RawMessage) any {
	var mu sync.Mutex
	pageOf := map[string]int{"": 0}
	return func(params json.RawMessage) any {
		var p protocol.CursorParams
		_ = json.Unmarshal(params, &p)
		mu.Lock()
		defer mu.Unlock()
		page, ok := pageOf[p.Cursor]
		if !ok {
			return &protocol.Error{Code: protocol.CodeInvalidParams, Message: fmt.Sprintf("unknown cursor %q", p.Cursor)}
		}
		items := make([]any, 0, per)
		for i := range per {
			items = append(items, item(page*per+i))
		}
		res := map[string]any{key: items}
		if pages < 0 || page+1 < pages {
			c := next(page)
			pageOf[c] = page + 1
			res["nextCursor"] = c
		}
		return res
	}
}

func pagedResource(n int) any {
	return map[string]any{"uri": fmt.Sprintf("test://r/%d", n), "name": fmt.Sprintf("r%d", n)}
}

// opaqueCursor is a cursor a client must send back byte for byte.
func opaqueCursor(page int) string { return fmt.Sprintf("p/%d?ü=+%%2F &", page) }

// syncLog is a logger's output, safe to read while the host writes.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestResourcesPaging(t *testing.T) {
	tests := []struct {
		name     string
		pages    int // -1: endless
		next     func(int) string
		want     int // resources listed
		requests int
		warning  string
	}{
		{"three pages", 3, opaqueCursor, 12, 3, ""},
		{"repeated cursor", 5, func(int) string { return "again" }, 8, 2, "resources/list: the server repeated a cursor; listing stopped"},
		{"cursor cycle", 5, func(i int) string { return []string{"x", "y"}[i%2] }, 12, 3, "repeated a cursor"},
		{"endless", -1, func(i int) string { return fmt.Sprint("c", i) }, 50 * 4, 50, "resources/list: stopped after 50 pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &featureServer{caps: `{"resources":{}}`, methods: map[string]func(json.RawMessage) any{
				"resources/list": pagedList("resources", tt.pages, 4, tt.next, pagedResource),
			}}
			url := startFeatureServer(t, f)
			var log syncLog
			h := openHost(t, mcpvisor.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}, httpServer("web", url))
			got, err := h.Resources(featureCtx(t), "web")
			if err != nil {
				t.Fatalf("Resources: %v", err)
			}
			if len(got) != tt.want {
				t.Errorf("%d resources, want %d", len(got), tt.want)
			}
			for i, r := range got {
				if r.URI != fmt.Sprintf("test://r/%d", i) {
					t.Fatalf("resource %d is %q: pages out of order", i, r.URI)
				}
			}
			if n := len(f.requests("resources/list")); n != tt.requests {
				t.Errorf("%d resources/list requests, want %d", n, tt.requests)
			}
			logged := log.String()
			if tt.warning == "" {
				if strings.Contains(logged, "resources/list") {
					t.Errorf("unexpected warning:\n%s", logged)
				}
			} else if !strings.Contains(logged, tt.warning) || !strings.Contains(logged, "server=web") {
				t.Errorf("log lacks the warning %q for web:\n%s", tt.warning, logged)
			}
		})
	}
}

// Templates and prompts are walked the same way; a capability the server
// left out is refused without asking it.
func TestPromptsPagingAndCapabilities(t *testing.T) {
	f := &featureServer{caps: `{"resources":{"listChanged":true},"prompts":{}}`, methods: map[string]func(json.RawMessage) any{
		"resources/templates/list": pagedList("resourceTemplates", 2, 3, opaqueCursor, func(n int) any {
			return map[string]any{"uriTemplate": fmt.Sprintf("test://t/%d/{x}", n), "name": fmt.Sprint("t", n)}
		}),
		"prompts/list": pagedList("prompts", 3, 2, opaqueCursor, func(n int) any {
			return map[string]any{"name": fmt.Sprint("p", n), "arguments": []any{map[string]any{"name": "x", "required": true}}}
		}),
		"prompts/get": func(params json.RawMessage) any {
			var p protocol.GetPromptParams
			_ = json.Unmarshal(params, &p)
			return map[string]any{"messages": []any{
				map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": p.Name + " x=" + p.Arguments["x"]}},
			}}
		},
	}}
	url := startFeatureServer(t, f)
	h := openHost(t, mcpvisor.Options{}, httpServer("web", url))
	ctx := featureCtx(t)

	templates, err := h.ResourceTemplates(ctx, "web")
	if err != nil || len(templates) != 6 || templates[5].URITemplate != "test://t/5/{x}" {
		t.Errorf("ResourceTemplates = %+v, %v; want 6 over 2 pages", templates, err)
	}
	prompts, err := h.Prompts(ctx, "web")
	if err != nil || len(prompts) != 6 || prompts[5].Name != "p5" || !prompts[5].Arguments[0].Required {
		t.Errorf("Prompts = %+v, %v; want 6 over 3 pages", prompts, err)
	}
	res, err := h.GetPrompt(ctx, "web", "p1", map[string]string{"x": "42"})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "p1 x=42" {
		t.Errorf("GetPrompt = %+v, %v", res, err)
	}

	// resources declared without subscribe: Subscribe is refused here.
	if err := h.SubscribeResource(ctx, "web", "test://r/1"); !errors.Is(err, mcpvisor.ErrUnsupported) {
		t.Errorf("Subscribe without resources.subscribe: %v", err)
	}
	if n := len(f.requests("resources/subscribe")); n != 0 {
		t.Errorf("%d resources/subscribe reached the server", n)
	}
	// A JSON-RPC error of the server keeps its code, and says what failed.
	_, err = h.ReadResource(ctx, "web", "test://r/1")
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeMethodNotFound ||
		err.Error() != `server "web": resources/read "test://r/1": code -32601: Method not found` {
		t.Errorf("ReadResource = %v", err)
	}
}

// Before a server is ready its capabilities are unknown: the request is
// sent and waits for it rather than being refused.
func TestResourcesBeforeReady(t *testing.T) {
	f := &featureServer{caps: `{"resources":{}}`, gate: make(chan struct{}), methods: map[string]func(json.RawMessage) any{
		"resources/list": pagedList("resources", 1, 2, opaqueCursor, pagedResource),
	}}
	url := startFeatureServer(t, f)
	h := openHost(t, mcpvisor.Options{}, httpServer("slow", url))
	<-f.inInit
	if st := status(t, h, "slow"); st.State == mcpvisor.StateReady {
		t.Fatalf("ready before its initialize was answered: %+v", st)
	}
	// It waits until the caller gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := h.Resources(ctx, "slow")
	cancel()
	if !errors.Is(err, mcpvisor.ErrCancelled) {
		t.Fatalf("Resources on a server still initializing: %v, want it to wait (ErrCancelled)", err)
	}
	if !strings.HasPrefix(err.Error(), `server "slow": resources/list: `) {
		t.Errorf("err = %q", err)
	}

	done := make(chan error, 1)
	ctx = featureCtx(t)
	go func() {
		rs, err := h.Resources(ctx, "slow")
		if err == nil && len(rs) != 2 {
			err = fmt.Errorf("%d resources, want 2", len(rs))
		}
		done <- err
	}()
	close(f.gate)
	if err := <-done; err != nil {
		t.Errorf("Resources across initialize: %v", err)
	}
}
