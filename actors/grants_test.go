package actors

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// A grant keeps the time it was first granted; a reader's set is not
// changed by later grants (copy on write).
func TestGrantsAddKeepsFirstTime(t *testing.T) {
	var g Grants
	s := persistence.Scope{Session: "s"}
	t0 := time.Unix(100, 0)
	g.add(s, []string{"a"}, t0)
	before := g.Get(s)
	g.add(s, []string{"a", "mcp__b__t"}, t0.Add(time.Hour))
	got := g.Get(s)
	if !got["a"].Equal(t0) || !got.Has("mcp__b__t") {
		t.Fatalf("set = %v", got)
	}
	if len(before) != 1 {
		t.Fatalf("the earlier set changed: %v", before)
	}
	if names := got.Names(); !slices.Equal(names, []string{"a", "mcp__b__t"}) {
		t.Errorf("Names = %q", names)
	}
	if tools := got.Tools(); !slices.Equal(tools, []string{"mcp__b__t"}) {
		t.Errorf("Tools = %q", tools)
	}
	if ts := got.ToolServers(); len(ts) != 1 || !ts["b"] {
		t.Errorf("ToolServers = %v", ts)
	}
	if ts := before.ToolServers(); ts != nil {
		t.Errorf("ToolServers of groups only = %v, want nil", ts)
	}
}

// Ending a frame drops it alone; ending a session drops it and its frames,
// and no other session's.
func TestGrantsEnd(t *testing.T) {
	var g Grants
	now := time.Now()
	root := persistence.Scope{Session: "s"}
	frame := persistence.Scope{Session: "s", Stack: "f"}
	other := persistence.Scope{Session: "o"}
	g.Load([]persistence.GrantRecord{
		{Scope: root, Group: "a", Granted: now},
		{Scope: frame, Group: "b", Granted: now},
		{Scope: other, Group: "c", Granted: now},
	})
	g.end(frame)
	if g.Get(frame) != nil || !g.Get(root).Has("a") {
		t.Fatalf("after ending the frame: root %v, frame %v", g.Get(root), g.Get(frame))
	}
	g.add(frame, []string{"b"}, now)
	g.end(root)
	if g.Get(root) != nil || g.Get(frame) != nil || !g.Get(other).Has("c") {
		t.Fatalf("after ending the session: root %v, frame %v, other %v", g.Get(root), g.Get(frame), g.Get(other))
	}
}

// Grant and End are durable: the store holds what the table holds.
func TestGrantsJournaled(t *testing.T) {
	store, err := persistence.Open(t.TempDir(), persistence.Options{MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	j := NewJournal(store, JournalOptions{}, nil)
	ctx := context.Background()
	t.Cleanup(func() {
		_ = j.Close()
		_ = store.Close()
	})
	var g Grants
	s := persistence.Scope{Session: "s", Stack: "f"}
	if err := g.Grant(ctx, j, s, []string{"a", "b"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	recs, err := store.Grants()
	if err != nil {
		t.Fatal(err)
	}
	var reloaded Grants
	reloaded.Load(recs)
	if got := reloaded.Get(s).Names(); !slices.Equal(got, []string{"a", "b"}) || !slices.Equal(g.Get(s).Names(), got) {
		t.Fatalf("stored %q, table %q", got, g.Get(s).Names())
	}
	if err := g.End(ctx, j, persistence.Scope{Session: "s"}); err != nil {
		t.Fatal(err)
	}
	if recs, err = store.Grants(); err != nil || len(recs) != 0 || g.Get(s) != nil {
		t.Fatalf("after End: stored %v (%v), table %v", recs, err, g.Get(s))
	}
}
