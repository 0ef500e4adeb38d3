package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// A server that runs its tools as tasks of the 2026-07-28 extension
// (jobs --tasks) behind the gateway: the host drives the server's task for
// whichever client calls. A modern client that declares the extension gets
// the gateway's own task over the host's call (its question bridged
// through tasks/update at both ends); a modern client that does not, and a
// legacy one, get the result of a blocking call.
func TestGatewayBridgesExtensionTasks(t *testing.T) {
	noPrefix := false
	jobs := mcpvisor.ServerConfig{Name: "jobs", Type: "stdio", Command: bin.jobs, Args: []string{"--tasks"}, Enabled: true, Prefix: &noPrefix}
	h, url := modernGateway(t, gateway.Options{}, jobs)
	c := &modernClient{t: t, urls: []string{url}, caps: `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	pollUntil := func(id string, done func(taskView) bool) taskView { t.Helper(); return pollTask(t, c, id, done) }

	var created taskView
	c.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":0.3,"label":"m"}}`, nil).result(t, &created)
	if created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("CreateTaskResult: %+v", created)
	}
	done := pollUntil(created.TaskID, func(v taskView) bool { return v.Status != "working" })
	if done.Status != "completed" || done.Result == nil || done.Result.text() != "computed m after 0.3s" {
		t.Fatalf("finished task: %+v", done)
	}

	// The server's question inside its task reaches the client as the
	// gateway task's input request; the client's tasks/update answers it.
	var asked taskView
	c.send("tools/call", `{"name":"confirm_delete","arguments":{}}`, nil).result(t, &asked)
	waiting := pollUntil(asked.TaskID, func(v taskView) bool {
		return v.Status == "input_required" || v.Status == "completed" || v.Status == "failed"
	})
	if waiting.Status != "input_required" || len(waiting.InputRequests) != 1 {
		t.Fatalf("input_required task: %+v", waiting)
	}
	for key := range waiting.InputRequests {
		c.send("tasks/update", `{"taskId":"`+asked.TaskID+`","inputResponses":{"`+key+`":{"action":"accept","content":{"confirm":"yes"}}}}`, nil).result(t, new(json.RawMessage))
	}
	if v := pollUntil(asked.TaskID, func(v taskView) bool { return v.Status != "input_required" && v.Status != "working" }); v.Status != "completed" || v.Result.text() != "confirm: yes" {
		t.Fatalf("answered task: %+v", v)
	}

	// A modern client without the extension: a blocking call.
	plain := &modernClient{t: t, urls: []string{url}, caps: `{}`}
	var res callResult
	plain.send("tools/call", `{"name":"slow_compute","arguments":{"seconds":0.2,"label":"p"}}`, nil).result(t, &res)
	if res.text() != "computed p after 0.2s" {
		t.Fatalf("modern client without the extension: %+v", res)
	}

	// A legacy client: a blocking call too.
	legacy := &httpClient{t: t, url: url}
	legacy.initialize()
	f := legacy.rpc(2, "tools/call", `{"name":"slow_compute","arguments":{"seconds":0.2,"label":"l"}}`)
	if f.Error != nil || decode[callResult](t, f.Result).text() != "computed l after 0.2s" {
		t.Fatalf("legacy client: %s %+v", f.Result, f.Error)
	}

	// Each of those calls was a task of the server's, driven by the host.
	recs, err := h.Journal().Store().Tasks(persistence.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ext := 0
	for _, r := range recs {
		if r.Extension && r.Done && r.Status == mcpvisor.TaskCompleted {
			ext++
		}
	}
	if ext != 4 {
		t.Fatalf("%d completed extension tasks of the server's in the journal, want 4: %+v", ext, recs)
	}
}
