package mcpvisor_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// askResult is what mcptest's ask tool returns: the answer as received.
type askResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

func callAsk(t *testing.T, h *mcpvisor.Host, server, args string) askResult {
	t.Helper()
	res, err := h.Call(context.Background(), "mcp__"+server+"__ask", json.RawMessage(args))
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	if res.IsError {
		t.Fatalf("ask: tool error: %s", res.Wire())
	}
	var got askResult
	if err := json.Unmarshal(res.JSON, &got); err != nil {
		t.Fatalf("ask: result %s: %v", res.JSON, err)
	}
	return got
}

const defaultsSchema = `{"type":"object","properties":{
	"name":{"type":"string","default":"Ada"},
	"age":{"type":"integer","minimum":0,"default":36},
	"color":{"type":"string","enum":["red","green"],"default":"green"},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"default":["a"]},
	"ok":{"type":"boolean","default":true},
	"note":{"type":"string"}},
	"required":["name"]}`

// A handler's accept is completed with the schema's defaults (SEP-1034)
// for the fields it left out; what it gave wins.
func TestElicitationHandlerGetsDefaultsApplied(t *testing.T) {
	var seen *mcpvisor.ElicitationRequest
	h := openHost(t, mcpvisor.Options{
		Elicitation: func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			seen = req
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"name": "Grace", "tags": []string{"b", "c"}}}, nil
		},
	}, mcptest("e"))
	waitReady(t, h, "e")
	got := callAsk(t, h, "e", `{"message":"Who are you?","schema":`+defaultsSchema+`}`)
	if got.Action != "accept" {
		t.Fatalf("action %q, want accept", got.Action)
	}
	want := map[string]any{"name": "Grace", "age": float64(36), "color": "green", "tags": []any{"b", "c"}, "ok": true}
	if len(got.Content) != len(want) {
		t.Fatalf("content %v, want %v", got.Content, want)
	}
	for k, v := range want {
		if gb, _ := json.Marshal(got.Content[k]); string(gb) != mustJSON(v) {
			t.Errorf("content[%s] = %s, want %s", k, gb, mustJSON(v))
		}
	}
	if seen == nil || seen.Server != "e" || seen.Message != "Who are you?" || len(seen.Fields) != 6 || seen.Fields[0].Name != "name" {
		t.Fatalf("handler saw %+v", seen)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Content that does not fit the schema is never sent: the server is told
// cancel, and the call itself goes on.
func TestElicitationHandlerInvalidContentAnswersCancel(t *testing.T) {
	h := openHost(t, mcpvisor.Options{
		Elicitation: func(context.Context, *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"age": "old"}}, nil
		},
	}, mcptest("e"))
	waitReady(t, h, "e")
	if got := callAsk(t, h, "e", `{"message":"m","schema":`+defaultsSchema+`}`); got.Action != "cancel" || got.Content != nil {
		t.Fatalf("answer %+v, want a bare cancel", got)
	}
}

// Without a handler or the inbox the capability is not declared and the
// server's request is refused.
func TestNoElicitationCapabilityWithoutAHandler(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("e"))
	waitReady(t, h, "e")
	res, err := h.Call(context.Background(), "mcp__e__ask", json.RawMessage(`{"message":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Wire(), "-32601") {
		t.Fatalf("result %q, want the server's report of -32601", res.Wire())
	}
}

// The inbox: the request waits, listed with its sensitive fields, until a
// person answers; a malformed answer is refused (naming the field, never
// the value) and leaves it waiting. Nothing the person typed reaches the
// logs, the journal or any file under the data directory.
func TestInboxElicitationSecretIsNeverWritten(t *testing.T) {
	const secret = "hunter2-Zq9-secret-value"
	sum := sha256.Sum256([]byte(secret))
	var logs syncBuffer
	dir := t.TempDir()
	opts := mcpvisor.Options{
		DataDir: dir, Inbox: true,
		Logger:  slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Journal: mcpvisor.JournalOptions{KeepCallPayloads: true},
	}
	h := openHost(t, opts, mcptest("vault"))
	waitReady(t, h, "vault")

	changed := h.ElicitationsChanged()
	type outcome struct {
		res *mcpvisor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.Call(context.Background(), "mcp__vault__login", json.RawMessage(`{"expect_sha256":"`+hex.EncodeToString(sum[:])+`"}`))
		done <- outcome{res, err}
	}()
	var pending []mcpvisor.ElicitationRequest
	for len(pending) == 0 {
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no elicitation arrived in the inbox")
		}
		changed = h.ElicitationsChanged()
		pending = h.Elicitations()
	}
	el := pending[0]
	if el.Server != "vault" || el.Mode != mcpvisor.ElicitForm || len(el.Fields) != 1 || !el.Fields[0].Sensitive {
		t.Fatalf("pending elicitation %+v, want vault's one sensitive field", el)
	}
	if got := el.Sensitive(); len(got) != 1 || got[0] != "password" {
		t.Fatalf("sensitive fields %v", got)
	}
	err := h.ResolveElicitation(el.ID, mcpvisor.ElicitAccept, map[string]any{"password": 12345})
	if err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("a number for a string field: err %v, want one naming the field", err)
	}
	if len(h.Elicitations()) != 1 {
		t.Fatal("a refused answer must leave the elicitation waiting")
	}
	if err := h.ResolveElicitation(el.ID, mcpvisor.ElicitAccept, map[string]any{"password": secret}); err != nil {
		t.Fatalf("ResolveElicitation: %v", err)
	}
	out := <-done
	if out.err != nil || out.res.Wire() != "login ok" {
		t.Fatalf("login: %v %v", out.res, out.err)
	}
	if err := h.ResolveElicitation(el.ID, mcpvisor.ElicitCancel, nil); !errors.Is(err, mcpvisor.ErrUnknownElicitation) {
		t.Fatalf("resolving twice: %v, want ErrUnknownElicitation", err)
	}

	// The journal knows it happened, and how it ended.
	// It is journaled in the background: the call may return first.
	evs := waitEvents(t, h, mcpvisor.EventFilter{Method: mcpvisor.EventMethodElicitation}, 1)
	if len(evs) != 1 || !strings.Contains(string(evs[0].Params), `"action":"accept"`) {
		t.Fatalf("elicitation events %v, want one accept", evs)
	}
	var everything bytes.Buffer
	for _, ev := range evs {
		everything.Write(ev.Params)
	}
	hist, _ := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
	for _, r := range hist {
		everything.Write(r.Arguments)
		everything.Write(r.Result)
		everything.WriteString(r.Error)
	}
	for _, st := range h.Status() {
		everything.WriteString(st.LastError)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	everything.WriteString(logs.String())
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		everything.Write(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if everything.Len() < 1000 {
		t.Fatalf("only %d bytes searched: the search saw nothing", everything.Len())
	}
	if bytes.Contains(everything.Bytes(), []byte(secret)) {
		t.Fatal("the secret was written somewhere (journal, logs, status or data dir)")
	}
	if !strings.Contains(logs.String(), "vault") {
		t.Fatal("the host logged nothing about the server: the log search proves nothing")
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Nobody answers: at the deadline the server is told cancel.
func TestInboxDeadlineAnswersCancel(t *testing.T) {
	h := openHost(t, mcpvisor.Options{Inbox: true, ElicitationDeadline: 100 * time.Millisecond}, mcptest("e"))
	waitReady(t, h, "e")
	if got := callAsk(t, h, "e", `{"message":"anyone?"}`); got.Action != "cancel" {
		t.Fatalf("action %q, want cancel at the deadline", got.Action)
	}
	if n := len(h.Elicitations()); n != 0 {
		t.Fatalf("%d elicitations still pending after the deadline", n)
	}
}

// While a person answers, the call's timeout stands still: a call with a
// 300 ms timeout survives an answer that takes three times as long, and
// the same wait without an elicitation times out.
func TestElicitationPausesTheCallTimeout(t *testing.T) {
	h := openHost(t, mcpvisor.Options{
		Elicitation: func(ctx context.Context, _ *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			select { // a person taking their time
			case <-time.After(900 * time.Millisecond):
			case <-ctx.Done():
			}
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"answer": "late"}}, nil
		},
	}, withTimeout(mcptest("e"), 300*time.Millisecond))
	waitReady(t, h, "e")
	if got := callAsk(t, h, "e", `{"message":"take your time"}`); got.Action != "accept" || got.Content["answer"] != "late" {
		t.Fatalf("answer %+v", got)
	}
	_, err := h.Call(context.Background(), "mcp__e__slow", json.RawMessage(`{"ms":900}`))
	if !errors.Is(err, mcpvisor.ErrTimeout) {
		t.Fatalf("a 900 ms call without an elicitation: err %v, want ErrTimeout", err)
	}
}

func withTimeout(sc mcpvisor.ServerConfig, d time.Duration) mcpvisor.ServerConfig {
	sc.Timeout = mcpvisor.Duration(d)
	return sc
}

// URL mode: a safe URL reaches the handler, unopened; an unsafe one is
// refused with -32602 before anyone sees it.
func TestURLElicitation(t *testing.T) {
	var seen []*mcpvisor.ElicitationRequest
	var mu sync.Mutex
	h := openHost(t, mcpvisor.Options{
		Elicitation: func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept}, nil
		},
	}, mcptest("e"))
	waitReady(t, h, "e")
	if got := callAsk(t, h, "e", `{"message":"sign in","mode":"url","url":"https://auth.example.com/start?state=1"}`); got.Action != "accept" {
		t.Fatalf("url mode: %+v", got)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0].Mode != mcpvisor.ElicitURL || seen[0].URL != "https://auth.example.com/start?state=1" || seen[0].Host() != "auth.example.com" {
		t.Fatalf("handler saw %+v", seen)
	}
	mu.Unlock()
	for _, bad := range []string{"javascript:alert(1)", "http://example.com/x", "file:///etc/passwd"} {
		res, err := h.Call(context.Background(), "mcp__e__ask", json.RawMessage(`{"message":"m","mode":"url","url":"`+bad+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(res.Wire(), "-32602") {
			t.Errorf("url %q: %q, want -32602", bad, res.Wire())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("unsafe URLs reached the handler: %d requests", len(seen))
	}
}

// A -32042 answer reaches the caller typed, with the URLs to visit.
func TestURLElicitationRequiredError(t *testing.T) {
	h := openHost(t, mcpvisor.Options{Inbox: true}, mcptest("e"))
	waitReady(t, h, "e")
	_, err := h.Call(context.Background(), "mcp__e__need_url", nil)
	var uerr *mcpvisor.URLElicitationRequiredError
	if !errors.As(err, &uerr) {
		t.Fatalf("err %v, want *URLElicitationRequiredError", err)
	}
	if len(uerr.Elicitations) != 1 || uerr.Elicitations[0].URL != "https://example.com/authorize?x=1" || uerr.Elicitations[0].ElicitationID != "el-1" {
		t.Fatalf("elicitations %+v", uerr.Elicitations)
	}
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeURLElicitationRequired {
		t.Fatalf("the JSON-RPC error is not reachable: %v", err)
	}
}

// Progress notifications reach the caller, in order.
func TestProgressReachesTheCaller(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("p"))
	waitReady(t, h, "p")
	var got []mcpvisor.Progress
	res, err := h.CallWith(context.Background(), "mcp__p__progress", json.RawMessage(`{"steps":5,"delay_ms":1}`),
		mcpvisor.CallOptions{OnProgress: func(p mcpvisor.Progress) { got = append(got, p) }})
	if err != nil || res.Wire() != "done after 5 steps" {
		t.Fatalf("progress: %v %v", res, err)
	}
	if len(got) != 5 {
		t.Fatalf("%d progress notifications, want 5: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total == nil || *p.Total != 5 || p.Message == "" {
			t.Fatalf("notification %d: %+v", i, p)
		}
	}
	// Without OnProgress no token is sent, and the server sends none.
	if res, err := h.Call(context.Background(), "mcp__p__progress", json.RawMessage(`{"steps":3,"delay_ms":1}`)); err != nil || res.Wire() != "done after 3 steps" {
		t.Fatalf("without progress: %v %v", res, err)
	}
}

// resetTimeoutOnProgress keeps a call that reports progress alive past its
// timeout; maxTotalTimeout still ends it.
func TestProgressResetsTheTimeoutUpToTheCap(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, withTimeout(mcptest("p"), 200*time.Millisecond))
	waitReady(t, h, "p")
	args := json.RawMessage(`{"steps":8,"delay_ms":100}`) // 800 ms, progress every 100 ms
	if _, err := h.CallWith(context.Background(), "mcp__p__progress", args, mcpvisor.CallOptions{OnProgress: func(mcpvisor.Progress) {}}); !errors.Is(err, mcpvisor.ErrTimeout) {
		t.Fatalf("without reset: err %v, want ErrTimeout", err)
	}
	res, err := h.CallWith(context.Background(), "mcp__p__progress", args, mcpvisor.CallOptions{
		OnProgress: func(mcpvisor.Progress) {}, ResetTimeoutOnProgress: true,
	})
	if err != nil || res.Wire() != "done after 8 steps" {
		t.Fatalf("with reset: %v %v", res, err)
	}
	_, err = h.CallWith(context.Background(), "mcp__p__progress", args, mcpvisor.CallOptions{
		OnProgress: func(mcpvisor.Progress) {}, ResetTimeoutOnProgress: true, MaxTotalTimeout: 400 * time.Millisecond,
	})
	if !errors.Is(err, mcpvisor.ErrTimeout) || !strings.Contains(err.Error(), "maximum total") {
		t.Fatalf("past the cap: err %v, want ErrTimeout over the maximum total", err)
	}
}

// Sampling and roots reach the embedder's hooks; without them the server is
// told they are not supported.
func TestSamplingAndRootsHooks(t *testing.T) {
	h := openHost(t, mcpvisor.Options{
		Sampling: func(_ context.Context, server string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error) {
			return &protocol.CreateMessageResult{Role: "assistant", Model: "test-model",
				Content: json.RawMessage(`{"type":"text","text":"hello from ` + server + `"}`)}, nil
		},
		Roots: func(context.Context, string) ([]protocol.Root, error) {
			return []protocol.Root{{URI: "file:///work/project", Name: "project"}}, nil
		},
	}, mcptest("s"))
	waitReady(t, h, "s")
	res, err := h.Call(context.Background(), "mcp__s__sample", json.RawMessage(`{"prompt":"hi"}`))
	if err != nil || res.IsError || !strings.Contains(res.Wire(), "hello from s") {
		t.Fatalf("sample: %v %v", res, err)
	}
	res, err = h.Call(context.Background(), "mcp__s__roots", nil)
	if err != nil || res.IsError || !strings.Contains(string(res.JSON), "file:///work/project") {
		t.Fatalf("roots: %v %v", res, err)
	}

	bare := openHost(t, mcpvisor.Options{}, mcptest("s"))
	waitReady(t, bare, "s")
	res, err = bare.Call(context.Background(), "mcp__s__sample", json.RawMessage(`{"prompt":"hi"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Wire(), "-32601") {
		t.Fatalf("sample without a handler: %v %v", res, err)
	}
}

// logLevel from the config is sent as logging/setLevel during the
// handshake: the server's warning is not sent when the level is error.
func TestLogLevelFromConfig(t *testing.T) {
	dir := t.TempDir()
	quiet := mcptest("quiet")
	quiet.LogLevel = "error"
	h := openHost(t, mcpvisor.Options{DataDir: dir}, mcptest("loud"), quiet)
	waitReady(t, h, "loud", "quiet")
	for _, s := range []string{"loud", "quiet"} {
		if _, err := h.Call(context.Background(), "mcp__"+s+"__notify", nil); err != nil {
			t.Fatal(err)
		}
	}
	// The custom event/test notification follows the log message on the
	// same pipe: once it is journaled, the log line has been handled.
	waitEvents(t, h, mcpvisor.EventFilter{Method: "event/test"}, 2)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, "logs", name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if !strings.Contains(read("loud"), "notify tool called") {
		t.Fatal("the server without a level did not log its warning")
	}
	if strings.Contains(read("quiet"), "notify tool called") {
		t.Fatal("the server at level error sent its warning")
	}
}
