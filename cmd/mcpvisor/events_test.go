package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// A journal whose events take more than the 64 MiB a response may be
// (the CLI's bound) is listed through the sidecar a page at a time: the
// default is a page and a note of how to see more, --all every event,
// once each, in order.
func TestEventsOfABigJournalThroughSidecar(t *testing.T) {
	data := t.TempDir()
	const n = 22_000
	params := []byte(`{"data":"` + strings.Repeat("x", 3200) + `"}`) // 22,000 of them: ~70 MiB
	j, err := mcpvisor.OpenJournal(data, mcpvisor.JournalOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for done := 0; done < n; done += 2000 {
		ops := make([]persistence.Op, 0, 2000)
		for range 2000 {
			ops = append(ops, persistence.AppendEvent(persistence.EventRecord{Server: "big", Method: "notifications/message", Params: params}))
		}
		if err := j.Write(context.Background(), ops...); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	startSidecar(t, "--config", cfg, "--data", data)

	out, errOut, code := cliExec("", "events", "--data", data)
	if lines := strings.Count(out, "\n"); code != 0 || lines != mcpvisor.DefaultPageLimit ||
		!strings.Contains(errOut, "mcpvisor events --after 100 (or --all") {
		t.Fatalf("events: exit %d, %d lines, stderr %q", code, lines, errOut)
	}

	out, errOut, code = cliExec("", "events", "--all", "--json", "--data", data)
	if code != 0 {
		t.Fatalf("events --all: exit %d, stderr %q", code, errOut)
	}
	var evs []mcpvisor.JournalEvent
	if err := json.Unmarshal([]byte(out), &evs); err != nil {
		t.Fatalf("events --all --json is not one array: %v", err)
	}
	last := uint64(0)
	for _, ev := range evs {
		if ev.Seq != last+1 {
			t.Fatalf("event %d after %d: each once, in order, wanted", ev.Seq, last)
		}
		last = ev.Seq
	}
	if last != n || errOut != "" {
		t.Errorf("events --all listed up to %d, want %d; stderr %q", last, n, errOut)
	}
}
