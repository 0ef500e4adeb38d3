package actors

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// crashChildEnv makes the test binary a journal writer that runs until it
// is killed (see TestJournalSurvivesSIGKILL).
const crashChildEnv = "MCPVISOR_JOURNAL_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, os.Getenv(crashChildEnv+"_FIRST"))
		return
	}
	os.Exit(m.Run())
}

// crashChild writes events {"k": first, first+1, ...} through the journal
// from four goroutines at full speed and prints "k" once each is
// committed, until it is killed.
func crashChild(dir, firstArg string) {
	first, _ := strconv.ParseUint(firstArg, 10, 64)
	store, err := persistence.Open(dir, persistence.Options{MaintenanceInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	j := NewJournal(store, JournalOptions{}, nil)
	acks := make(chan uint64, 1<<16)
	go func() {
		w := bufio.NewWriter(os.Stdout)
		for k := range acks {
			fmt.Fprintln(w, k)
			if len(acks) == 0 {
				_ = w.Flush() // what reached the parent was acknowledged
			}
		}
	}()
	var next sync.Mutex
	k := first
	inflight := make(chan struct{}, 8192) // bounds the child's own memory
	for range 4 {
		go func() {
			for {
				next.Lock()
				id := k
				k++
				next.Unlock()
				inflight <- struct{}{}
				params := []byte(`{"k":` + strconv.FormatUint(id, 10) + `}`)
				j.WriteAsync([]persistence.Op{persistence.AppendEvent(persistence.EventRecord{
					Server: "crash", Method: "event/crash", Params: params, Received: time.Now()})},
					func(err error) {
						<-inflight
						if err == nil {
							acks <- id
						}
					})
			}
		}()
	}
	select {} // until SIGKILL
}

// A writer killed with SIGKILL at a random moment loses no acknowledged
// event, duplicates none, and the next writer's seqs continue above the
// old ones. Five kills, on the same journal.
func TestJournalSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]uint64{} // k → seq
	var maxSeq uint64
	for round := range 5 {
		first := uint64(round+1) * 100_000_000
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildEnv+"_FIRST="+strconv.FormatUint(first, 10))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := map[uint64]bool{}
		read := make(chan struct{})
		writing := make(chan struct{})
		go func() {
			defer close(read)
			r := bufio.NewReader(out)
			for {
				// A line cut by the kill has no newline: it was not an
				// acknowledgement (and its digits would name another k).
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				k, err := strconv.ParseUint(strings.TrimSuffix(line, "\n"), 10, 64)
				if err == nil {
					if len(acked) == 0 {
						close(writing)
					}
					acked[k] = true
				}
			}
		}()
		// Once the child is committing, a random moment of the crash: this
		// sleep is the test's subject, not a synchronisation.
		select {
		case <-writing:
		case <-read:
			t.Fatalf("round %d: the child exited before committing anything", round)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-read
		_ = cmd.Wait()

		store, err := persistence.Open(dir, persistence.Options{MaintenanceInterval: -1})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		evs, err := store.Events(persistence.EventFilter{After: maxSeq})
		if err != nil {
			t.Fatal(err)
		}
		roundMax := maxSeq
		for _, ev := range evs {
			var p struct{ K uint64 }
			if err := json.Unmarshal(ev.Params, &p); err != nil {
				t.Fatalf("round %d: event %d params %q: %v", round, ev.Seq, ev.Params, err)
			}
			if ev.Seq <= roundMax {
				t.Fatalf("round %d: seq %d not above %d", round, ev.Seq, roundMax)
			}
			roundMax = ev.Seq
			if old, dup := seen[p.K]; dup {
				t.Fatalf("round %d: event k=%d journaled twice (seqs %d and %d)", round, p.K, old, ev.Seq)
			}
			seen[p.K] = ev.Seq
		}
		lost := 0
		for k := range acked {
			if _, ok := seen[k]; !ok {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("round %d: %d of %d acknowledged events missing after SIGKILL", round, lost, len(acked))
		}
		t.Logf("round %d: %d acknowledged, %d journaled this round", round, len(acked), len(evs))
		maxSeq = roundMax
		// The next writer must continue above every seq so far.
		if store.LastEventSeq() < maxSeq {
			t.Errorf("round %d: LastEventSeq %d below the highest seq %d", round, store.LastEventSeq(), maxSeq)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Writes that arrive while a commit is under way share the next commit.
func TestJournalGroupsCommits(t *testing.T) {
	_, j := testJournal(t, JournalOptions{})
	const n = 5000
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		j.WriteAsync([]persistence.Op{persistence.AppendEvent(persistence.EventRecord{
			Server: "s", Method: "event/x", Params: []byte(strconv.Itoa(i))})}, func(err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	st := writerStats(j)
	if st.Events != n {
		t.Errorf("%d events committed, want %d", st.Events, n)
	}
	if st.Commits >= n/10 {
		t.Errorf("%d commits for %d writes sent at once: not grouped", st.Commits, n)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Write(context.Background(), persistence.AckEvents(1)); err != ErrClosed {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
}

// Past its bound, ingestion drops, counts per server, and journals the
// count as an event of its own.
func TestJournalIngestOverflowIsJournaled(t *testing.T) {
	store, j := testJournal(t, JournalOptions{Queue: 10})
	sent := 0
	for i := range 10_000 {
		if j.Ingest("noisy", persistence.AppendEvent(persistence.EventRecord{Server: "noisy", Method: "event/x",
			Params: []byte(strconv.Itoa(i))})) {
			sent++
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := store.Events(persistence.EventFilter{Server: "noisy"})
	if err != nil {
		t.Fatal(err)
	}
	var kept, dropped int
	for _, ev := range evs {
		if ev.Method == persistence.MethodEventsDropped {
			var p struct{ Dropped int }
			_ = json.Unmarshal(ev.Params, &p)
			dropped += p.Dropped
		} else {
			kept++
		}
	}
	if kept != sent || kept+dropped != 10_000 || dropped == 0 {
		t.Errorf("10,000 ingested with a bound of 10: %d accepted, %d journaled, %d counted dropped", sent, kept, dropped)
	}
	if st := writerStats(j); st.Dropped != uint64(dropped) || st.Queued != 0 {
		t.Errorf("stats %+v, want %d dropped and none queued", st, dropped)
	}
}

// BenchmarkJournalIngest measures durable events/s through the path a
// server's events take: Ingest into the bounded queue (waiting for a
// commit when it is full, rather than dropping), each event counted once
// it is committed and synced.
func BenchmarkJournalIngest(b *testing.B) {
	_, j := testJournal(b, JournalOptions{})
	params := []byte(`{"subject":"hello","from":"someone@example.com"}`)
	start := time.Now()
	for range b.N {
		for {
			changed := j.Changed()
			if writerStats(j).Queued < DefaultJournalQueue {
				break
			}
			<-changed
		}
		if !j.Ingest("bench", persistence.AppendEvent(persistence.EventRecord{
			Server: "bench", Method: "event/new_email", Params: params, Received: start})) {
			b.Fatal("dropped with room in the queue")
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	st := writerStats(j)
	if st.Events != uint64(b.N) {
		b.Fatalf("%d events committed, want %d", st.Events, b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(st.Commits), "events/commit")
}

// testJournal opens a store in a temporary directory, closed after the
// test, and a journal writing to it.
func testJournal(tb testing.TB, opts JournalOptions) (*persistence.Store, *Journal) {
	tb.Helper()
	store, err := persistence.Open(tb.TempDir(), persistence.Options{MaintenanceInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	return store, NewJournal(store, opts, nil)
}

// A paced reader waits for room instead of dropping: ten thousand records
// through a queue of ten all arrive.
func TestJournalIngestPacedLosesNothing(t *testing.T) {
	store, j := testJournal(t, JournalOptions{Queue: 10})
	for i := range 10_000 {
		if !j.IngestPaced("flood", persistence.AppendEvent(persistence.EventRecord{Server: "flood", Method: "event/x",
			Params: []byte(strconv.Itoa(i))})) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := store.Events(persistence.EventFilter{Server: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 10_000 || writerStats(j).Dropped != 0 {
		t.Errorf("%d journaled, %d dropped; want 10000 and none", len(evs), writerStats(j).Dropped)
	}
	for i, ev := range evs {
		if string(ev.Params) != strconv.Itoa(i) {
			t.Fatalf("event %d has params %s: out of order", i, ev.Params)
		}
	}
}

// Close answers every write, even one racing with it: committed before
// the writer goroutine ends, or refused with ErrClosed; none is left
// waiting. Ingest after Close drops and counts.
func TestJournalCloseAnswersEveryWrite(t *testing.T) {
	_, j := testJournal(t, JournalOptions{})
	const writers = 8
	var wg sync.WaitGroup
	var committed, refused atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				err := j.Write(context.Background(), persistence.AppendEvent(persistence.EventRecord{
					Server: "s", Method: "event/x", Params: []byte(strconv.Itoa(w*1_000_000 + i))}))
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, ErrClosed):
					refused.Add(1)
					return
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	for writerStats(j).Commits < 3 {
		<-j.Changed()
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait() // every writer got an answer
	select {
	case <-j.Done():
	default:
		t.Error("Done is not closed after Close")
	}
	if got := writerStats(j).Events; got != uint64(committed.Load()) {
		t.Errorf("%d events committed, %d writes told so", got, committed.Load())
	}
	if refused.Load() != writers {
		t.Errorf("%d writers refused, want %d", refused.Load(), writers)
	}
	dropped := writerStats(j).Dropped
	if j.Ingest("s", persistence.AckEvents(1)) {
		t.Error("Ingest after Close succeeded")
	}
	if writerStats(j).Dropped != dropped+1 {
		t.Error("Ingest after Close was not counted as dropped")
	}
}

// A write of no ops is answered, like any other, by the writer: it does
// not wait for its context.
func TestJournalEmptyWriteIsAnswered(t *testing.T) {
	_, j := testJournal(t, JournalOptions{})
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := j.Write(ctx); err != nil {
		t.Fatalf("empty write: %v", err)
	}
	done := make(chan error, 1)
	j.WriteAsync(nil, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("an empty WriteAsync was never answered")
	}
}

// Ingested records linger for company: none is committed until the linger
// ends, a durable write arrives, or the queue is a quarter full, and then
// all that waited go in one commit. (Not in a synctest bubble: Badger's
// own goroutines finish the commits.)
func TestJournalIngestLingers(t *testing.T) {
	ingest := func(j *Journal, n int) {
		for i := range n {
			if !j.Ingest("s", persistence.AppendEvent(persistence.EventRecord{Server: "s", Method: "event/x", Params: []byte(strconv.Itoa(i))})) {
				t.Fatal("dropped with room in the queue")
			}
		}
	}
	_, j := testJournal(t, JournalOptions{Linger: time.Hour, Queue: 400})
	ingest(j, 10)
	if st := writerStats(j); st.Commits != 0 || st.Queued != 10 {
		t.Fatalf("after 10 ingested: %+v, want them lingering", st)
	}
	// A durable write does not wait, and takes the lingering records along.
	if err := j.Write(context.Background(), persistence.AckEvents()); err != nil {
		t.Fatal(err)
	}
	if st := writerStats(j); st.Commits != 1 || st.Events != 10 {
		t.Fatalf("after a write: %+v, want one commit of 10 events", st)
	}
	// A quarter-full queue does not wait either.
	ingest(j, 100)
	waitFor(t, j, "a second commit", func(st JournalStats) bool { return st.Commits >= 2 })
	if st := writerStats(j); st.Commits != 2 || st.Events != 110 {
		t.Fatalf("after a quarter-full queue: %+v, want a second commit, of 100 events", st)
	}
	// Close commits what lingers.
	ingest(j, 3)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if st := writerStats(j); st.Commits != 3 || st.Events != 113 {
		t.Fatalf("after Close: %+v, want a third commit, of 3 events", st)
	}

	// And the linger ends by itself.
	// (Records ingested more than a linger apart go in commits of their
	// own: on a loaded machine that may be any of the three.)
	_, j = testJournal(t, JournalOptions{Linger: time.Millisecond})
	ingest(j, 3)
	waitFor(t, j, "3 events committed", func(st JournalStats) bool { return st.Events == 3 })
	j.Close()
}

// waitFor waits until the writer's stats satisfy done. A commit's Changed
// signal may come after its writers were answered, so one receive from
// Changed does not say which commit it was.
func waitFor(t *testing.T, j *Journal, what string, done func(JournalStats) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		changed := j.Changed()
		if done(writerStats(j)) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s in a minute: %+v", what, writerStats(j))
		}
	}
}

// writerStats is the writer's half of j.Stats.
func writerStats(j *Journal) JournalStats {
	st, _ := j.Stats()
	return st
}

// IngestHistory queues a copy of the caller's record: the caller reuses
// its record at once, the records keep their order among the other ingested
// ones, and past the bound they are dropped and counted like any.
func TestJournalIngestHistory(t *testing.T) {
	store, j := testJournal(t, JournalOptions{Queue: 1000})
	at := time.Now()
	var rec persistence.HistoryRecord // one record, reused for every call
	sent := 0
	for i := range 3000 {
		if i%100 == 50 {
			if j.Ingest("s", persistence.AppendHistory(persistence.HistoryRecord{Kind: persistence.HistoryLifecycle,
				Server: "s", Transition: "ready", Detail: strconv.Itoa(i), Time: at})) {
				sent++
			}
			continue
		}
		rec = persistence.HistoryRecord{Kind: persistence.HistoryCall, Server: "s", Tool: "mcp__s__t", Time: at,
			Outcome: "ok", ResultSize: i}
		if j.IngestHistory("s", &rec) {
			sent++
		}
		rec.ResultSize, rec.Tool = -1, "reused" // the queue's copy is not the caller's
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	hist, err := store.History(persistence.HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != sent || sent == 0 {
		t.Fatalf("%d records in the history, %d accepted of 3,000 through a queue of 1,000", len(hist), sent)
	}
	last := -1
	for _, h := range hist {
		var i int
		switch h.Kind {
		case persistence.HistoryCall:
			if h.Tool != "mcp__s__t" {
				t.Fatalf("call record %d: tool %q, want the one ingested", h.Seq, h.Tool)
			}
			i = h.ResultSize
		case persistence.HistoryLifecycle:
			i, _ = strconv.Atoi(h.Detail)
		}
		if i <= last {
			t.Fatalf("record %d (%s) is ingest number %d, after %d: out of order", h.Seq, h.Kind, i, last)
		}
		last = i
	}
	if st := writerStats(j); st.Dropped != uint64(3000-sent) {
		t.Errorf("%d dropped, want %d", st.Dropped, 3000-sent)
	}
}
