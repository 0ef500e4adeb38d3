package modelapi_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/hosttest"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
	"github.com/mcpvisor/mcpvisor/modelapi"
)

var mcptestBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &mcptestBin})
}

// modelToolName is the strictest of the APIs' tool names (Gemini's: a
// letter or "_" first).
var modelToolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// A real server's tools, its odd names among them, go to each API under
// names it takes, and a call by the name the model was given reaches the
// tool; its result goes back as each API's message.
func TestHostToolsToModelAPIs(t *testing.T) {
	args := []string{"-name", "odd"}
	for _, n := range []string{"get weather", "files/read", strings.Repeat("long", 25)} {
		args = append(args, "-tool-name", n)
	}
	h := hosttest.Open(t, mcpvisor.Options{}, mcpvisor.ServerConfig{Name: "odd", Type: "stdio", Command: mcptestBin, Args: args, Enabled: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	tools := h.Tools()
	anthropic, openai, gemini := modelapi.Anthropic(tools), modelapi.OpenAI(tools), modelapi.Gemini(tools)
	var echo string
	for i, at := range anthropic {
		if !modelToolName.MatchString(at.Name) || openai[i].Function.Name != at.Name || gemini.FunctionDeclarations[i].Name != at.Name {
			t.Errorf("tool %s given as %q, %q, %q", tools[i].Name, at.Name, openai[i].Function.Name, gemini.FunctionDeclarations[i].Name)
		}
		var schema struct{ Type string }
		if err := json.Unmarshal(at.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("tool %s: input schema %s is not an object schema", at.Name, at.InputSchema)
		}
		if tools[i].Tool == "echo" {
			echo = at.Name
		}
	}
	if echo == "" {
		t.Fatalf("no echo among %d tools", len(tools))
	}
	res, err := h.Call(ctx, echo, json.RawMessage(`{"said":"from the model"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(modelapi.AnthropicResult("tu_1", res, nil))
	if !strings.Contains(string(b), "from the model") || strings.Contains(string(b), `"is_error"`) {
		t.Errorf("the result for Anthropic: %s", b)
	}
	_, err = h.Call(ctx, "mcp__odd__nope", json.RawMessage(`{}`))
	if m := modelapi.OpenAIResult("call_1", nil, err); err == nil || m.Content != err.Error() {
		t.Errorf("a failed call for OpenAI: %+v (%v)", m, err)
	}
}
