package gateway_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// withEverything adds server-everything, the reference server, as
// "everything": it has resources, templates, prompts and subscriptions;
// mcptest's "a" and "b" have none.
func withEverything(t *testing.T) func(*mcpvisor.Options) {
	node, args := peers.Everything(t)
	return func(o *mcpvisor.Options) {
		o.Config.Servers = append(o.Config.Servers, mcpvisor.ServerConfig{Name: "everything", Type: "stdio", Command: node, Args: args, Enabled: true})
	}
}

func TestStdioResourcesAndPrompts(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withEverything(t))
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", initParams))
	init := decode[struct {
		Capabilities struct {
			Resources *struct {
				Subscribe   bool `json:"subscribe"`
				ListChanged bool `json:"listChanged"`
			} `json:"resources"`
			Prompts *struct{} `json:"prompts"`
			Logging *struct{} `json:"logging"`
		} `json:"capabilities"`
	}](t, c.await(1, nil).Result)
	if caps := init.Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil || caps.Logging == nil {
		t.Fatalf("capabilities %+v", caps)
	}

	type resourceList struct {
		Resources []struct {
			URI      string `json:"uri"`
			Name     string `json:"name"`
			MimeType string `json:"mimeType"`
		} `json:"resources"`
		NextCursor *string `json:"nextCursor"`
	}
	// Nothing active, nothing listed.
	c.send(request(2, "resources/list", ""))
	if l := decode[resourceList](t, c.await(2, nil).Result); len(l.Resources) != 0 {
		t.Fatalf("resources before activation: %+v", l.Resources)
	}
	c.send(request(3, "tools/call", `{"name":"activate_tools","arguments":{"groups":["everything","a"]}}`))
	c.await(3, skipListChanged(t))

	c.send(request(4, "resources/list", ""))
	l := decode[resourceList](t, c.await(4, skipListChanged(t)).Result)
	const features = "demo://resource/static/document/features.md"
	i := slices.IndexFunc(l.Resources, func(r struct {
		URI      string `json:"uri"`
		Name     string `json:"name"`
		MimeType string `json:"mimeType"`
	}) bool {
		return r.URI == features
	})
	if i < 0 || l.Resources[i].MimeType != "text/markdown" || l.NextCursor != nil {
		t.Fatalf("resources/list: %d resources, features.md at %d, cursor %v", len(l.Resources), i, l.NextCursor)
	}

	// URIs pass through unchanged, and reads reach their server.
	c.send(request(5, "resources/read", `{"uri":"`+features+`"}`))
	read := decode[struct {
		Contents []struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
		} `json:"contents"`
	}](t, c.await(5, skipListChanged(t)).Result)
	if len(read.Contents) != 1 || read.Contents[0].URI != features || read.Contents[0].Text == "" {
		t.Fatalf("resources/read: %+v", read.Contents)
	}
	c.send(request(6, "resources/read", `{"uri":"demo://nope"}`))
	if e := c.await(6, skipListChanged(t)).Error; e == nil || e.Code != -32002 {
		t.Fatalf("unknown resource: %+v", e)
	}
	c.send(request(7, "resources/templates/list", ""))
	if tl := decode[struct {
		Templates []struct {
			URITemplate string `json:"uriTemplate"`
		} `json:"resourceTemplates"`
	}](t, c.await(7, skipListChanged(t)).Result); len(tl.Templates) == 0 || !strings.HasPrefix(tl.Templates[0].URITemplate, "demo://") {
		t.Fatalf("templates: %+v", tl.Templates)
	}

	// Prompts are namespaced like tools.
	c.send(request(8, "prompts/list", ""))
	pl := decode[struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}](t, c.await(8, skipListChanged(t)).Result)
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "mcp__everything__args-prompt") || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "mcp__everything__") }) {
		t.Fatalf("prompts: %v", names)
	}
	c.send(request(9, "prompts/get", `{"name":"mcp__everything__args-prompt","arguments":{"city":"Paris","state":"TX"}}`))
	pg := decode[struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}](t, c.await(9, skipListChanged(t)).Result)
	if len(pg.Messages) != 1 || pg.Messages[0].Content.Text != "What's weather in Paris, TX?" {
		t.Fatalf("prompts/get: %+v", pg.Messages)
	}
	for id, name := range map[int]string{10: "mcp__a__nothing", 11: "args-prompt", 12: "mcp__b__args-prompt"} {
		c.send(request(id, "prompts/get", `{"name":"`+name+`"}`))
		if e := c.await(id, skipListChanged(t)).Error; e == nil || e.Code != -32602 {
			t.Fatalf("prompts/get %s: %+v", name, e)
		}
	}
	// The server's own error passes through: a required argument missing.
	c.send(request(13, "prompts/get", `{"name":"mcp__everything__args-prompt"}`))
	if e := c.await(13, skipListChanged(t)).Error; e == nil || e.Code != -32602 {
		t.Fatalf("prompts/get without arguments: %+v", e)
	}

	c.send(request(14, "logging/setLevel", `{"level":"info"}`))
	if r := c.await(14, skipListChanged(t)); r.Error != nil {
		t.Fatalf("logging/setLevel: %+v", r.Error)
	}
	c.send(request(15, "logging/setLevel", `{"level":"loud"}`))
	if e := c.await(15, skipListChanged(t)).Error; e == nil || e.Code != -32602 {
		t.Fatalf("logging/setLevel loud: %+v", e)
	}
}

// A subscription made through the gateway brings the server's
// notifications/resources/updated to the client that holds it.
func TestStdioResourceSubscription(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withEverything(t))
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", initParams))
	c.await(1, nil)
	c.send(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["everything"]}}`))
	c.await(2, skipListChanged(t))
	const uri = "demo://resource/dynamic/text/1"
	c.send(request(3, "resources/subscribe", `{"uri":"`+uri+`"}`))
	if r := c.await(3, skipListChanged(t)); r.Error != nil {
		t.Fatalf("subscribe: %+v", r.Error)
	}
	// server-everything sends the updates of subscribed URIs once when
	// toggle-subscriber-updates turns them on, and every 5 s after.
	c.send(request(4, "tools/call", `{"name":"mcp__everything__toggle-subscriber-updates","arguments":{}}`))
	var updated []string
	onUpdate := func(fr frame) {
		switch fr.Method {
		case "notifications/tools/list_changed":
		case "notifications/resources/updated":
			updated = append(updated, decode[struct {
				URI string `json:"uri"`
			}](t, fr.Params).URI)
		default:
			t.Errorf("unexpected frame %+v", fr)
		}
	}
	c.await(4, onUpdate)
	deadline := time.After(waitFor)
	for len(updated) == 0 {
		select {
		case fr := <-c.frames:
			onUpdate(fr)
		case <-deadline:
			t.Fatal("no notifications/resources/updated")
		}
	}
	if updated[0] != uri {
		t.Fatalf("updated %v, want %s", updated, uri)
	}
	c.send(request(5, "resources/unsubscribe", `{"uri":"`+uri+`"}`))
	c.await(5, onUpdate)
	c.send(request(6, "tools/call", `{"name":"mcp__everything__toggle-subscriber-updates","arguments":{}}`))
	c.await(6, onUpdate)

	// Unknown URIs and sessions without the server are refused.
	c.send(request(7, "resources/subscribe", `{}`))
	if e := c.await(7, onUpdate).Error; e == nil || e.Code != -32602 {
		t.Fatalf("subscribe without uri: %+v", e)
	}

}
