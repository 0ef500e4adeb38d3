package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

// The tools here drive the client's side of MCP: elicitation, sampling,
// roots, progress and tasks.

const (
	defaultAskSchema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`
	loginSchema      = `{"type":"object","properties":{"password":{"type":"string","format":"password","title":"Password"}},"required":["password"]}`
	loginMessage     = "Password for mcptest"
	defaultAskText   = "mcptest asks"
)

func featureTools() []mcpserve.Tool {
	return []mcpserve.Tool{
		{
			Name: "ask", Title: "Ask the user",
			Description: `Send elicitation/create (form: message and requestedSchema, default one required string "answer"; url: mode, message, url and a random elicitationId) and return the answer as structured content, exactly as given. In url mode, an accepted answer is followed by notifications/elicitation/complete for that id.`,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"},"schema":{"type":"object"},"mode":{"type":"string","enum":["form","url"]},"url":{"type":"string"}},"additionalProperties":false}`),
			Handler:     ask,
		},
		{
			Name: "login", Title: "Log in",
			Description: `Elicit a password and answer "login ok" if its SHA-256 (hex) is expect_sha256, else "login failed" ("login declined", "login cancelled" for those actions). The password is never written anywhere.`,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"expect_sha256":{"type":"string"}},"required":["expect_sha256"],"additionalProperties":false}`),
			Handler:     login,
		},
		{
			Name: "progress", Title: "Progress",
			Description: `Send steps notifications/progress ("step i of N") delay_ms apart (default 10), then answer "done after N steps".`,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer","minimum":0},"delay_ms":{"type":"integer","minimum":0}},"required":["steps"],"additionalProperties":false}`),
			Handler:     progress,
		},
		{
			Name: "sleep_task", Title: "Sleep as a task",
			Description: `Run as a task (required) that ends ms milliseconds after its creation with "slept <ms> ms", or fails with "failed on purpose" if fail; with steps, it reports that many notifications/progress evenly on the way (to a caller that gave a progressToken). It survives a restart with -task-state.`,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0},"fail":{"type":"boolean"},"steps":{"type":"integer","minimum":0}},"required":["ms"],"additionalProperties":false}`),
			TaskSupport: mcpserve.TaskSupportRequired,
			Resumable:   true,
			Handler:     sleepTask,
		},
		{
			Name: "need_url", Title: "Need a URL elicitation",
			Description: "Answer with the JSON-RPC error -32042 (URL elicitation required) listing one URL elicitation.",
			InputSchema: json.RawMessage(noArgs),
			Handler:     needURL,
		},
		{
			Name: "sample", Title: "Sample",
			Description: "Send sampling/createMessage with prompt as the user message (maxTokens 50) and return the answer's text; structured content has text and model.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"],"additionalProperties":false}`),
			Handler:     sample,
		},
		{
			Name: "roots", Title: "Roots",
			Description: "Send roots/list and return the client's answer as structured content.",
			InputSchema: json.RawMessage(noArgs),
			Handler:     roots,
		},
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clientError turns the client's JSON-RPC error answer into a tool error
// result; other errors (cancellation, shutdown) are returned as they are.
func clientError(method string, err error) (*mcpserve.CallToolResult, error) {
	var rpcErr *mcpserve.Error
	if errors.As(err, &rpcErr) {
		return mcpserve.ErrorResult("%s: %s", method, rpcErr.Error()), nil
	}
	return nil, err
}

func ask(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Message string          `json:"message"`
		Schema  json.RawMessage `json:"schema"`
		Mode    string          `json:"mode"`
		URL     string          `json:"url"`
	}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	if args.Message == "" {
		args.Message = defaultAskText
	}
	var params any
	var urlID string
	switch args.Mode {
	case "", "form":
		schema := args.Schema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(defaultAskSchema)
		}
		params = map[string]any{"message": args.Message, "requestedSchema": schema}
	case "url":
		if args.URL == "" {
			return mcpserve.ErrorResult("url mode needs a url"), nil
		}
		urlID = randomHex(8)
		params = map[string]any{"mode": "url", "message": args.Message, "url": args.URL, "elicitationId": urlID}
	default:
		return mcpserve.ErrorResult("mode must be form or url, not %q", args.Mode), nil
	}
	res, err := call.Call(ctx, "elicitation/create", params)
	if err != nil {
		return clientError("elicitation/create", err)
	}
	var answer struct {
		Action string `json:"action"`
	}
	if urlID != "" && json.Unmarshal(res, &answer) == nil && answer.Action == "accept" {
		// The interaction at the URL is done (here: at once).
		if err := call.Server.Notify("notifications/elicitation/complete", map[string]string{"elicitationId": urlID}); err != nil {
			return nil, err
		}
	}
	return mcpserve.StructuredResult(res)
}

// login elicits a password and compares its hash. The password must never
// reach a log, stderr or the result: errors here name no values.
func login(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		ExpectSHA256 string `json:"expect_sha256"`
	}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	raw, err := call.Call(ctx, "elicitation/create", map[string]any{
		"message":         loginMessage,
		"requestedSchema": json.RawMessage(loginSchema),
	})
	if err != nil {
		return clientError("elicitation/create", err)
	}
	var answer struct {
		Action  string `json:"action"`
		Content struct {
			Password *string `json:"password"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &answer) != nil {
		return mcpserve.ErrorResult("login: malformed elicitation result"), nil
	}
	switch answer.Action {
	case "decline":
		return mcpserve.TextResult("login declined"), nil
	case "cancel":
		return mcpserve.TextResult("login cancelled"), nil
	case "accept":
		if answer.Content.Password != nil {
			sum := sha256.Sum256([]byte(*answer.Content.Password))
			got := hex.EncodeToString(sum[:])
			if subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(args.ExpectSHA256))) == 1 {
				return mcpserve.TextResult("login ok"), nil
			}
		}
	}
	return mcpserve.TextResult("login failed"), nil
}

func progress(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	args := struct {
		Steps   *int `json:"steps"`
		DelayMS *int `json:"delay_ms"`
	}{}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	if args.Steps == nil || *args.Steps < 0 {
		return mcpserve.ErrorResult("steps must be a non-negative integer"), nil
	}
	delay := 10 * time.Millisecond
	if args.DelayMS != nil {
		if *args.DelayMS < 0 {
			return mcpserve.ErrorResult("delay_ms must be a non-negative integer"), nil
		}
		delay = time.Duration(*args.DelayMS) * time.Millisecond
	}
	n := *args.Steps
	total := float64(n)
	for i := 1; i <= n; i++ {
		if i > 1 {
			if err := sleepCtx(ctx, delay); err != nil {
				return nil, err
			}
		}
		if err := call.Progress(float64(i), &total, fmt.Sprintf("step %d of %d", i, n)); err != nil {
			return nil, err
		}
	}
	return mcpserve.TextResult(fmt.Sprintf("done after %d steps", n)), nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sleepTask ends ms after its task's creation: its outcome depends only on
// its arguments and TaskCreatedAt, so a server restarted on the same
// -task-state directory finishes it exactly as the first would have.
func sleepTask(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		MS    *int64 `json:"ms"`
		Fail  bool   `json:"fail"`
		Steps int    `json:"steps"`
	}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	if args.MS == nil || *args.MS < 0 {
		return mcpserve.ErrorResult("ms must be a non-negative integer"), nil
	}
	start := call.TaskCreatedAt
	if start.IsZero() {
		start = time.Now()
	}
	total := float64(args.Steps)
	for i := 1; i <= args.Steps; i++ {
		at := start.Add(time.Duration(*args.MS) * time.Millisecond * time.Duration(i) / time.Duration(args.Steps+1))
		if err := sleepCtx(ctx, time.Until(at)); err != nil {
			return nil, err
		}
		if err := call.Progress(float64(i), &total, fmt.Sprintf("step %d of %d", i, args.Steps)); err != nil {
			return nil, err
		}
	}
	if err := sleepCtx(ctx, time.Until(start.Add(time.Duration(*args.MS)*time.Millisecond))); err != nil {
		return nil, err
	}
	if args.Fail {
		return mcpserve.ErrorResult("failed on purpose"), nil
	}
	return mcpserve.TextResult(fmt.Sprintf("slept %d ms", *args.MS)), nil
}

// needURLError is the -32042 answer of need_url.
var needURLError = &mcpserve.Error{
	Code:    -32042,
	Message: "URL elicitation required",
	Data: map[string]any{"elicitations": []any{map[string]any{
		"mode":          "url",
		"message":       "Authorize mcptest",
		"url":           "https://example.com/authorize?x=1",
		"elicitationId": "el-1",
	}}},
}

func needURL(context.Context, *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	return nil, needURLError
}

func sample(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := call.Bind(&args); err != nil {
		return nil, err
	}
	raw, err := call.Call(ctx, "sampling/createMessage", map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": args.Prompt}}},
		"maxTokens": 50,
	})
	if err != nil {
		return clientError("sampling/createMessage", err)
	}
	var answer struct {
		Content json.RawMessage `json:"content"`
		Model   string          `json:"model"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return mcpserve.ErrorResult("sampling/createMessage: malformed result: %v", err), nil
	}
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var blocks []block
	if c := bytes.TrimSpace(answer.Content); len(c) > 0 && c[0] == '[' {
		_ = json.Unmarshal(c, &blocks)
	} else {
		var b block
		_ = json.Unmarshal(c, &b)
		blocks = []block{b}
	}
	text := ""
	for _, b := range blocks {
		if b.Type == "text" {
			text = b.Text
			break
		}
	}
	return &mcpserve.CallToolResult{
		Content:           []any{mcpserve.Text(text)},
		StructuredContent: map[string]any{"text": text, "model": answer.Model},
	}, nil
}

func roots(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	raw, err := call.Call(ctx, "roots/list", nil)
	if err != nil {
		return clientError("roots/list", err)
	}
	return mcpserve.StructuredResult(raw)
}
