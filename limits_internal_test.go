package mcpvisor

import (
	"testing"

	"github.com/mcpvisor/mcpvisor/supervision"
)

func TestServerLimitsForTheRuntime(t *testing.T) {
	none, err := serverSpec(ServerConfig{Name: "s", Command: "x"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !none.Limits.IsZero() {
		t.Errorf("no limits: %+v", none.Limits)
	}
	sc := ServerConfig{Name: "s", Command: "x", Limits: &ServerLimits{Memory: 512 << 20, CPU: 0.5, Processes: 64}}
	spec, err := serverSpec(sc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (supervision.Limits{Memory: 512 << 20, CPU: 0.5, Processes: 64}); spec.Limits != want {
		t.Errorf("spec.Limits = %+v, want %+v", spec.Limits, want)
	}
}
