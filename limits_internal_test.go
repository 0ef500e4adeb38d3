package mcpvisor

import (
	"testing"

	"github.com/mcpvisor/mcpvisor/supervision"
)

func TestServerLimitsForTheRuntime(t *testing.T) {
	var none *ServerLimits
	if got := none.runtime(); !got.IsZero() {
		t.Errorf("no limits: %+v", got)
	}
	l := &ServerLimits{Memory: 512 << 20, CPU: 0.5, Processes: 64}
	if got, want := l.runtime(), (supervision.Limits{Memory: 512 << 20, CPU: 0.5, Processes: 64}); got != want {
		t.Errorf("runtime() = %+v, want %+v", got, want)
	}
}
