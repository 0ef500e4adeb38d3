package gateway_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// appServers are two gosdkpeers serving their MCP Apps: both list
// ui://app/mcp-app.html and peer://static, each with its own contents, and
// each peer://app/<its view>, which the other does not list.
func appServers(t *testing.T) []mcpvisor.ServerConfig {
	var out []mcpvisor.ServerConfig
	for _, name := range []string{"one", "two"} {
		bin, args := peers.GoSDK(t, "dual", "-app", "view of "+name)
		out = append(out, mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin, Args: args, Enabled: true})
	}
	return out
}

type readResult struct {
	Contents []struct {
		URI  string `json:"uri"`
		Text string `json:"text"`
	} `json:"contents"`
}

// Through Streamable HTTP, two servers' same ui:// URI is two URIs: each
// tool's _meta names its own server's, resources/list lists both, and a read
// of each (or a subscription) reaches its server. A URI of another scheme
// that both list is qualified; one that only one lists is unchanged.
func TestHTTPResourceURIsNamespaced(t *testing.T) {
	f := fixtureOf(t, gateway.Options{}, appServers(t))
	c := newHTTP(t, f)
	c.initialize()
	if act := c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["one","two"]}}`); decode[callResult](t, act.Result).IsError {
		t.Fatalf("activate_tools: %s", act.Result)
	}

	tools := decode[struct {
		Tools []struct {
			Name string `json:"name"`
			Meta struct {
				UI struct {
					ResourceURI string `json:"resourceUri"`
				} `json:"ui"`
				Legacy string `json:"ui/resourceUri"`
			} `json:"_meta"`
		} `json:"tools"`
	}](t, c.rpc(3, "tools/list", "").Result).Tools
	views := map[string]string{} // server → the URI its show tool names
	for _, tl := range tools {
		for _, server := range []string{"one", "two"} {
			if tl.Name == "mcp__"+server+"__show" {
				if tl.Meta.UI.ResourceURI != tl.Meta.Legacy {
					t.Errorf("%s: _meta.ui.resourceUri %q, ui/resourceUri %q", tl.Name, tl.Meta.UI.ResourceURI, tl.Meta.Legacy)
				}
				views[server] = tl.Meta.UI.ResourceURI
			}
		}
	}
	if views["one"] != "ui://one/app/mcp-app.html" || views["two"] != "ui://two/app/mcp-app.html" {
		t.Fatalf("the show tools name %v, want each its server's ui://<server>/app/mcp-app.html", views)
	}

	listed := decode[struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}](t, c.rpc(4, "resources/list", "").Result).Resources
	var uris []string
	for _, r := range listed {
		uris = append(uris, r.URI)
	}
	for _, want := range []string{
		views["one"], views["two"],
		"mcpvisor://one/peer://static", "mcpvisor://two/peer://static",
		"peer://app/view of one", "peer://app/view of two",
	} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources/list = %q, lacks %q", uris, want)
		}
	}
	for _, bare := range []string{"ui://app/mcp-app.html", "peer://static"} {
		if slices.Contains(uris, bare) {
			t.Errorf("resources/list = %q: %q, which both servers list, is listed as it is", uris, bare)
		}
	}

	read := func(id int, uri string) readResult {
		t.Helper()
		r := c.rpc(id, "resources/read", `{"uri":"`+uri+`"}`)
		if r.Error != nil {
			t.Fatalf("resources/read %s: %+v", uri, r.Error)
		}
		return decode[readResult](t, r.Result)
	}
	for i, tc := range []struct{ uri, text string }{
		{views["one"], "view of one"},
		{views["two"], "view of two"},
		{"ui://two/app/pages/3", "view of two page 3"},
		{"mcpvisor://one/peer://static", "static"},
		{"peer://app/view of two", "view of two"},
	} {
		if got := read(10+i, tc.uri); len(got.Contents) != 1 || got.Contents[0].Text != tc.text || got.Contents[0].URI != tc.uri {
			t.Errorf("resources/read %s = %+v, want %q at the URI read", tc.uri, got.Contents, tc.text)
		}
	}
	if e := c.rpc(20, "resources/read", `{"uri":"ui://three/app/mcp-app.html"}`).Error; e == nil || e.Code != -32002 {
		t.Errorf("resources/read of no server's namespaced URI: %+v, want -32002", e)
	}

	templates := decode[struct {
		Templates []struct {
			URITemplate string `json:"uriTemplate"`
		} `json:"resourceTemplates"`
	}](t, c.rpc(21, "resources/templates/list", "").Result).Templates
	var tpls []string
	for _, tp := range templates {
		tpls = append(tpls, tp.URITemplate)
	}
	if !slices.Contains(tpls, "ui://one/app/pages/{page}") || !slices.Contains(tpls, "ui://two/app/pages/{page}") {
		t.Errorf("resources/templates/list = %q", tpls)
	}

	// A subscription to two's interface: one's touch (unsubscribed) sends
	// nothing, so the first update on the stream is two's, under the URI
	// subscribed to.
	get := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: status %d", get.StatusCode)
	}
	stream := sseEvents(get.Body)
	if r := c.rpc(22, "resources/subscribe", `{"uri":"`+views["two"]+`"}`); r.Error != nil {
		t.Fatalf("resources/subscribe: %+v", r.Error)
	}
	for i, tool := range []string{"mcp__one__touch", "mcp__two__touch"} {
		if r := c.rpc(23+i, "tools/call", `{"name":"`+tool+`","arguments":{}}`); decode[callResult](t, r.Result).IsError {
			t.Fatalf("%s: %s", tool, r.Result)
		}
	}
	for {
		n := next(t, stream, "notifications/resources/updated")
		if n.Method == "notifications/tools/list_changed" {
			continue
		}
		if u := decode[struct {
			URI string `json:"uri"`
		}](t, n.Params); n.Method != "notifications/resources/updated" || u.URI != views["two"] {
			t.Fatalf("GET stream carried %s %s, want resources/updated of %s", n.Method, n.Params, views["two"])
		}
		break
	}
	if r := c.rpc(25, "resources/unsubscribe", `{"uri":"`+views["two"]+`"}`); r.Error != nil {
		t.Fatalf("resources/unsubscribe: %+v", r.Error)
	}
}
