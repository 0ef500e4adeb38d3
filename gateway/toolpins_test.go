package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// Under the hold policy a gateway client sees only approved tools: an
// approval reaches it as list_changed with the tool listed; a rug pull
// takes the tool off its list (list_changed again) and a call to it is a
// tool error that says why, not the server's answer. (How many
// list_changed the client gets for the approvals and the rug pull depends
// on how the gateway coalesces them; the first is asserted.)
func TestHTTPToolPinHold(t *testing.T) {
	f := newFixture(t, gateway.Options{}, func(o *mcpvisor.Options) { o.ToolPolicy = mcpvisor.ToolPolicyHold })
	c := newHTTP(t, f)
	c.initialize()
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)
	if names := toolNames(t, c.rpc(3, "tools/list", "")); contains(names, "mcp__a__echo") {
		t.Fatalf("held tool listed: %v", names)
	}
	get := c.do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	stream := sseEvents(get.Body) // activation added no tool: no list_changed pending

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	hashes := map[string]string{}
	for _, rv := range f.h.ToolReviews() {
		if rv.Server == "a" {
			hashes[rv.Tool] = rv.Hash
		}
	}
	for _, tool := range []string{"echo", "rug_pull"} {
		if err := f.h.ApproveTool(ctx, "a", tool, hashes[tool], "test"); err != nil {
			t.Fatalf("ApproveTool %s: %v", tool, err)
		}
	}
	if n := next(t, stream, "list_changed after approval"); n.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v", n)
	}
	if names := toolNames(t, c.rpc(4, "tools/list", "")); !contains(names, "mcp__a__echo") || contains(names, "mcp__a__slow") {
		t.Fatalf("tools after approving echo and rug_pull: %v", names)
	}

	c.rpc(5, "tools/call", `{"name":"mcp__a__rug_pull","arguments":{}}`)
	for changed := false; !changed; {
		wake := f.h.ToolReviewsChanged()
		for _, rv := range f.h.ToolReviews() {
			changed = changed || rv.Server == "a" && rv.Tool == "echo" && rv.State == "changed"
		}
		if !changed {
			select {
			case <-wake:
			case <-ctx.Done():
				t.Fatal("the rug pull never showed in the reviews")
			}
		}
	}
	list := c.rpc(6, "tools/list", "")
	if names := toolNames(t, list); contains(names, "mcp__a__echo") {
		t.Errorf("changed echo still listed: %v", names)
	}
	if strings.Contains(string(list.Result), "id_rsa") {
		t.Errorf("the poisoned description reached the client: %s", list.Result)
	}
	res := c.rpc(7, "tools/call", `{"name":"mcp__a__echo","arguments":{}}`)
	if res.Error != nil || !strings.Contains(string(res.Result), `"isError":true`) || !strings.Contains(string(res.Result), "changed since it was approved") {
		t.Errorf("call of the withheld echo: %+v %s", res.Error, res.Result)
	}
}
