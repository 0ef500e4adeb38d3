package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Unit tests of the call pipeline's stages: each stage over a scripted
// next, on a host with a real journal and no servers.

// newTestPipeline builds a pipeline over a runtime with no servers.
func newTestPipeline(t testing.TB, cfg Config) *Pipeline {
	t.Helper()
	if cfg.Runtime == nil {
		rt := actors.New(actors.Options{Logger: slog.New(slog.DiscardHandler), LogDir: t.TempDir()})
		t.Cleanup(func() { rt.Close(context.Background()) })
		cfg.Runtime = rt
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	return New(cfg)
}

// scripted is a next stage that counts its calls and answers as told.
type scripted struct {
	calls int
	raw   string
	res   *Result
	err   error
}

func (s *scripted) next(_ context.Context, c *Call) (*Result, error) {
	s.calls++
	if s.raw != "" {
		c.raw = json.RawMessage(s.raw)
	}
	return s.res, s.err
}

func TestChainOrder(t *testing.T) {
	var trace []string
	stage := func(name string) Middleware {
		return func(next Func) Func {
			return func(ctx context.Context, c *Call) (*Result, error) {
				trace = append(trace, name+" in")
				res, err := next(ctx, c)
				trace = append(trace, name+" out")
				return res, err
			}
		}
	}
	last := func(context.Context, *Call) (*Result, error) { trace = append(trace, "last"); return nil, nil }
	Chain(last, stage("a"), stage("b"))(context.Background(), &Call{})
	if diff := cmp.Diff([]string{"a in", "b in", "last", "b out", "a out"}, trace); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestNewCallSplitsTheName(t *testing.T) {
	h := newTestPipeline(t, Config{})
	for _, tc := range []struct{ tool, server, name string }{
		{"mcp__fs__read", "fs", "read"},
		{"mcp__fs__a__b", "fs", "a__b"},
		{"activate_tools", "", "activate_tools"},
		{"mcp__broken", "", "mcp__broken"},
	} {
		c := h.NewCall(Scope{}, tc.tool, nil, nil)
		if c.Server != tc.server || c.Name != tc.name || c.Options == nil {
			t.Errorf("%s: server %q name %q options %v, want %q %q and options", tc.tool, c.Server, c.Name, c.Options, tc.server, tc.name)
		}
	}
}

func TestGrantStage(t *testing.T) {
	granted := map[string]bool{"granted": true, "always": true}
	h := newTestPipeline(t, Config{Granted: func(scope Scope, group string) bool {
		return group == "always" || scope == (Scope{Session: "s"}) && granted[group]
	}})
	for _, tc := range []struct {
		name      string
		scope     Scope
		tool      string
		wantGrant bool // refused with ErrNotGranted
	}{
		{"host call, no grants needed", Scope{}, "mcp__other__t", false},
		{"granted group", Scope{Session: "s"}, "mcp__granted__t", false},
		{"always-on group", Scope{Session: "s"}, "mcp__always__t", false},
		{"group not granted", Scope{Session: "s"}, "mcp__other__t", true},
		{"a frame does not inherit its session's grants", Scope{Session: "s", Stack: "f"}, "mcp__granted__t", true},
		{"config tools need the config group", Scope{Session: "s"}, "register_mcp", true},
		{"activate_tools belongs to no group", Scope{Session: "s"}, "activate_tools", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := &scripted{}
			_, err := h.grantStage(next.next)(context.Background(), h.NewCall(tc.scope, tc.tool, nil, nil))
			if got := errors.Is(err, ErrNotGranted); got != tc.wantGrant {
				t.Fatalf("err %v, want ErrNotGranted: %v", err, tc.wantGrant)
			}
			if tc.wantGrant == (next.calls != 0) {
				t.Errorf("next called %d times", next.calls)
			}
		})
	}
}

func TestArgumentStage(t *testing.T) {
	h := newTestPipeline(t, Config{})
	next := &scripted{}
	stage := h.argumentStage(next.next)
	if _, err := stage(context.Background(), h.NewCall(Scope{}, "mcp__a__t", json.RawMessage(`{"a":`), nil)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("malformed arguments: %v", err)
	}
	if next.calls != 0 {
		t.Fatal("malformed arguments went on")
	}
	for _, args := range []string{"", `{"a":1}`} {
		if _, err := stage(context.Background(), h.NewCall(Scope{}, "mcp__a__t", json.RawMessage(args), nil)); err != nil {
			t.Errorf("arguments %q: %v", args, err)
		}
	}
	if next.calls != 2 {
		t.Errorf("next called %d times, want 2", next.calls)
	}
}

func TestResultStage(t *testing.T) {
	h := newTestPipeline(t, Config{})
	ctx := context.Background()

	next := &scripted{raw: `{"content":[{"type":"text","text":"hi"}],"structuredContent":{"x":1}}`}
	res, err := h.resultStage(next.next)(ctx, h.NewCall(Scope{}, "mcp__a__t", nil, nil))
	if err != nil || res.Type != ResultJSON || res.Text != "hi" || string(res.JSON) != `{"x":1}` {
		t.Errorf("decoded %+v, %v", res, err)
	}

	next = &scripted{raw: `{"content":"not a list"}`}
	if _, err := h.resultStage(next.next)(ctx, h.NewCall(Scope{}, "mcp__a__t", nil, nil)); err == nil || !strings.Contains(err.Error(), "mcp__a__t: malformed tools/call result") {
		t.Errorf("malformed result: %v", err)
	}

	handle := &Result{Text: "a task's handle"}
	next = &scripted{res: handle}
	if res, err := h.resultStage(next.next)(ctx, h.NewCall(Scope{}, "mcp__a__t", nil, nil)); res != handle || err != nil {
		t.Errorf("a result from below: %+v %v, want it unchanged", res, err)
	}

	data, _ := json.Marshal(protocol.URLElicitationRequiredData{Elicitations: []protocol.ElicitRequestParams{
		{Message: "sign in", URL: "https://example.com/login", ElicitationID: "e1"}}})
	next = &scripted{err: &protocol.Error{Code: protocol.CodeURLElicitationRequired, Message: "sign in first", Data: data}}
	_, err = h.resultStage(next.next)(ctx, h.NewCall(Scope{}, "mcp__a__t", nil, nil))
	var urlErr *URLElicitationRequiredError
	if !errors.As(err, &urlErr) || urlErr.Server != "a" || len(urlErr.Elicitations) != 1 {
		t.Errorf("-32042: %v, want a URLElicitationRequiredError for server a with one URL", err)
	}
}

func TestTaskStagePassesPlainResults(t *testing.T) {
	h := newTestPipeline(t, Config{})
	next := &scripted{raw: `{"content":[]}`}
	c := h.NewCall(Scope{}, "mcp__a__t", nil, nil)
	res, err := h.taskStage(next.next)(context.Background(), c)
	if res != nil || err != nil || string(c.raw) != `{"content":[]}` {
		t.Errorf("plain result: %+v %v raw %s, want it left for the result stage", res, err, c.raw)
	}
}

// The call history records every call the pipeline answers, whichever
// stage answered it, and none without a journal: a call refused by an
// inner stage (as validateArguments refuses one) included.
func TestRecordStage(t *testing.T) {
	for _, off := range []bool{false, true} {
		store, err := persistence.Open(t.TempDir(), persistence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		j := actors.NewJournal(store, actors.JournalOptions{}, nil)
		cfg := Config{KeepPayloads: true}
		if !off {
			cfg.Journal = j
		}
		h := newTestPipeline(t, cfg)
		refused := &scripted{res: &Result{Type: ResultString, Text: "arguments do not match", IsError: true}}
		c := h.NewCall(Scope{Session: "s"}, "mcp__a__t", json.RawMessage(`{"a":1}`), nil)
		if res, _ := h.recordStage(refused.next)(context.Background(), c); res == nil || !res.IsError {
			t.Fatalf("the stage changed the answer: %+v", res)
		}
		failed := &scripted{err: actors.ErrTimeout}
		h.recordStage(failed.next)(context.Background(), h.NewCall(Scope{}, "mcp__a__u", json.RawMessage(`{`), nil))
		j.Close() // commits what is queued
		hist, err := store.History(persistence.HistoryFilter{Kind: persistence.HistoryCall})
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		if off {
			if len(hist) != 0 {
				t.Errorf("no journal: %d calls recorded: %+v", len(hist), hist)
			}
			continue
		}
		if len(hist) != 2 {
			t.Fatalf("%d calls recorded, want 2: %+v", len(hist), hist)
		}
		a, u := hist[0], hist[1]
		if a.Tool != "mcp__a__t" || a.Server != "a" || a.Scope != (Scope{Session: "s"}) || a.Outcome != "tool_error" || string(a.Arguments) != `{"a":1}` {
			t.Errorf("refused call recorded as %+v", a)
		}
		if u.Outcome != "timeout" || u.Error == "" || u.Arguments != nil {
			t.Errorf("failed call with malformed arguments recorded as %+v, want a timeout and no arguments", u)
		}
	}
}

func TestSpells(t *testing.T) {
	for _, tc := range []struct {
		tool, server, name string
		want               bool
	}{
		{"mcp__a__b", "a", "b", true},
		{"mcp__a__b__c", "a", "b__c", true},
		{"mcp__a__b__c", "a__b", "c", true},
		{"mcp__a__bc", "a", "b", false},
		{"mcp__ab__c", "a", "b_c", false},
		{"mcp__a_b", "a", "b", false},
		{"a__b", "a", "b", false},
		{"mcp__a__b", "a", "B", false},
	} {
		if got := spells(tc.tool, tc.server, tc.name); got != tc.want || (got && actors.ToolName(tc.server, tc.name) != tc.tool) {
			t.Errorf("spells(%q, %q, %q) = %v, want %v", tc.tool, tc.server, tc.name, got, tc.want)
		}
	}
}
