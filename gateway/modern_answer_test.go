package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// A complete answer never carries inputRequests or a requestState: a
// legacy server's result that has them (the go-sdk everything-server's
// multi-round tool, served to a legacy client) reaches a modern client
// without them, its content kept; an input_required result is untouched.
func TestModernResponseCompleteAsksNothing(t *testing.T) {
	g := &Gateway{}
	for _, tc := range []struct {
		name, result string
		want         map[string]bool // member → present
	}{
		{"legacy result with input members",
			`{"content":[{"type":"text","text":"hi"}],"inputRequests":{"k":{"method":"elicitation/create"}},"requestState":"round=2;name=Alice"}`,
			map[string]bool{"content": true, "resultType": true, "inputRequests": false, "requestState": false}},
		{"complete said outright",
			`{"resultType":"complete","content":[],"requestState":"x"}`,
			map[string]bool{"content": true, "requestState": false}},
		{"a task's tasks/get, which carries its open input requests",
			`{"resultType":"complete","status":"input_required","inputRequests":{"k":{"method":"roots/list"}}}`,
			map[string]bool{"inputRequests": true}},
		{"input_required",
			`{"resultType":"input_required","inputRequests":{"k":{"method":"roots/list"}},"requestState":"s"}`,
			map[string]bool{"inputRequests": true, "requestState": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := protocol.MethodToolsCall
			if strings.HasPrefix(tc.name, "a task's") {
				method = protocol.MethodTasksGet
			}
			frame := g.modernResponse(protocol.AppendResult(nil, json.RawMessage("1"), json.RawMessage(tc.result)), method)
			m, err := protocol.Classify(frame)
			if err != nil {
				t.Fatal(err)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(m.Result, &members); err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if _, got := members[name]; got != want {
					t.Errorf("%s present: %v, want %v (answer %s)", name, got, want, m.Result)
				}
			}
		})
	}
}
