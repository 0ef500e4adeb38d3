package pipeline

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

func TestCapsMemoAddsTheTasksExtension(t *testing.T) {
	var m capsMemo
	caps := json.RawMessage(`{"sampling":{},"extensions":{"x.example/other":{}}}`)
	got := m.withTasks(caps)
	if !protocol.DeclaresExtension(got, protocol.TasksExtension) || !protocol.DeclaresExtension(got, "x.example/other") {
		t.Fatalf("withTasks(%s) = %s: want both extensions", caps, got)
	}
	if again := m.withTasks(caps); string(again) != string(got) {
		t.Errorf("second answer %s, want the kept %s", again, got)
	}
	if v := m.withTasks(got); v != nil {
		t.Errorf("caps that declare it already came back changed: %s", v)
	}
	if v := m.withTasks(json.RawMessage(`[1]`)); v != nil {
		t.Errorf("an array came back as %s, want no change", v)
	}
	for i := range 2 * maxCapsMemo {
		m.withTasks(json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
	}
	if len(m.m) > maxCapsMemo {
		t.Errorf("memo holds %d objects, want at most %d", len(m.m), maxCapsMemo)
	}
}
