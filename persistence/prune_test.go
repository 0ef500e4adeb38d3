package persistence

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPruneByRetention(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name             string
		opts             Options
		age              time.Duration // how far the clock moves before Prune
		want             PruneResult
		wantEvents       []uint64 // left
		wantHistoryKinds []HistoryKind
		wantPendingLeft  int64
	}{
		{
			name: "defaults, nothing old enough", age: 6 * day,
			want: PruneResult{}, wantEvents: []uint64{1, 2, 3, 4},
			wantHistoryKinds: []HistoryKind{HistoryCall, HistoryLifecycle, HistoryCall},
			wantPendingLeft:  1,
		},
		{
			// Events 1 and 2 were processed at t0+1h, event 3 at t0+2d; 4 is pending.
			name: "defaults, old processed events go", age: 7*day + 2*time.Hour,
			want: PruneResult{Events: 2}, wantEvents: []uint64{3, 4},
			wantHistoryKinds: []HistoryKind{HistoryCall, HistoryLifecycle, HistoryCall},
			wantPendingLeft:  1,
		},
		{
			name: "pending kept, everything else old", opts: Options{PendingEventRetention: -1}, age: 400 * day,
			want: PruneResult{Events: 3, History: 3}, wantEvents: []uint64{4}, wantPendingLeft: 1,
		},
		{
			// The pending event 4 was received at t0: past the 30 days
			// pending events are kept.
			name: "defaults, a month on", age: 31 * day,
			want:             PruneResult{Events: 3, PendingEvents: 1, History: 2},
			wantHistoryKinds: []HistoryKind{HistoryCall},
		},
		{
			name: "history by its own age", opts: Options{HistoryRetention: 2 * day}, age: 2*day + 90*time.Minute,
			want: PruneResult{History: 2}, wantEvents: []uint64{1, 2, 3, 4},
			wantHistoryKinds: []HistoryKind{HistoryCall},
			wantPendingLeft:  1,
		},
		{
			name: "negative retention keeps", opts: Options{EventRetention: -1, PendingEventRetention: -1, EventLimit: -1, HistoryRetention: -1}, age: 400 * day,
			want: PruneResult{}, wantEvents: []uint64{1, 2, 3, 4},
			wantHistoryKinds: []HistoryKind{HistoryCall, HistoryLifecycle, HistoryCall},
			wantPendingLeft:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			t0 := clock.Now()
			opts := tt.opts
			opts.Now = clock.Now
			s := openStore(t, t.TempDir(), opts)
			mustApply(t, s,
				AppendEvent(EventRecord{Server: "a"}),
				AppendEvent(EventRecord{Server: "a"}),
				AppendEvent(EventRecord{Server: "a"}),
				AppendEvent(EventRecord{Server: "a"}),
				AppendHistory(HistoryRecord{Kind: HistoryCall, Time: t0}),
				AppendHistory(HistoryRecord{Kind: HistoryLifecycle, Time: t0.Add(time.Hour)}),
				AppendHistory(HistoryRecord{Kind: HistoryCall, Time: t0.Add(3 * day)}),
			)
			clock.Advance(time.Hour)
			mustApply(t, s, AckEvents(1, 2))
			clock.Advance(2*day - time.Hour)
			mustApply(t, s, AckEvents(3))
			clock.Advance(t0.Add(tt.age).Sub(clock.Now()))

			got, err := s.Prune()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Prune = %+v, want %+v", got, tt.want)
			}
			checkLeft(t, s, tt.wantEvents, tt.wantHistoryKinds)
			if got := s.Stats().PendingEvents; got != tt.wantPendingLeft {
				t.Errorf("PendingEvents = %d, want %d", got, tt.wantPendingLeft)
			}
			if again, err := s.Prune(); err != nil || again != (PruneResult{}) {
				t.Errorf("second Prune = %+v, %v; want nothing", again, err)
			}
		})
	}
}

func checkLeft(t *testing.T, s *Store, wantEvents []uint64, wantKinds []HistoryKind) {
	t.Helper()
	evs, err := s.Events(EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for _, e := range evs {
		seqs = append(seqs, e.Seq)
	}
	if diff := cmp.Diff(wantEvents, seqs); diff != "" {
		t.Errorf("events left (-want +got):\n%s", diff)
	}
	hist, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []HistoryKind
	for _, h := range hist {
		kinds = append(kinds, h.Kind)
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("history left (-want +got):\n%s", diff)
	}
	// The kind index must lose pruned records too (calls have no index).
	indexed := 0
	for _, k := range wantKinds {
		if indexedKind(k) {
			indexed++
		}
	}
	if n := countKeys(t, s, prefixKind); n != indexed {
		t.Errorf("%d kind index keys, want %d", n, indexed)
	}
}

func TestPruneManyChunks(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now, EventRetention: time.Hour})
	s.pruneChunk = 50
	const n = 2*50 + 23
	ops := make([]Op, 0, n+1)
	for range n {
		ops = append(ops, AppendEvent(EventRecord{Server: "a"}))
	}
	res := mustApply(t, s, ops...)
	var ids []uint64
	for _, e := range res.Events[:n-1] { // leave the last one pending
		ids = append(ids, e.Seq)
	}
	mustApply(t, s, AckEvents(ids...))
	clock.Advance(2 * time.Hour)
	got, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if got.Events != n-1 {
		t.Errorf("pruned %d events, want %d", got.Events, n-1)
	}
	checkLeft(t, s, []uint64{n}, nil)
}

func TestMaintenancePrunesOnItsOwn(t *testing.T) {
	clock := newFakeClock()
	ran := make(chan PruneResult, 1)
	opts := Options{
		Now:                 clock.Now,
		EventRetention:      time.Hour,
		MaintenanceInterval: time.Millisecond,
		maintained: func(r PruneResult, err error) {
			if err != nil && !errors.Is(err, ErrClosed) { // Close may cut a run short
				t.Errorf("maintenance: %v", err)
			}
			if r.Events > 0 {
				select {
				case ran <- r:
				default:
				}
			}
		},
	}
	s := openStore(t, t.TempDir(), opts)
	mustApply(t, s, AppendEvent(EventRecord{Server: "a"}), AppendEvent(EventRecord{Server: "a"}))
	mustApply(t, s, AckEvents(1))
	clock.Advance(2 * time.Hour)
	if r := <-ran; r.Events != 1 {
		t.Errorf("maintenance pruned %+v, want 1 event", r)
	}
	checkLeft(t, s, []uint64{2}, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRunValueLogGC(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now, EventRetention: time.Hour})
	big := make([]byte, 64<<10) // above the value threshold: lives in the value log
	var ops []Op
	for range 200 {
		ops = append(ops, AppendEvent(EventRecord{Server: "a", Params: big}))
	}
	res := mustApply(t, s, ops...)
	if st := s.Stats(); st.VLogBytes == 0 {
		t.Errorf("Stats = %+v, want a value log", st)
	}
	var ids []uint64
	for _, e := range res.Events {
		ids = append(ids, e.Seq)
	}
	mustApply(t, s, AckEvents(ids...))
	clock.Advance(2 * time.Hour)
	if _, err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	// Nothing is rewritable until compaction has counted the discards, so
	// this mostly checks that ErrNoRewrite is not reported as an error.
	if err := s.RunValueLogGC(); err != nil {
		t.Fatalf("RunValueLogGC: %v", err)
	}
}
