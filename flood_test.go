package mcpvisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// rateDrop is the params of a rate bound's summary event.
type rateDrop struct {
	Dropped    uint64 `json:"dropped"`
	Method     string `json:"method"`
	Reason     string `json:"reason"`
	IntervalMs int64  `json:"intervalMs"`
}

// A server that floods past its rate has the excess summarised: the
// journal holds at most the bucket's worth of its events plus one event per
// interval counting the rest, and the counts add up to what it sent, in the
// journal, in the event stream and in Host.EventsRateLimited.
func TestFloodOverTheRateIsSummarised(t *testing.T) {
	const (
		n     = 20000
		burst = 50
		rate  = 100 // per second
	)
	summaries := make(chan mcpvisor.Event, 64)
	h := openHost(t, mcpvisor.Options{
		EventRate: mcpvisor.EventRate{PerSecond: rate, Burst: burst, Interval: 20 * time.Millisecond, ReadPace: -1},
		OnEvent: func(ev mcpvisor.Event) {
			if ev.Method == mcpvisor.MethodEventsDrops {
				summaries <- ev
			}
		},
	}, mcptest("flood"))
	waitReady(t, h)

	start := time.Now()
	res := call(t, h, "mcp__flood__flood", fmt.Sprintf(`{"n":%d}`, n))
	if res.Wire() != fmt.Sprintf("flooded %d", n) {
		t.Fatalf("flood answered %q", res.Wire())
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var journaled, dropped uint64
	var lastSummary time.Time
	for ev := range h.Journal().Subscribe(ctx, mcpvisor.EventFilter{Server: "flood"}) {
		switch ev.Method {
		case mcpvisor.MethodEventsDrops:
			var p rateDrop
			if err := json.Unmarshal(ev.Params, &p); err != nil {
				t.Fatalf("summary %s: %v", ev.Params, err)
			}
			if p.Reason != "rate" || p.Method != "event/flood" || p.Dropped == 0 || p.IntervalMs != 20 {
				t.Fatalf("summary %s: want a rate drop of event/flood over 20 ms", ev.Params)
			}
			dropped += p.Dropped
			lastSummary = ev.Received
		case "event/flood":
			journaled++
		}
		if journaled+dropped >= n {
			break
		}
	}
	if journaled+dropped != n {
		t.Fatalf("%d events sent: %d journaled and %d summarised as dropped", n, journaled, dropped)
	}
	// What was let through is the bucket and what refilled it while the
	// flood lasted (until the last summary at the latest).
	elapsed := lastSummary.Sub(start)
	if most := uint64(burst + rate*elapsed.Seconds() + 1); journaled > most {
		t.Errorf("%d events journaled in %v, want at most %d (burst %d, %d/s)", journaled, elapsed, most, burst, rate)
	}
	if dropped == 0 {
		t.Fatal("nothing dropped: the flood was not bounded")
	}
	if got := h.EventsRateLimited()["flood"]; got != dropped {
		t.Errorf("EventsRateLimited()[flood] = %d, want the journal's %d", got, dropped)
	}
	// Observers get the same summaries as the journal.
	var emitted uint64
	for emitted < dropped {
		select {
		case ev := <-summaries:
			var p rateDrop
			if err := json.Unmarshal(ev.Params, &p); err != nil || ev.Server != "flood" || p.Reason != "rate" {
				t.Fatalf("emitted summary from %q: %s (%v)", ev.Server, ev.Params, err)
			}
			emitted += p.Dropped
		case <-ctx.Done():
			t.Fatalf("observers were told of %d dropped events, the journal of %d", emitted, dropped)
		}
	}
	t.Logf("%d events: %d journaled, %d dropped over the rate (in %v)", n, journaled, dropped, elapsed)
}
