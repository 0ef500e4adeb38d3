package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
)

// A call that validateArguments refuses is history like any other, and
// like any other it is not recorded with Journal.NoCallHistory.
func TestRefusedArgumentsAndCallHistory(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoCallHistory=%v", off), func(t *testing.T) {
			dir := t.TempDir()
			sc := mcptest("v")
			sc.ValidateArguments = true
			h := openHost(t, mcpvisor.Options{DataDir: dir, Journal: mcpvisor.JournalOptions{NoCallHistory: off}}, sc)
			waitReady(t, h, "v")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := h.Call(ctx, "mcp__v__progress", json.RawMessage(`{}`)) // "steps" is required
			if err != nil || !res.IsError {
				t.Fatalf("call with a required argument missing: %+v, %v; want a tool error", res, err)
			}
			if err := h.Close(); err != nil { // commits what is queued
				t.Fatal(err)
			}
			j, err := mcpvisor.OpenJournal(dir, mcpvisor.JournalOptions{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			hist, err := j.History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryCall})
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if off {
				want = 0
			}
			if len(hist) != want {
				t.Errorf("%d calls in the history, want %d: %+v", len(hist), want, hist)
			}
		})
	}
}

// Options.CallMiddleware sees every call, whoever makes it and whatever
// answers it, and can change its arguments or answer it itself.
func TestCallMiddlewareSeesEveryCall(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	observe := func(next mcpvisor.CallFunc) mcpvisor.CallFunc {
		return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
			res, err := next(ctx, c)
			outcome := "ok"
			switch {
			case err != nil:
				outcome = "error"
			case res.IsError:
				outcome = "tool_error"
			}
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %q %q %s %s", c.Tool, c.Server, c.Name, c.Scope.Session, outcome))
			mu.Unlock()
			return res, err
		}
	}
	rewrite := func(next mcpvisor.CallFunc) mcpvisor.CallFunc {
		return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
			switch {
			case c.Tool == "mcp__m__echo" && c.Scope.Session == "":
				c.Arguments = json.RawMessage(`{"rewritten":true}`)
			case c.Tool == "mcp__m__forbidden":
				return &mcpvisor.Result{Type: mcpvisor.ResultString, Text: "refused by policy", IsError: true}, nil
			}
			return next(ctx, c)
		}
	}
	h := openHost(t, mcpvisor.Options{CallMiddleware: []mcpvisor.CallMiddleware{observe, rewrite}}, mcptest("m"))
	waitReady(t, h, "m")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := h.Call(ctx, "mcp__m__echo", json.RawMessage(`{"a":1}`))
	if err != nil || res.Text != `{"rewritten":true}` {
		t.Errorf("echo: %+v, %v; want the rewritten arguments echoed", res, err)
	}
	res, err = h.Call(ctx, "mcp__m__forbidden", nil)
	if err != nil || res.Text != "refused by policy" {
		t.Errorf("forbidden: %+v, %v; want the middleware's answer (the tool does not exist)", res, err)
	}
	s := h.Session("s", "")
	if _, err := s.Call(ctx, "mcp__m__echo", nil); !errors.Is(err, mcpvisor.ErrNotGranted) {
		t.Errorf("session call before activation: %v, want ErrNotGranted", err)
	}
	if res, err := s.Call(ctx, mcpvisor.ToolActivate, json.RawMessage(`{"groups":["m"]}`)); err != nil || res.IsError {
		t.Errorf("activate_tools: %+v, %v", res, err)
	}
	if _, err := s.Call(ctx, "mcp__m__echo", json.RawMessage(`{`)); err == nil {
		t.Error("malformed arguments: no error")
	}

	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`mcp__m__echo "m" "echo"  ok`,
		`mcp__m__forbidden "m" "forbidden"  tool_error`,
		`mcp__m__echo "m" "echo" s error`,
		`activate_tools "" "activate_tools" s ok`,
		`mcp__m__echo "m" "echo" s error`,
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("calls seen by the middleware (-want +got):\n%s", diff)
	}
}

// Subscribe may come at any time, and an ended subscription hears nothing
// more.
func TestSubscribe(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("s"))
	waitReady(t, h, "s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first := make(chan mcpvisor.Event, 64)
	stop := h.Subscribe(func(ev mcpvisor.Event) { first <- ev })
	var once int // a subscriber that ends itself at its first event
	itself := make(chan func(), 1)
	itself <- h.Subscribe(func(mcpvisor.Event) { once++; (<-itself)() })
	second := make(chan mcpvisor.Event, 64)
	defer h.Subscribe(func(ev mcpvisor.Event) { second <- ev })()

	if err := h.SetEnabled(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan mcpvisor.Event{first, second} {
		waitState(t, ch, "s", mcpvisor.StateDisabled)
	}
	stop()
	stop() // idempotent
	for len(first) > 0 {
		<-first
	}
	if err := h.SetEnabled(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	// Events reach subscribers one at a time, in order: once the second
	// has seen the server ready, the first was passed over for it.
	waitState(t, second, "s", mcpvisor.StateReady)
	if len(first) != 0 {
		t.Errorf("an ended subscription got %v", <-first)
	}
	if once != 1 { // read after the second saw later events: delivery is sequential
		t.Errorf("the subscriber that unsubscribed itself was called %d times, want 1", once)
	}
}
