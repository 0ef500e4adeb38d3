package actors

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"
)

// The call timer counts only the time the server's clock runs: a pause (a
// person answering an elicitation) stops it, progress restarts it when
// asked, and the total cap bounds it whatever progress says.
func TestCallTimerPauseResetAndCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var clock pauseClock
		timer := newCallTimer(&clock, 10*time.Second, 25*time.Second)

		time.Sleep(4 * time.Second)
		if left, wait, _ := timer.remaining(); left != 6*time.Second || wait != nil {
			t.Fatalf("after 4 s: left %s, paused %v; want 6s, running", left, wait != nil)
		}

		clock.pause(time.Now())
		time.Sleep(100 * time.Second)
		left, wait, _ := timer.remaining()
		if left != 6*time.Second || wait == nil {
			t.Fatalf("paused for 100 s: left %s, paused %v; want 6s, paused", left, wait != nil)
		}
		clock.resume(time.Now())
		select {
		case <-wait:
		default:
			t.Fatal("resume did not close the channel the timer waits on")
		}

		time.Sleep(3 * time.Second)
		timer.progressed() // active 7 s: the timeout now ends at 17 s
		time.Sleep(9 * time.Second)
		if left, _, total := timer.remaining(); left != time.Second || total {
			t.Fatalf("9 s after progress: left %s (total cap %v); want 1s from the timeout", left, total)
		}
		timer.progressed() // active 16 s; the cap (25 s) is nearer than 26 s
		time.Sleep(5 * time.Second)
		if left, _, total := timer.remaining(); left != 4*time.Second || !total {
			t.Fatalf("at active 21 s: left %s (total cap %v); want 4s from the cap", left, total)
		}
	})
}

// Two overlapping pauses stop the clock once, from the first start to the
// last end.
func TestPauseClockNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var clock pauseClock
		clock.pause(time.Now())
		time.Sleep(2 * time.Second)
		clock.pause(time.Now())
		time.Sleep(3 * time.Second)
		clock.resume(time.Now())
		if _, wait := clock.read(time.Now()); wait == nil {
			t.Fatal("clock runs while one pause is still open")
		}
		time.Sleep(time.Second)
		clock.resume(time.Now())
		clock.resume(time.Now()) // unmatched: ignored
		time.Sleep(time.Second)
		if total, wait := clock.read(time.Now()); total != 6*time.Second || wait != nil {
			t.Fatalf("paused total %s (still paused %v), want 6s and running", total, wait != nil)
		}
	})
}

func TestDeliverProgressToken(t *testing.T) {
	e := &serverEntry{}
	sub := e.watchProgress()
	e.deliverProgress(json.RawMessage(`{"progressToken":"` + sub.Token() + `","progress":1,"total":4,"message":"one"}`))
	e.deliverProgress(json.RawMessage(`{"progressToken":"someone-else","progress":2}`))
	e.deliverProgress(json.RawMessage(`{"progressToken":` + `"` + sub.Token() + `"` + `,"progress":2}`))
	sub.Close()
	e.deliverProgress(json.RawMessage(`{"progressToken":"` + sub.Token() + `","progress":3}`))
	var got []float64
	for len(sub.C()) > 0 {
		p := <-sub.C()
		got = append(got, p.Progress)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("delivered %v, want [1 2] (unknown and closed tokens dropped)", got)
	}
	full := e.watchProgress()
	for i := 0; i < progressBuffer+3; i++ {
		e.deliverProgress(json.RawMessage(`{"progressToken":"` + full.Token() + `","progress":1}`))
	}
	if full.Dropped() != 3 {
		t.Fatalf("dropped %d, want 3 past the buffer", full.Dropped())
	}
}
