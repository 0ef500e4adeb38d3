package actors

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// waitLive waits until n subscribers take their events from the fan-out.
func waitLive(t *testing.T, j *Journal, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j.fanout.mu.Lock()
		got := len(j.fanout.subs)
		j.fanout.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d live subscribers, want %d", got, n)
		}
		runtime.Gosched()
	}
}

func writeEvents(t *testing.T, j *Journal, n int) {
	t.Helper()
	for i := range n {
		if err := j.Write(context.Background(), persistence.AppendEvent(persistence.EventRecord{
			Server: "flood", Method: "event/x", Params: []byte(strconv.Itoa(i))})); err != nil {
			t.Fatal(err)
		}
	}
}

// A subscriber that never reads does not slow the writer: every write
// commits, and the subscriber, once it reads, gets what its buffer held,
// then a lagged record saying how many it missed and where to resume, then
// the end of its channel. Resuming there loses nothing.
func TestJournalSlowSubscriberLagsWithoutBlockingTheWriter(t *testing.T) {
	const n, buffer = 600, 100
	_, j := testJournal(t, JournalOptions{LiveBuffer: buffer})
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := j.SubscribeBounded(ctx, persistence.EventFilter{Server: "flood"})

	writeEvents(t, j, n) // would hang here if the subscriber held the writer up

	var got []persistence.EventRecord
	var lag persistence.EventRecord
	for ev := range slow {
		if ev.Method == MethodEventsLagged {
			lag = ev
			continue
		}
		if lag.Method != "" {
			t.Fatalf("event %d after the lagged record", ev.Seq)
		}
		got = append(got, ev)
	}
	if lag.Method == "" {
		t.Fatalf("%d events and no lagged record from a subscriber that read nothing", len(got))
	}
	// What it got is the head of the stream, in order, no more than its
	// channel and its buffer (and a batch it had taken) could hold.
	for i, ev := range got {
		if string(ev.Params) != strconv.Itoa(i) {
			t.Fatalf("event %d has params %s: want %d", i, ev.Params, i)
		}
	}
	if len(got) == 0 || len(got) > n/2 {
		t.Fatalf("the slow subscriber got %d of %d events before lagging", len(got), n)
	}
	var p struct{ Skipped, After uint64 }
	if err := json.Unmarshal(lag.Params, &p); err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1].Seq; p.After != last || p.Skipped != uint64(n-len(got)) {
		t.Fatalf("lagged %s after %d events up to id %d; want skipped %d, after %d", lag.Params, len(got), last, n-len(got), last)
	}
	// Resuming after the id it was given delivers the rest.
	rest := j.Subscribe(ctx, persistence.EventFilter{Server: "flood", After: p.After})
	for i := len(got); i < n; i++ {
		ev := <-rest
		if string(ev.Params) != strconv.Itoa(i) {
			t.Fatalf("resumed at %d: params %s", i, ev.Params)
		}
	}
}

// Subscribe never skips: a subscriber that falls behind the fan-out goes
// back to the store and then joins again, and gets every event in order.
func TestJournalSubscribeCatchesUpAfterLagging(t *testing.T) {
	const n, buffer = 600, 50
	_, j := testJournal(t, JournalOptions{LiveBuffer: buffer})
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := j.Subscribe(ctx, persistence.EventFilter{Server: "flood"})
	writeEvents(t, j, n)
	for i := range n {
		ev := <-sub
		if string(ev.Params) != strconv.Itoa(i) {
			t.Fatalf("event %d: params %s (method %s)", i, ev.Params, ev.Method)
		}
	}
	// It is live again: the next commit reaches it from the fan-out.
	waitLive(t, j, 1)
	writeEvents(t, j, 1)
	if ev := <-sub; string(ev.Params) != "0" || ev.Seq <= uint64(n) {
		t.Fatalf("after catching up: %+v", ev)
	}
}
