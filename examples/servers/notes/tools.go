package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

const (
	twoNumbers = `{"type":"object","properties":{"a":{"type":"number","description":"first operand"},"b":{"type":"number","description":"second operand"}},"required":["a","b"],"additionalProperties":false}`
	keyOnly    = `{"type":"object","properties":{"key":{"type":"string","minLength":1,"description":"note key"}},"required":["key"],"additionalProperties":false}`
	keyText    = `{"type":"object","properties":{"key":{"type":"string","minLength":1,"description":"note key"},"text":{"type":"string","description":"note text"}},"required":["key","text"],"additionalProperties":false}`
	noArgs     = `{"type":"object","additionalProperties":false}`
	notesOut   = `{"type":"object","properties":{"notes":{"type":"array","items":{"type":"object","properties":{"key":{"type":"string"},"text":{"type":"string"}},"required":["key","text"],"additionalProperties":false}}},"required":["notes"],"additionalProperties":false}`
)

// pure marks tools that only compute: read-only, idempotent, closed-world.
var pure = &mcpserve.Annotations{
	ReadOnlyHint:   mcpserve.Bool(true),
	IdempotentHint: mcpserve.Bool(true),
	OpenWorldHint:  mcpserve.Bool(false),
}

func tools(s *store) []mcpserve.Tool {
	return []mcpserve.Tool{
		{
			Name: "add", Title: "Add", Description: "Add two numbers and return the sum as text.",
			InputSchema: json.RawMessage(twoNumbers), Annotations: pure,
			Handler: arithmetic(func(a, b float64) (float64, string) { return a + b, "" }),
		},
		{
			Name: "multiply", Title: "Multiply", Description: "Multiply two numbers and return the product as text.",
			InputSchema: json.RawMessage(twoNumbers), Annotations: pure,
			Handler: arithmetic(func(a, b float64) (float64, string) { return a * b, "" }),
		},
		{
			Name: "divide", Title: "Divide", Description: "Divide a by b and return the quotient as text. Dividing by zero is a tool error.",
			InputSchema: json.RawMessage(twoNumbers), Annotations: pure,
			Handler: arithmetic(func(a, b float64) (float64, string) {
				if b == 0 {
					return 0, "division by zero: b must not be 0"
				}
				return a / b, ""
			}),
		},
		{
			Name: "note_put", Title: "Store a note", Description: "Store text under key, replacing any note with that key.",
			InputSchema: json.RawMessage(keyText),
			Annotations: &mcpserve.Annotations{
				ReadOnlyHint: mcpserve.Bool(false), DestructiveHint: mcpserve.Bool(false),
				IdempotentHint: mcpserve.Bool(true), OpenWorldHint: mcpserve.Bool(false),
			},
			Handler: s.putTool,
		},
		{
			Name: "note_get", Title: "Read a note", Description: "Return the text of the note stored under key.",
			InputSchema: json.RawMessage(keyOnly), Annotations: pure,
			Handler: s.getTool,
		},
		{
			Name: "note_list", Title: "List notes", Description: "List every note, sorted by key.",
			InputSchema: json.RawMessage(noArgs), OutputSchema: json.RawMessage(notesOut), Annotations: pure,
			Handler: s.listTool,
		},
		{
			Name: "note_delete", Title: "Delete a note", Description: "Delete the note stored under key.",
			InputSchema: json.RawMessage(keyOnly),
			Annotations: &mcpserve.Annotations{
				ReadOnlyHint: mcpserve.Bool(false), DestructiveHint: mcpserve.Bool(true),
				IdempotentHint: mcpserve.Bool(true), OpenWorldHint: mcpserve.Bool(false),
			},
			Handler: s.deleteTool,
		},
		{
			Name: "sleep", Title: "Sleep", Description: "Wait ms milliseconds, then answer. Cancelling the request stops the wait.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000,"description":"milliseconds to wait"}},"required":["ms"],"additionalProperties":false}`),
			Annotations: pure,
			Handler:     sleep,
		},
		{
			Name: "echo", Title: "Echo", Description: "Return the arguments, whatever they are, as JSON text.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":true}`), Annotations: pure,
			Handler: func(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
				var b bytes.Buffer
				if err := json.Compact(&b, call.Arguments); err != nil {
					return nil, err
				}
				return mcpserve.TextResult(b.String()), nil
			},
		},
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// arithmetic adapts a two-operand function to a tool. Bad input and op's
// failure message become tool errors the model can correct.
func arithmetic(op func(a, b float64) (float64, string)) mcpserve.ToolHandler {
	return func(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
		var args struct {
			A *float64 `json:"a"`
			B *float64 `json:"b"`
		}
		if err := call.Bind(&args); err != nil {
			return mcpserve.ErrorResult("%v", err), nil
		}
		if args.A == nil || args.B == nil {
			return mcpserve.ErrorResult("both a and b are required numbers"), nil
		}
		v, failure := op(*args.A, *args.B)
		if failure != "" {
			return mcpserve.ErrorResult("%s", failure), nil
		}
		return mcpserve.TextResult(formatNumber(v)), nil
	}
}

type keyArgs struct {
	Key  string  `json:"key"`
	Text *string `json:"text,omitempty"`
}

func bindKey(call *mcpserve.ToolCall, wantText bool) (keyArgs, *mcpserve.CallToolResult) {
	var args keyArgs
	if err := call.Bind(&args); err != nil {
		return args, mcpserve.ErrorResult("%v", err)
	}
	if args.Key == "" {
		return args, mcpserve.ErrorResult("key must be a non-empty string")
	}
	if wantText && args.Text == nil {
		return args, mcpserve.ErrorResult("text is required")
	}
	if !wantText && args.Text != nil {
		return args, mcpserve.ErrorResult("unexpected argument text")
	}
	return args, nil
}

func (s *store) putTool(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	args, bad := bindKey(call, true)
	if bad != nil {
		return bad, nil
	}
	if err := s.put(args.Key, *args.Text); err != nil {
		return nil, err
	}
	return mcpserve.TextResult(fmt.Sprintf("stored note %q", args.Key)), nil
}

func (s *store) getTool(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	args, bad := bindKey(call, false)
	if bad != nil {
		return bad, nil
	}
	text, ok := s.get(args.Key)
	if !ok {
		return mcpserve.ErrorResult("no note with key %q", args.Key), nil
	}
	return mcpserve.TextResult(text), nil
}

func (s *store) listTool(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	if err := call.Bind(&struct{}{}); err != nil {
		return mcpserve.ErrorResult("%v", err), nil
	}
	return mcpserve.StructuredResult(map[string]any{"notes": s.list()})
}

func (s *store) deleteTool(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	args, bad := bindKey(call, false)
	if bad != nil {
		return bad, nil
	}
	deleted, err := s.delete(args.Key)
	if err != nil {
		return nil, err
	}
	if !deleted {
		return mcpserve.ErrorResult("no note with key %q", args.Key), nil
	}
	return mcpserve.TextResult(fmt.Sprintf("deleted note %q", args.Key)), nil
}

func sleep(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		MS *int64 `json:"ms"`
	}
	if err := call.Bind(&args); err != nil {
		return mcpserve.ErrorResult("%v", err), nil
	}
	if args.MS == nil || *args.MS < 0 || *args.MS > 600000 {
		return mcpserve.ErrorResult("ms must be an integer from 0 to 600000"), nil
	}
	t := time.NewTimer(time.Duration(*args.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return mcpserve.TextResult(fmt.Sprintf("slept %d ms", *args.MS)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
