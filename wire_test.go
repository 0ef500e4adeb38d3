package mcpvisor_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
)

// keysOf decodes one JSON object into its members, failing the test when b
// is not an object.
func keysOf(t *testing.T, what string, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s is not a JSON object: %v\n%s", what, err, b)
	}
	return m
}

// wantKeys fails the test for each key of want missing from m, and for each
// key of m that is not camelCase (or _meta), as MCP spells its fields.
func wantKeys(t *testing.T, what string, m map[string]json.RawMessage, want ...string) {
	t.Helper()
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks %q: has %v", what, k, slices.Sorted(maps.Keys(m)))
		}
	}
	for k := range m {
		if k != "_meta" && (strings.ContainsRune(k, '_') || k[0] < 'a' || k[0] > 'z') {
			t.Errorf("%s has key %q, not camelCase", what, k)
		}
	}
}

// json.Marshal of the catalog is what a model API takes: MCP's names, and
// schemas as JSON objects (not base64 strings), even with a server whose
// schemas are no JSON Schema objects in the list.
func TestToolsMarshalAsMCP(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, mcptest("m", "-bad-schema"))
	waitReady(t, h, "m")

	b, err := json.Marshal(h.Tools())
	if err != nil {
		t.Fatalf("json.Marshal(h.Tools()): %v", err)
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, b)
	}
	byName := map[string]map[string]json.RawMessage{}
	for i, raw := range tools {
		tl := keysOf(t, "tool", raw)
		wantKeys(t, "tool "+string(tl["name"]), tl, "name", "description", "inputSchema", "destructive", "available")
		var name string
		if err := json.Unmarshal(tl["name"], &name); err != nil || name == "" {
			t.Fatalf("tool %d: name %s", i, tl["name"])
		}
		byName[name] = tl
	}

	echo := byName["mcp__m__echo"]
	if echo == nil {
		t.Fatalf("mcp__m__echo missing from %s", b)
	}
	var schema struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(echo["inputSchema"], &schema); err != nil || schema.Type != "object" {
		t.Errorf("echo's inputSchema is %s, want a JSON object of type object", echo["inputSchema"])
	}
	for k, want := range map[string]string{"server": `"m"`, "tool": `"echo"`, "title": `"Echo"`, "destructive": "false", "available": "true"} {
		if got := string(echo[k]); got != want {
			t.Errorf("echo %s = %s, want %s", k, got, want)
		}
	}
	if ann := keysOf(t, "echo's annotations", echo["annotations"]); string(ann["readOnlyHint"]) != "true" {
		t.Errorf("echo's annotations = %s", echo["annotations"])
	}
	if out := byName["mcp__m__structured"]["outputSchema"]; len(out) == 0 || out[0] != '{' {
		t.Errorf("structured's outputSchema = %s, want a JSON object", out)
	}

	// The server's non-object schemas are listed as it sent them, and said
	// to be wrong, without breaking the rest of the list.
	bad := byName["mcp__m__bad_schema"]
	if bad == nil {
		t.Fatalf("mcp__m__bad_schema missing from %s", b)
	}
	if got := string(bad["inputSchema"]); got != `"not a schema"` {
		t.Errorf("bad_schema's inputSchema = %s", got)
	}
	if st := status(t, h, "m"); !slices.ContainsFunc(st.Warnings, func(w string) bool {
		return strings.Contains(w, `"bad_schema"`) && strings.Contains(w, "not a JSON object")
	}) {
		t.Errorf("no warning about bad_schema's inputSchema: %q", st.Warnings)
	}
}

func TestStatusResultAndEventMarshal(t *testing.T) {
	sink, events := eventSink()
	h := openHost(t, mcpvisor.Options{OnEvent: sink}, mcptest("m"))
	waitReady(t, h, "m")

	b, err := json.Marshal(status(t, h, "m"))
	if err != nil {
		t.Fatal(err)
	}
	st := keysOf(t, "status", b)
	wantKeys(t, "status", st, "name", "transport", "enabled", "state", "since", "restarts", "pid",
		"protocolVersion", "serverInfo", "capabilities", "tools")
	if string(st["state"]) != `"ready"` || string(st["transport"]) != `"stdio"` {
		t.Errorf("status = %s", b)
	}
	if info := keysOf(t, "serverInfo", st["serverInfo"]); string(info["name"]) != `"m"` {
		t.Errorf("serverInfo = %s", st["serverInfo"])
	}
	if _, ok := keysOf(t, "capabilities", st["capabilities"])["tools"]; !ok {
		t.Errorf("capabilities = %s", st["capabilities"])
	}

	res := call(t, h, "mcp__m__structured", `{}`)
	b, err = json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	r := keysOf(t, "result", b)
	wantKeys(t, "result", r, "type", "structuredContent", "isError", "content")
	if string(r["type"]) != `"json"` || string(r["isError"]) != "false" || string(r["structuredContent"]) != `{"x":1}` {
		t.Errorf("result = %s", b)
	}
	if _, ok := r["raw"]; ok {
		t.Errorf("result carries the raw CallToolResult: %s", b)
	}

	ev := waitState(t, events, "m", mcpvisor.StateReady)
	ev.Err = "x" // a state event's error, set here so its key shows
	b, err = json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	e := keysOf(t, "event", b)
	wantKeys(t, "event", e, "time", "server", "kind", "state", "error")
	if string(e["kind"]) != `"state"` || string(e["state"]) != `"ready"` {
		t.Errorf("event = %s", b)
	}
}
