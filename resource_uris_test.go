package mcpvisor_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// appServer is gosdkpeer serving its MCP App, whose interface reads view,
// at the URI every gosdkpeer lists: ui://app/mcp-app.html.
func appServer(t *testing.T, name, view string) mcpvisor.ServerConfig {
	bin, args := peers.GoSDK(t, "dual", "-app", view)
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: bin, Args: args, Enabled: true}
}

// uiRefs reads a tool's MCP Apps references from its _meta as the host
// exposes it (Tool.MCP).
func uiRefs(t *testing.T, meta json.RawMessage) (resourceURI, legacy string) {
	t.Helper()
	var m struct {
		UI struct {
			ResourceURI string `json:"resourceUri"`
		} `json:"ui"`
		Legacy string `json:"ui/resourceUri"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		t.Fatalf("_meta %s: %v", meta, err)
	}
	return m.UI.ResourceURI, m.Legacy
}

// Two servers list the same ui:// URI with different contents: each is
// exposed under its own namespaced URI, the one its tool's _meta names, and
// a read of that URI reaches its server with the server's own URI.
func TestResourceURIsNamespaced(t *testing.T) {
	h := openHost(t, mcpvisor.Options{}, appServer(t, "one", "view of one"), appServer(t, "two", "view of two"))
	waitReady(t, h, "one", "two")
	ctx := featureCtx(t)

	for _, server := range []string{"one", "two"} {
		t.Run(server, func(t *testing.T) {
			want := "ui://" + server + "/app/mcp-app.html"
			i := slices.IndexFunc(h.Tools(), func(tl mcpvisor.Tool) bool { return tl.Server == server && tl.Tool == "show" })
			if i < 0 {
				t.Fatalf("no tool show of %s", server)
			}
			tool := h.Tools()[i]
			if uri, legacy := uiRefs(t, tool.MCP().Meta); uri != want || legacy != want {
				t.Errorf("show's _meta names %q and %q, want %q", uri, legacy, want)
			}
			if uri, _ := uiRefs(t, tool.Meta); uri != "ui://app/mcp-app.html" {
				t.Errorf("Tool.Meta names %q: it should stay the server's", uri)
			}

			resources, err := h.Resources(ctx, server)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, r := range resources {
				uris = append(uris, r.URI)
			}
			// peer://static and peer://app/<view>: another scheme, as the
			// server has it.
			for _, u := range []string{want, "peer://static", "peer://app/view of " + server} {
				if !slices.Contains(uris, u) {
					t.Errorf("Resources = %q, lacks %q", uris, u)
				}
			}
			if slices.Contains(uris, "ui://app/mcp-app.html") {
				t.Errorf("Resources = %q: the server's own ui:// URI is exposed", uris)
			}

			// The URI the tool names reads the server's own interface, by
			// the URI alone and with the server.
			for _, as := range []string{"", server} {
				cs, err := h.ReadResource(ctx, as, want)
				if err != nil {
					t.Fatalf("ReadResource(%q, %q): %v", as, want, err)
				}
				if len(cs) != 1 || cs[0].Text != "view of "+server || cs[0].URI != want {
					t.Errorf("ReadResource(%q, %q) = %+v, want the text %q at %s", as, want, cs, "view of "+server, want)
				}
			}

			templates, err := h.ResourceTemplates(ctx, server)
			if err != nil {
				t.Fatal(err)
			}
			page := "ui://" + server + "/app/pages/{page}"
			if !slices.ContainsFunc(templates, func(tp mcpvisor.ResourceTemplate) bool { return tp.URITemplate == page }) {
				t.Errorf("ResourceTemplates = %+v, lack %s", templates, page)
			}
			cs, err := h.ReadResource(ctx, "", "ui://"+server+"/app/pages/7")
			if err != nil || len(cs) != 1 || cs[0].Text != "view of "+server+" page 7" || cs[0].URI != "ui://"+server+"/app/pages/7" {
				t.Errorf("ReadResource(a page) = %+v, %v", cs, err)
			}

			// Another scheme: the server's own URI, or the qualified one a
			// merged listing gives when two servers list it.
			cs, err = h.ReadResource(ctx, server, "peer://app/view of "+server)
			if err != nil || len(cs) != 1 || cs[0].Text != "view of "+server {
				t.Errorf("ReadResource(peer://app/…) = %+v, %v", cs, err)
			}
			qualified := mcpvisor.QualifiedResourceURI(server, "peer://static")
			cs, err = h.ReadResource(ctx, "", qualified)
			if err != nil || len(cs) != 1 || cs[0].Text != "static" || cs[0].URI != qualified {
				t.Errorf("ReadResource(%s) = %+v, %v", qualified, cs, err)
			}
		})
	}

	if _, err := h.ReadResource(ctx, "", "peer://static"); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("ReadResource without a server of a URI that names none: %v, want ErrUnknownServer", err)
	}
	if _, err := h.ReadResource(ctx, "", "ui://three/app/mcp-app.html"); !errors.Is(err, mcpvisor.ErrUnknownServer) {
		t.Errorf("ReadResource of a namespaced URI of no server: %v, want ErrUnknownServer", err)
	}
}

// A subscription by the namespaced URI is made with the server's own; its
// updates come from that server alone, with the own URI that ResourceURI
// turns into the one subscribed to.
func TestResourceURIsSubscribe(t *testing.T) {
	updates := make(chan mcpvisor.Event, 16)
	h := openHost(t, mcpvisor.Options{OnEvent: func(ev mcpvisor.Event) {
		if ev.Method == protocol.MethodResourcesUpdated {
			updates <- ev
		}
	}}, appServer(t, "one", "view of one"), appServer(t, "two", "view of two"))
	waitReady(t, h, "one", "two")
	ctx := featureCtx(t)

	const uri = "ui://two/app/mcp-app.html"
	if err := h.SubscribeResource(ctx, "", uri); err != nil {
		t.Fatalf("SubscribeResource: %v", err)
	}
	// one is not subscribed: its touch sends nothing (the SDK notifies
	// subscribed sessions only), so the first update must be two's.
	for _, tool := range []string{"mcp__one__touch", "mcp__two__touch"} {
		if _, err := h.Call(ctx, tool, nil); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	select {
	case ev := <-updates:
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(ev.Params, &p); err != nil {
			t.Fatal(err)
		}
		if ev.Server != "two" || p.URI != "ui://app/mcp-app.html" || mcpvisor.ResourceURI(ev.Server, p.URI) != uri {
			t.Errorf("update from %q of %q, want two's ui://app/mcp-app.html", ev.Server, p.URI)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/resources/updated")
	}
	if err := h.UnsubscribeResource(ctx, "", uri); err != nil {
		t.Errorf("UnsubscribeResource: %v", err)
	}
}
