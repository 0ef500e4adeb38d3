package gateway_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// modelToolName is what model APIs accept as a tool name.
var modelToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// oddNames are tool names model APIs refuse, two of them colliding once
// mapped; mcptest lists each and answers "called <name>".
var oddNames = []string{"get weather", "files/read", "x.y", strings.Repeat("long", 25), "a.b", "a/b"}

func oddServer(name string, prefix bool) mcpvisor.ServerConfig {
	args := []string{"-name", name}
	for _, n := range oddNames {
		args = append(args, "-tool-name", n)
	}
	sc := mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin.mcptest, Args: args, Enabled: true}
	if !prefix {
		sc.Prefix = &prefix
	}
	return sc
}

// A legacy client over HTTP and a modern one list the tools under names
// models accept, call each by it, and the server is called by its own.
func TestGatewayToolNamesModelsAccept(t *testing.T) {
	servers := []mcpvisor.ServerConfig{oddServer("odd", true), oddServer("bare", false)}
	f := fixtureOf(t, gateway.Options{}, servers, func(o *mcpvisor.Options) { o.AlwaysOn = []string{"odd", "bare"} })
	c := newHTTP(t, f)
	c.initialize()
	listed := toolNames(t, c.rpc(2, "tools/list", ""))
	want := map[string]string{} // exposed → own, as the host lists them
	for _, tl := range f.h.Tools() {
		if slices.Contains(oddNames, tl.Tool) {
			want[tl.Name] = tl.Tool
		}
	}
	if len(want) != 2*len(oddNames) {
		t.Fatalf("the host lists %d of the odd tools, want %d: %v", len(want), 2*len(oddNames), want)
	}
	id := 3
	for name, own := range want {
		if !modelToolName.MatchString(name) {
			t.Errorf("tool %q listed as %q, which models refuse", own, name)
		}
		if !slices.Contains(listed, name) {
			t.Errorf("tools/list lacks %q (%q): %v", name, own, listed)
		}
		args, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{}})
		res := c.rpc(id, "tools/call", string(args))
		id++
		if r := decode[callResult](t, res.Result); res.Error != nil || r.IsError || r.text() != "called "+own {
			t.Errorf("tools/call %q: %+v %s; want the server called as %q", name, res.Error, res.Result, own)
		}
	}
	for _, name := range listed {
		if !modelToolName.MatchString(name) {
			t.Errorf("tools/list has %q, which models refuse", name)
		}
	}

	// A modern request names the tool in its Mcp-Name header too.
	_, url := modernGateway(t, gateway.Options{}, oddServer("m", true))
	mc := &modernClient{t: t, urls: []string{url}}
	var tl struct {
		Tools []struct {
			Name  string `json:"name"`
			Title string `json:"title"`
		} `json:"tools"`
	}
	mc.send("tools/list", `{}`, nil).result(t, &tl)
	var mapped, title string
	for _, tool := range tl.Tools {
		if strings.HasPrefix(tool.Name, "mcp__m__get_weather") {
			mapped, title = tool.Name, tool.Title
		}
	}
	// The server's own name is the title people see.
	if mapped != "mcp__m__get_weather" || title != "get weather" {
		t.Fatalf("modern tools/list: get weather listed as %q, title %q", mapped, title)
	}
	var r callResult
	mc.send("tools/call", `{"name":"mcp__m__get_weather","arguments":{}}`, nil).result(t, &r)
	if r.IsError || r.text() != "called get weather" {
		t.Errorf("modern tools/call: %+v", r)
	}
}
