package persistence

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// appendEvents journals n events of server in batches of 5,000, so a big
// journal is quick to make.
func appendEvents(t testing.TB, s *Store, n int, server func(i int) string) {
	t.Helper()
	for done := 0; done < n; {
		batch := min(5000, n-done)
		ops := make([]Op, 0, batch)
		for i := range batch {
			ops = append(ops, AppendEvent(EventRecord{Server: server(done + i), Method: "notifications/message", Params: []byte(`{"n":1}`)}))
		}
		mustApply(t, s, ops...)
		done += batch
	}
}

func TestEventsPageFollowsCursors(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	const n = 20_000
	appendEvents(t, s, n, func(i int) string { return fmt.Sprint("s", i%4) })

	first, err := s.EventsPage(EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Events) != DefaultPageLimit || first.Next != DefaultPageLimit {
		t.Fatalf("default page: %d events, next %d; want %d and a cursor at %d", len(first.Events), first.Next, DefaultPageLimit, DefaultPageLimit)
	}
	if big, _ := s.EventsPage(EventFilter{Limit: 50_000}); len(big.Events) != MaxPageLimit {
		t.Errorf("a limit of 50,000 gave %d events, want the cap %d", len(big.Events), MaxPageLimit)
	}

	for _, tt := range []struct {
		name   string
		filter EventFilter
		want   int
	}{
		{"every event", EventFilter{Limit: MaxPageLimit}, n},
		{"one server's", EventFilter{Server: "s1", Limit: 700}, n / 4},
		{"pending, default pages", EventFilter{Status: EventPending}, n},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.filter
			got, pages, last := 0, 0, uint64(0)
			for {
				page, err := s.EventsPage(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page.Events {
					if e.Seq <= last {
						t.Fatalf("event %d after %d: not in order, or seen twice", e.Seq, last)
					}
					if f.Server != "" && e.Server != f.Server {
						t.Fatalf("event %d of %s in a listing of %s", e.Seq, e.Server, f.Server)
					}
					last = e.Seq
					got++
				}
				pages++
				if page.Next == 0 {
					break
				}
				if page.Next < last {
					t.Fatalf("cursor %d goes back before event %d", page.Next, last)
				}
				f.After = page.Next
			}
			if got != tt.want {
				t.Errorf("followed %d pages to %d events, want %d", pages, got, tt.want)
			}
		})
	}

	newest, err := s.EventsPage(EventFilter{Newest: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(newest.Events) != 10 || newest.Events[0].Seq != n-9 || newest.Events[9].Seq != n || newest.Next != n {
		t.Errorf("newest page: %d events from %d, next %d; want %d..%d, next %d", len(newest.Events), newest.Events[0].Seq, newest.Next, n-9, n, n)
	}
	if none, _ := s.EventsPage(EventFilter{Newest: true, Server: "nobody"}); len(none.Events) != 0 || none.Next != n {
		t.Errorf("newest page of no events: next %d, want the newest event %d (where following starts)", none.Next, n)
	}
}

// A filter that matches nothing ends its page after its scan budget
// with a cursor, rather than reading the journal in one request.
func TestEventsPageBoundsItsScan(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	s.pageBudget = 4_000
	const n = 5_000
	appendEvents(t, s, n, func(int) string { return "busy" })
	read := s.Stats().RecordsRead
	page, err := s.EventsPage(EventFilter{Server: "quiet"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 0 || page.Next != 4_000 {
		t.Errorf("page: %d events, next %d; want none and a cursor at 4,000", len(page.Events), page.Next)
	}
	if got := s.Stats().RecordsRead - read; got != 4_000 {
		t.Errorf("the page read %d records, want 4,000", got)
	}
	rest, err := s.EventsPage(EventFilter{Server: "quiet", After: page.Next})
	if err != nil || len(rest.Events) != 0 || rest.Next != 0 {
		t.Errorf("the rest: %d events, next %d, %v; want none, no cursor", len(rest.Events), rest.Next, err)
	}
}

func TestHistoryPageFollowsCursors(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	const n = 3_000
	ops := make([]Op, 0, n)
	for i := range n {
		kind := HistoryCall
		if i%3 == 0 {
			kind = HistoryLifecycle
		}
		ops = append(ops, AppendHistory(HistoryRecord{Kind: kind, Server: "a", Time: time.Now()}))
	}
	mustApply(t, s, ops...)
	for _, tt := range []struct {
		kind HistoryKind
		want int
	}{{"", n}, {HistoryLifecycle, n / 3}, {HistoryCall, n - n/3}} {
		f := HistoryFilter{Kind: tt.kind, Limit: 250}
		got, last := 0, uint64(0)
		for {
			page, err := s.HistoryPage(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range page.Records {
				if h.Seq <= last || (tt.kind != "" && h.Kind != tt.kind) {
					t.Fatalf("kind %q: record %d (%s) after %d", tt.kind, h.Seq, h.Kind, last)
				}
				last = h.Seq
				got++
			}
			if page.Next == 0 {
				break
			}
			f.After = page.Next
		}
		if got != tt.want {
			t.Errorf("kind %q: %d records, want %d", tt.kind, got, tt.want)
		}
	}
}

// Over EventLimit the oldest processed events go first; pending ones go only
// when those are not enough, and the pending count and mark follow.
func TestPruneEventLimit(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now, EventLimit: 1_000, EventRetention: -1})
	s.pruneChunk = 300
	appendEvents(t, s, 1_500, func(int) string { return "a" })
	// Acknowledge 201..400: 200 processed events, not the oldest.
	var ids []uint64
	for seq := uint64(201); seq <= 400; seq++ {
		ids = append(ids, seq)
	}
	mustApply(t, s, AckEvents(ids...))

	got, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if want := (PruneResult{Events: 200, PendingEvents: 300}); got != want {
		t.Errorf("Prune = %+v, want %+v", got, want)
	}
	left, err := s.Events(EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1_000 || left[0].Seq != 501 || left[len(left)-1].Seq != 1_500 {
		t.Fatalf("left %d events from %d; want 1,000 from 501", len(left), left[0].Seq)
	}
	if st := s.Stats(); st.PendingEvents != 1_000 {
		t.Errorf("PendingEvents = %d, want 1,000", st.PendingEvents)
	}
	if m := s.pendingMark(); m != 501 {
		t.Errorf("pending mark %d, want 501 (past the deleted events)", m)
	}
	if again, err := s.Prune(); err != nil || again != (PruneResult{}) {
		t.Errorf("second Prune = %+v, %v; want nothing", again, err)
	}
}

// Past PendingEventRetention the oldest events go, acknowledged or not,
// up to the first one young enough.
func TestPrunePendingByAge(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now, PendingEventRetention: 24 * time.Hour, EventRetention: -1})
	s.pruneChunk = 7
	appendEvents(t, s, 20, func(int) string { return "old" })
	clock.Advance(12 * time.Hour)
	appendEvents(t, s, 5, func(int) string { return "young" })
	mustApply(t, s, AckEvents(3, 4))
	clock.Advance(13 * time.Hour)

	got, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if want := (PruneResult{Events: 2, PendingEvents: 18}); got != want {
		t.Errorf("Prune = %+v, want %+v", got, want)
	}
	left, _ := s.Events(EventFilter{})
	if len(left) != 5 || left[0].Server != "young" {
		t.Errorf("left %d events; want the 5 young ones", len(left))
	}
	if st := s.Stats(); st.PendingEvents != 5 {
		t.Errorf("PendingEvents = %d, want 5", st.PendingEvents)
	}
}

// A page of big events ends once it holds about PageBytes.
func TestEventsPageBoundsItsBytes(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	params := []byte(`"` + strings.Repeat("x", 1<<20) + `"`)
	for range 4 {
		ops := make([]Op, 0, 5)
		for range 5 {
			ops = append(ops, AppendEvent(EventRecord{Server: "a", Method: "m", Params: params}))
		}
		mustApply(t, s, ops...)
	}
	page, err := s.EventsPage(EventFilter{Limit: MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	if want := PageBytes/len(params) + 1; len(page.Events) != want || page.Next != uint64(want) {
		t.Errorf("page of 1 MiB events: %d events, next %d; want %d and a cursor", len(page.Events), page.Next, want)
	}
}
