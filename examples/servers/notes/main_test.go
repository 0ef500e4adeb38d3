package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/stdiotest"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
)

var serverBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{"github.com/mcpvisor/mcpvisor/examples/servers/notes": &serverBin})
}

// startNotes starts the server with env and completes the handshake.
func startNotes(t *testing.T, env ...string) *stdiotest.Client {
	t.Helper()
	c := stdiotest.Start(t, serverBin, stdiotest.Options{Env: env})
	if _, err := c.Initialize(stdiotest.Context(t), "2025-11-25"); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// call runs a tool and returns its single text block and isError.
func call(t *testing.T, c *stdiotest.Client, name string, args any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(stdiotest.Context(t), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text, ok := res.Text()
	if !ok {
		t.Fatalf("%s: want one text block, got %+v", name, res.Content)
	}
	return text, res.IsError
}

type hints struct {
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
}

type listedTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  *hints          `json:"annotations"`
}

func TestToolList(t *testing.T) {
	t.Parallel()
	c := stdiotest.Start(t, serverBin, stdiotest.Options{})
	line, err := c.NextStderr(stdiotest.Context(t))
	if err != nil || !strings.Contains(line, "MCP stdio server ready") {
		t.Errorf("startup stderr = %q, %v", line, err)
	}
	m, err := c.Initialize(stdiotest.Context(t), "2025-06-18")
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || init.ProtocolVersion != "2025-06-18" || init.ServerInfo.Name != "notes" {
		t.Errorf("initialize = %s (%v); want the supported 2025-06-18 echoed, server notes", m.Result, err)
	}

	lm, err := c.Call(stdiotest.Context(t), "tools/list", nil)
	if err != nil || lm.Error != nil {
		t.Fatalf("tools/list: %v %v", err, lm)
	}
	var list struct {
		Tools      []listedTool `json:"tools"`
		NextCursor *string      `json:"nextCursor"`
	}
	if err := json.Unmarshal(lm.Result, &list); err != nil {
		t.Fatal(err)
	}
	type flags struct{ ReadOnly, Destructive string }
	show := func(b *bool) string {
		if b == nil {
			return "unset"
		}
		return fmt.Sprint(*b)
	}
	got := map[string]flags{}
	for _, tl := range list.Tools {
		var schema struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" || tl.Title == "" || tl.Description == "" {
			t.Errorf("%s: title %q description %q inputSchema %s", tl.Name, tl.Title, tl.Description, tl.InputSchema)
		}
		if tl.Annotations == nil {
			t.Errorf("%s has no annotations", tl.Name)
			continue
		}
		got[tl.Name] = flags{show(tl.Annotations.ReadOnly), show(tl.Annotations.Destructive)}
		if (tl.Name == "note_list") != (len(tl.OutputSchema) > 0) {
			t.Errorf("%s: outputSchema %s", tl.Name, tl.OutputSchema)
		}
	}
	want := map[string]flags{
		"add":         {"true", "unset"},
		"multiply":    {"true", "unset"},
		"divide":      {"true", "unset"},
		"note_put":    {"false", "false"},
		"note_get":    {"true", "unset"},
		"note_list":   {"true", "unset"},
		"note_delete": {"false", "true"},
		"sleep":       {"true", "unset"},
		"echo":        {"true", "unset"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools and their read-only/destructive hints (-want +got):\n%s", diff)
	}
}

func TestArithmetic(t *testing.T) {
	t.Parallel()
	c := startNotes(t)
	tests := []struct {
		tool    string
		args    any
		want    string
		isError bool
	}{
		{"add", map[string]any{"a": 2, "b": 3}, "5", false},
		{"add", map[string]any{"a": 0.1, "b": 0.2}, "0.30000000000000004", false},
		{"multiply", map[string]any{"a": -4, "b": 2.5}, "-10", false},
		{"divide", map[string]any{"a": 7, "b": 2}, "3.5", false},
		{"divide", map[string]any{"a": 1, "b": 0}, "division by zero: b must not be 0", true},
		{"add", map[string]any{"a": 1}, "both a and b are required numbers", true},
		{"add", map[string]any{"a": "1", "b": 2}, "", true},
		{"add", map[string]any{"a": 1, "b": 2, "c": 3}, "", true},
		{"echo", map[string]any{"z": []any{1, "<&>"}, "a": map[string]any{}}, `{"a":{},"z":[1,"<&>"]}`, false},
	}
	for _, tc := range tests {
		got, isError := call(t, c, tc.tool, tc.args)
		if isError != tc.isError || (tc.want != "" && got != tc.want) {
			t.Errorf("%s %v = %q (isError %v), want %q (isError %v)", tc.tool, tc.args, got, isError, tc.want, tc.isError)
		}
	}
	if _, err := c.CallTool(stdiotest.Context(t), "nope", nil); err == nil {
		t.Error("unknown tool: no JSON-RPC error")
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	c := startNotes(t)
	if got, isErr := call(t, c, "note_get", map[string]any{"key": "k"}); !isErr || !strings.Contains(got, "no note") {
		t.Errorf("note_get on empty store = %q, %v", got, isErr)
	}
	call(t, c, "note_put", map[string]any{"key": "b", "text": "second"})
	call(t, c, "note_put", map[string]any{"key": "a", "text": "first\nline"})
	if got, _ := call(t, c, "note_get", map[string]any{"key": "a"}); got != "first\nline" {
		t.Errorf("note_get a = %q", got)
	}
	if _, isErr := call(t, c, "note_put", map[string]any{"key": "x"}); !isErr {
		t.Error("note_put without text succeeded")
	}

	res, err := c.CallTool(stdiotest.Context(t), "note_list", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"notes":[{"key":"a","text":"first\nline"},{"key":"b","text":"second"}]}`
	if text, _ := res.Text(); string(res.StructuredContent) != want || text != want {
		t.Errorf("note_list = %s / %q, want %s as both", res.StructuredContent, text, want)
	}

	call(t, c, "note_delete", map[string]any{"key": "a"})
	if _, isErr := call(t, c, "note_delete", map[string]any{"key": "a"}); !isErr {
		t.Error("deleting a missing note succeeded")
	}
	if text, _ := call(t, c, "note_list", nil); text != `{"notes":[{"key":"b","text":"second"}]}` {
		t.Errorf("note_list after delete = %s", text)
	}
}

func TestNotesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.json")
	c := startNotes(t, "NOTES_FILE="+path)
	call(t, c, "note_put", map[string]any{"key": "kept", "text": "across restarts"})
	c.CloseStdin()
	if state, err := c.Wait(stdiotest.Context(t)); err != nil || state.ExitCode() != 0 {
		t.Fatalf("exit: %v %v", state, err)
	}

	c2 := startNotes(t, "NOTES_FILE="+path)
	if got, isErr := call(t, c2, "note_get", map[string]any{"key": "kept"}); isErr || got != "across restarts" {
		t.Errorf("after restart: %q, isError %v", got, isErr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk map[string]string
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk["kept"] != "across restarts" {
		t.Errorf("notes file = %s (%v)", b, err)
	}
}

func TestSleepCancellation(t *testing.T) {
	t.Parallel()
	c := startNotes(t)
	if got, _ := call(t, c, "sleep", map[string]any{"ms": 1}); got != "slept 1 ms" {
		t.Errorf("sleep = %q", got)
	}
	id, reply, err := c.Send("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600000}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "user gave up"}); err != nil {
		t.Fatal(err)
	}
	ctx := stdiotest.Context(t)
	for {
		line, err := c.NextStderr(ctx)
		if err != nil {
			t.Fatalf("no log of the dropped response: %v", err)
		}
		if strings.Contains(line, "dropped response to cancelled request") && strings.Contains(line, "id="+string(id)) {
			break
		}
	}
	if got, _ := call(t, c, "add", map[string]any{"a": 1, "b": 1}); got != "2" {
		t.Errorf("add after cancel = %q", got)
	}
	select {
	case m := <-reply:
		t.Fatalf("cancelled sleep was answered: %s", m.Raw)
	default:
	}
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		stop func(*stdiotest.Client) error
	}{
		{"stdin EOF", (*stdiotest.Client).CloseStdin},
		{"SIGTERM", func(c *stdiotest.Client) error { return c.Signal(syscall.SIGTERM) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startNotes(t)
			// A call in flight must not hold the server up.
			if _, _, err := c.Send("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 600000}}); err != nil {
				t.Fatal(err)
			}
			if err := tc.stop(c); err != nil {
				t.Fatal(err)
			}
			state, err := c.Wait(stdiotest.Context(t))
			if err != nil {
				t.Fatal(err)
			}
			if state.ExitCode() != 0 {
				t.Errorf("exit: %v, want code 0", state)
			}
			if _, err := c.Call(stdiotest.Context(t), "ping", nil); !errors.Is(err, stdiotest.ErrEOF) && !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EPIPE) {
				t.Errorf("ping after exit: %v", err)
			}
		})
	}
}
