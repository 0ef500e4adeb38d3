package actors

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResourceURIs(t *testing.T) {
	tests := []struct {
		server, uri          string
		exposed, qualified   string
		splitServer, splitTo string // what SplitResourceURI(qualified) gives
	}{
		{"weather", "ui://get-time/mcp-app.html", "ui://weather/get-time/mcp-app.html", "ui://weather/get-time/mcp-app.html", "weather", "ui://get-time/mcp-app.html"},
		{"a-1", "UI://x", "UI://a-1/x", "UI://a-1/x", "a-1", "UI://x"},
		{"s", "ui://", "ui://s/", "ui://s/", "s", "ui://"},
		{"fs1", "file:///tmp/a", "file:///tmp/a", "mcpvisor://fs1/file:///tmp/a", "fs1", "file:///tmp/a"},
		{"ev", "demo://resource/static/x?y=1#z", "demo://resource/static/x?y=1#z", "mcpvisor://ev/demo://resource/static/x?y=1#z", "ev", "demo://resource/static/x?y=1#z"},
		{"", "ui://host/x", "ui://host/x", "ui://host/x", "host", "ui://x"},
	}
	for _, tt := range tests {
		if got := ExposedResourceURI(tt.server, tt.uri); got != tt.exposed {
			t.Errorf("ExposedResourceURI(%q, %q) = %q, want %q", tt.server, tt.uri, got, tt.exposed)
		}
		if got := QualifiedResourceURI(tt.server, tt.uri); got != tt.qualified {
			t.Errorf("QualifiedResourceURI(%q, %q) = %q, want %q", tt.server, tt.uri, got, tt.qualified)
		}
		server, own, ok := SplitResourceURI(tt.qualified)
		if !ok || server != tt.splitServer || own != tt.splitTo {
			t.Errorf("SplitResourceURI(%q) = %q, %q, %v, want %q, %q", tt.qualified, server, own, ok, tt.splitServer, tt.splitTo)
		}
	}
	for _, uri := range []string{"file:///tmp/a", "ui://no-slash", "ui://a.b/x", "ui://a__b/x", "ui:///x", "mcpvisor://s/", "mcpvisor://s", "https://example.com/x"} {
		if s, own, ok := SplitResourceURI(uri); ok {
			t.Errorf("SplitResourceURI(%q) = %q, %q, true; want not a namespaced URI", uri, s, own)
		}
	}
}

func TestExposeUIMeta(t *testing.T) {
	for _, tt := range []struct{ meta, want string }{
		{`{"ui":{"resourceUri":"ui://app/v.html","csp":{"a":1}},"ui/resourceUri":"ui://app/v.html","x":true}`,
			`{"ui":{"csp":{"a":1},"resourceUri":"ui://srv/app/v.html"},"ui/resourceUri":"ui://srv/app/v.html","x":true}`},
		{`{"ui":{"resourceUri":"https://example.com/v.html"}}`, `{"ui":{"resourceUri":"https://example.com/v.html"}}`},
		{`{"openai/outputTemplate":"ui://widget/x.html"}`, `{"openai/outputTemplate":"ui://srv/widget/x.html"}`},
		{`{"ui":"resourceUri"}`, `{"ui":"resourceUri"}`},
		{`[1]`, `[1]`},
	} {
		got := ExposeUIMeta("srv", json.RawMessage(tt.meta))
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("ExposeUIMeta(%s) = %s: %v", tt.meta, got, err)
		}
		_ = json.Unmarshal([]byte(tt.want), &w)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("ExposeUIMeta(%s) (-want +got):\n%s", tt.meta, diff)
		}
	}
	if got := ExposeUIMeta("", json.RawMessage(`{"ui":{"resourceUri":"ui://a/b"}}`)); string(got) != `{"ui":{"resourceUri":"ui://a/b"}}` {
		t.Errorf("a host tool's _meta changed: %s", got)
	}
}
