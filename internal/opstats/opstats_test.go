package opstats

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// t0 is a time on a step of 1 s, 10 s and 1 min.
var t0 = time.Unix(1_699_999_980, 0).UTC()

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// snap is one server's statistics as of now.
func snap(t *testing.T, r *Recorder, server string, now time.Time) Server {
	t.Helper()
	v, ok := r.Snapshot(now)[server]
	if !ok {
		t.Fatalf("no statistics of %s as of %v", server, now)
	}
	return v
}

// exactQuantile is the nearest-rank q-quantile of samples, in
// milliseconds.
func exactQuantile(samples []time.Duration, q float64) float64 {
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	return float64(s[max(rank, 1)-1]) / float64(time.Millisecond)
}

// checkQuantile checks got against the true value: the upper bound of its
// bucket, so never under it and at most 19% over (plus the microsecond
// the milliseconds are rounded to).
func checkQuantile(t *testing.T, what string, got, want float64) {
	t.Helper()
	const rounding = 0.0005 // ms
	if got < want-rounding || got > want*1.19+rounding {
		t.Errorf("%s = %.4f ms, want %.4f ms to %.4f ms (the true value, at most 19%% over)", what, got, want, want*1.19)
	}
}

// The quantiles of known distributions, from one step's histogram, the
// last minute's and the window's, are the true ones at most 19% over.
func TestQuantiles(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	uniform := func(n int, lo, hi time.Duration) []time.Duration {
		var out []time.Duration
		for i := range n {
			out = append(out, lo+(hi-lo)*time.Duration(i)/time.Duration(n-1))
		}
		return out
	}
	var expo, mixed []time.Duration
	for i := range 1000 { // exponential, mean 20 ms, by its quantile function
		expo = append(expo, ms(-20*math.Log(1-(float64(i)+.5)/1000)))
	}
	for i := range 200 { // mostly fast, a slow tail of 2%
		if i%50 == 0 {
			mixed = append(mixed, 3*time.Second+time.Duration(i)*time.Millisecond)
		} else {
			mixed = append(mixed, ms(2+float64(i%7)))
		}
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
	}{
		{"one call", []time.Duration{ms(42)}},
		{"constant 1 ms", slices.Repeat([]time.Duration{time.Millisecond}, 100)},
		{"a bucket bound exactly (20 µs)", slices.Repeat([]time.Duration{20 * time.Microsecond}, 10)},
		{"uniform 1 ms to 1 s", uniform(1000, time.Millisecond, time.Second)},
		{"uniform 50 µs to 300 µs", uniform(301, 50*time.Microsecond, 300*time.Microsecond)},
		{"exponential, mean 20 ms", expo},
		{"fast with a slow 2% tail", mixed},
		{"one slow call in 100", append(slices.Repeat([]time.Duration{ms(5)}, 99), 10*time.Second)},
		{"one slow call in 101", append(slices.Repeat([]time.Duration{ms(5)}, 100), 10*time.Second)},
		// Calls of tens of seconds and minutes are measured too, not
		// reported as some seconds.
		{"long calls, 10 s to 5 min", uniform(100, 10*time.Second, 5*time.Minute)},
		{"bimodal 1 ms and 30 s", append(slices.Repeat([]time.Duration{time.Millisecond}, 50), slices.Repeat([]time.Duration{30 * time.Second}, 50)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(10*time.Minute, 10*time.Second)
			// Half in one step, half in the next, both in the last minute.
			for i, d := range tc.samples {
				r.ObserveCall("s", at(time.Duration(i%2)*10*time.Second+time.Second), d, false)
			}
			now := at(15 * time.Second)
			v := snap(t, r, "s", now)
			p50, p99 := exactQuantile(tc.samples, .5), exactQuantile(tc.samples, .99)
			checkQuantile(t, "Recent.P50", v.Recent.P50, p50)
			checkQuantile(t, "Recent.P99", v.Recent.P99, p99)
			checkQuantile(t, "Hour.P50", v.Hour.P50, p50)
			checkQuantile(t, "Hour.P99", v.Hour.P99, p99)
			if v.Recent.Calls != uint64(len(tc.samples)) || v.Hour.Calls != uint64(len(tc.samples)) {
				t.Errorf("calls: recent %d, hour %d, want %d", v.Recent.Calls, v.Hour.Calls, len(tc.samples))
			}
			// Each step's own.
			last := v.Points[len(v.Points)-1]
			var odd []time.Duration
			for i, d := range tc.samples {
				if i%2 == 1 {
					odd = append(odd, d)
				}
			}
			if len(odd) > 0 {
				checkQuantile(t, "the last point's P50", last.P50, exactQuantile(odd, .5))
				checkQuantile(t, "the last point's P99", last.P99, exactQuantile(odd, .99))
			}
		})
	}
}

// Every duration lands in a bucket whose upper bound is at most 19% over
// it, up to the last bucket, which holds everything from about 11 minutes
// on; a duration of 0 or less is in the first.
func TestBuckets(t *testing.T) {
	for d := 10 * time.Microsecond; d < 11*time.Minute; d = d*103/100 + time.Nanosecond {
		b := bucketOf(d.Seconds())
		if up := upper(b); up < d.Seconds() || up > d.Seconds()*1.19 {
			t.Fatalf("%v is in bucket %d, up to %v", d, b, time.Duration(up*1e9))
		}
		if b > 0 && upper(b-1) >= d.Seconds() {
			t.Fatalf("%v is in bucket %d, but bucket %d goes up to %v", d, b, b-1, time.Duration(upper(b-1)*1e9))
		}
	}
	for _, d := range []time.Duration{-time.Second, 0, time.Microsecond, 10 * time.Microsecond} {
		if b := bucketOf(d.Seconds()); b != 0 {
			t.Errorf("%v is in bucket %d, want 0", d, b)
		}
	}
	if from := time.Duration(upper(histBuckets-2) * 1e9); from < 10*time.Minute || from > 12*time.Minute {
		t.Errorf("the last bucket holds everything from %v on, want about 11 minutes", from)
	}
	for _, d := range []time.Duration{12 * time.Minute, 24 * time.Hour} {
		if b := bucketOf(d.Seconds()); b != histBuckets-1 {
			t.Errorf("%v is in bucket %d, want the last, %d", d, b, histBuckets-1)
		}
	}
	// The quantile of calls in the last bucket is its upper bound.
	r := New(time.Minute, time.Second)
	r.ObserveCall("s", t0, time.Hour, false)
	if v := snap(t, r, "s", t0); v.Recent.P99 != math.Round(upper(histBuckets-1)*1e6)/1e3 {
		t.Errorf("p99 of a call of an hour: %v ms", v.Recent.P99)
	}
}

// Calls, rates and error rates per step, and summed over the last minute
// and the window; pending calls are the most sampled in a step.
func TestRatesAndErrors(t *testing.T) {
	const step = 10 * time.Second
	r := New(10*time.Minute, step) // 60 steps
	// Step k (0..59) has k+1 calls, every third one failed; the even
	// steps' pending samples are k and k/2.
	var calls, errs [60]int
	for k := range 60 {
		for c := range k + 1 {
			failed := c%3 == 0
			r.ObserveCall("s", at(time.Duration(k)*step+time.Duration(c)*time.Millisecond), time.Millisecond, failed)
			calls[k]++
			if failed {
				errs[k]++
			}
		}
		if k%2 == 0 {
			r.SamplePending("s", at(time.Duration(k)*step+time.Second), k)
			r.SamplePending("s", at(time.Duration(k)*step+2*time.Second), k/2)
		}
	}
	now := at(59*step + 5*time.Second) // half way through the last step
	v := snap(t, r, "s", now)
	if len(v.Points) != 60 {
		t.Fatalf("%d points, want 60", len(v.Points))
	}
	for k, p := range v.Points {
		wantPending := 0
		if k%2 == 0 {
			wantPending = k
		}
		if !p.Time.Equal(at(time.Duration(k)*step)) || int(p.Calls) != calls[k] || p.Pending != wantPending ||
			!near(p.Rate, float64(calls[k])/10) || !near(p.ErrorRate, float64(errs[k])/float64(calls[k])) {
			t.Errorf("point %d: %+v; want %v, %d calls, rate %v, error rate %v, pending %d", k, p, at(time.Duration(k)*step),
				calls[k], float64(calls[k])/10, float64(errs[k])/float64(calls[k]), wantPending)
		}
	}
	sum := func(a []int) (n uint64) {
		for _, x := range a {
			n += uint64(x)
		}
		return n
	}
	// The last minute: the steps from the one a minute ago (excluded, it
	// began before then) to the one under way, 55 s of calls.
	rc, re := sum(calls[54:]), sum(errs[54:])
	want := Summary{Calls: rc, Errors: re, Rate: float64(rc) / 55, ErrorRate: float64(re) / float64(rc), P50: v.Recent.P50, P99: v.Recent.P99}
	if !summaryNear(v.Recent, want) {
		t.Errorf("Recent = %+v, want %+v", v.Recent, want)
	}
	hc, he := sum(calls[:]), sum(errs[:])
	want = Summary{Calls: hc, Errors: he, Rate: float64(hc) / (59*10 + 5), ErrorRate: float64(he) / float64(hc), P50: v.Hour.P50, P99: v.Hour.P99}
	if !summaryNear(v.Hour, want) {
		t.Errorf("Hour = %+v, want %+v", v.Hour, want)
	}
	checkQuantile(t, "Hour.P50", v.Hour.P50, 1)

	// A steady 2 calls a second reads 2 a second wherever in its step
	// the snapshot falls.
	for _, off := range []time.Duration{0, time.Millisecond, 5 * time.Second, step - time.Millisecond} {
		now := at(9*time.Minute + 50*time.Second + off) // the last step of the window
		r := New(10*time.Minute, step)
		for d := time.Duration(0); !at(d).After(now); d += 500 * time.Millisecond {
			r.ObserveCall("steady", at(d), time.Millisecond, false)
		}
		v := snap(t, r, "steady", now)
		elapsed := (9*time.Minute + 50*time.Second + off).Seconds()
		wantHour := math.Floor(elapsed*2) + 1 // the calls at 0, 0.5 s, ..., now
		if v.Hour.Calls != uint64(wantHour) || math.Abs(v.Recent.Rate-2) > 2.0/50 || math.Abs(v.Hour.Rate-2) > 2.0/590 {
			t.Errorf("%v into the step: recent %+v, hour %+v; want a rate of 2 and %v calls in the hour", off, v.Recent, v.Hour, wantHour)
		}
	}

	// No calls: rates, error rates and quantiles are 0.
	r = New(time.Minute, step)
	r.SamplePending("idle", t0, 3)
	v = snap(t, r, "idle", t0)
	if p := v.Points[len(v.Points)-1]; v.Recent != (Summary{}) || v.Hour != (Summary{}) || !p.Time.Equal(t0) || p.Calls != 0 || p.Pending != 3 {
		t.Errorf("idle: recent %+v, hour %+v, last point %+v", v.Recent, v.Hour, v.Points[len(v.Points)-1])
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func summaryNear(a, b Summary) bool {
	return a.Calls == b.Calls && a.Errors == b.Errors && near(a.Rate, b.Rate) && near(a.ErrorRate, b.ErrorRate) &&
		a.P50 == b.P50 && a.P99 == b.P99
}

// The points are the window, one per step, oldest first, each at its
// step's start, the last the step now is in; empty steps are included.
func TestPointsAligned(t *testing.T) {
	for _, tc := range []struct {
		window, step time.Duration
		n            int
	}{
		{0, 0, 360}, // the defaults: an hour in ten-second steps
		{10 * time.Minute, 10 * time.Second, 60},
		{time.Minute, 7 * time.Second, 9}, // not a multiple: rounded up
		{time.Hour, time.Minute, 60},
	} {
		t.Run(fmt.Sprintf("%v in %v", tc.window, tc.step), func(t *testing.T) {
			r := New(tc.window, tc.step)
			step := tc.step
			if step == 0 {
				step = DefaultStep
			}
			if got, want := r.Window(), time.Duration(tc.n)*step; got != want {
				t.Errorf("Window() = %v, want %v", got, want)
			}
			for _, now := range []time.Time{t0, at(step / 2), at(3*step + step - 1), at(12345 * time.Millisecond)} {
				r.ObserveCall("s", now, time.Millisecond, false)
				v := snap(t, r, "s", now)
				if len(v.Points) != tc.n {
					t.Fatalf("%d points, want %d", len(v.Points), tc.n)
				}
				last := v.Points[tc.n-1]
				if now.Before(last.Time) || !now.Before(last.Time.Add(step)) || last.Calls == 0 {
					t.Errorf("as of %v the last point is %+v", now, last)
				}
				for i, p := range v.Points {
					if p.Time.UnixNano()%int64(step) != 0 {
						t.Errorf("point %d at %v is not on a step", i, p.Time)
					}
					if i > 0 && p.Time.Sub(v.Points[i-1].Time) != step {
						t.Errorf("point %d at %v, %v after the one before", i, p.Time, p.Time.Sub(v.Points[i-1].Time))
					}
				}
			}
		})
	}
}

// Steps older than the window roll off: out of the points and the sums,
// and a ring slot reused for a newer step holds only the newer step's
// calls, errors, latencies and pending calls. An observation a window or
// more older than the newest is dropped, not mixed in.
func TestRollOff(t *testing.T) {
	const step = 10 * time.Second
	r := New(time.Minute, step) // 6 steps
	for range 5 {
		r.ObserveCall("s", at(time.Second), 2*time.Second, true)
	}
	r.SamplePending("s", at(time.Second), 9)
	r.ObserveCall("s", at(20*time.Second), time.Millisecond, false)

	v := snap(t, r, "s", at(55*time.Second)) // steps 0..5: all of it
	if v.Hour.Calls != 6 || v.Hour.Errors != 5 || v.Points[0].Calls != 5 || v.Points[0].Pending != 9 {
		t.Fatalf("within the window: hour %+v, first point %+v", v.Hour, v.Points[0])
	}
	v = snap(t, r, "s", at(60*time.Second)) // steps 1..6: step 0 rolled off
	if v.Hour.Calls != 1 || v.Hour.Errors != 0 || v.Hour.P99 > 1.19 || !v.Points[0].Time.Equal(at(step)) {
		t.Errorf("step 0 rolled off: hour %+v, first point %+v", v.Hour, v.Points[0])
	}
	for _, p := range v.Points {
		if p.Pending != 0 || (p.Calls != 0) != p.Time.Equal(at(20*time.Second)) {
			t.Errorf("point %+v", p)
		}
	}

	// Step 6 reuses step 0's slot: only its own figures.
	r.ObserveCall("s", at(61*time.Second), 3*time.Millisecond, false)
	r.SamplePending("s", at(62*time.Second), 1)
	v = snap(t, r, "s", at(65*time.Second))
	last := v.Points[len(v.Points)-1]
	if last.Calls != 1 || last.ErrorRate != 0 || last.Pending != 1 || last.P99 > 3*1.19 || v.Hour.Calls != 2 || v.Hour.Errors != 0 {
		t.Errorf("the reused slot: %+v; hour %+v", last, v.Hour)
	}

	// A call observed as finished in step 0, a window older than step 6,
	// changes nothing.
	r.ObserveCall("s", at(time.Second), time.Hour, true)
	r.SamplePending("s", at(time.Second), 50)
	if again := snap(t, r, "s", at(65*time.Second)); !equalServers(again, v) {
		t.Errorf("an observation a window old changed the figures:\n%+v\nwant\n%+v", again, v)
	}

	// Long idle: whatever the slots hold is older than the window.
	v = snap(t, r, "s", at(10*time.Minute))
	if v.Hour != (Summary{}) || v.Recent != (Summary{}) {
		t.Errorf("after ten idle minutes: hour %+v, recent %+v", v.Hour, v.Recent)
	}
	for _, p := range v.Points {
		if p.Calls != 0 || p.Pending != 0 || p.P99 != 0 {
			t.Errorf("after ten idle minutes: point %+v", p)
		}
	}
}

func equalServers(a, b Server) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// The timeline is the state changes in the window, preceded by the last
// one before it; a repeat of the state without an error is folded; a
// repeat with one is kept. Events are the last 20 changes, whenever.
func TestTimeline(t *testing.T) {
	r := New(time.Minute, 10*time.Second)
	r.State("s", at(0), "starting", "")
	r.State("s", at(time.Second), "ready", "")
	r.State("s", at(2*time.Second), "ready", "") // folded
	r.State("s", at(30*time.Second), "failed", "exit status 1")
	r.State("s", at(31*time.Second), "failed", "exit status 2") // kept: says why
	r.State("s", at(40*time.Second), "starting", "")
	r.State("s", at(41*time.Second), "ready", "")

	all := []Transition{{at(0), "starting", ""}, {at(time.Second), "ready", ""}, {at(30 * time.Second), "failed", "exit status 1"},
		{at(31 * time.Second), "failed", "exit status 2"}, {at(40 * time.Second), "starting", ""}, {at(41 * time.Second), "ready", ""}}
	for _, tc := range []struct {
		now  time.Time
		want []Transition
	}{
		{at(50 * time.Second), all},              // the window opens at 0
		{at(60 * time.Second), all[1:]},          // opens at 10 s, in ready (since 1 s)
		{at(95 * time.Second), all[3:]},          // opens at 40 s: in failed; starting at 40 s is in it
		{at(100 * time.Second), all[5:]},         // opens at 50 s, in ready since 41 s
		{at(10 * time.Minute), all[len(all)-1:]}, // long after: the state it is in
	} {
		v := snap(t, r, "s", tc.now)
		if !slices.Equal(v.Timeline, tc.want) {
			t.Errorf("as of %v: timeline %v, want %v", tc.now.Sub(t0), v.Timeline, tc.want)
		}
		if !slices.Equal(v.Events, all) {
			t.Errorf("as of %v: events %v, want %v", tc.now.Sub(t0), v.Events, all)
		}
	}

	// A server with no state yet has empty lists, not null ones.
	r.ObserveCall("new", t0, time.Millisecond, false)
	b, _ := json.Marshal(snap(t, r, "new", t0))
	if !strings.Contains(string(b), `"timeline":[]`) || !strings.Contains(string(b), `"events":[]`) {
		t.Errorf("a server without states: %s", b)
	}
}

// The timeline keeps at most 512 changes and the events 20, the newest.
func TestTimelineBounded(t *testing.T) {
	r := New(time.Hour, 10*time.Second)
	states := []string{"ready", "failed"}
	const n = 1300
	var all []Transition
	for i := range n {
		tr := Transition{Time: at(time.Duration(i) * time.Second), State: states[i%2]}
		r.State("s", tr.Time, tr.State, "")
		all = append(all, tr)
	}
	v := snap(t, r, "s", at(n*time.Second))
	if len(v.Timeline) != maxTransitions || len(v.Events) != maxEvents {
		t.Fatalf("%d transitions and %d events, want %d and %d", len(v.Timeline), len(v.Events), maxTransitions, maxEvents)
	}
	if !slices.Equal(v.Timeline, all[n-maxTransitions:]) || !slices.Equal(v.Events, all[n-maxEvents:]) {
		t.Errorf("not the newest: timeline from %v, events from %v", v.Timeline[0].Time.Sub(t0), v.Events[0].Time.Sub(t0))
	}
	// The snapshot is a copy.
	v.Timeline[0].State, v.Events[0].State = "changed", "changed"
	if w := snap(t, r, "s", at(n*time.Second)); w.Timeline[0].State == "changed" || w.Events[0].State == "changed" {
		t.Error("changing a snapshot changed the recorder")
	}
}

// Forget drops a server's statistics, and only its; a later observation
// starts afresh.
func TestForget(t *testing.T) {
	r := New(time.Minute, 10*time.Second)
	for _, s := range []string{"a", "b"} {
		r.ObserveCall(s, t0, time.Millisecond, true)
		r.SamplePending(s, t0, 2)
		r.State(s, t0, "ready", "")
	}
	r.Forget("a")
	r.Forget("nosuch")
	m := r.Snapshot(t0)
	if _, ok := m["a"]; ok || len(m) != 1 || m["b"].Hour.Calls != 1 {
		t.Fatalf("after Forget(a): %v", m)
	}
	r.ObserveCall("a", at(time.Second), time.Millisecond, false)
	v := snap(t, r, "a", at(time.Second))
	if v.Hour.Calls != 1 || v.Hour.Errors != 0 || len(v.Timeline) != 0 || len(v.Events) != 0 || v.Points[len(v.Points)-1].Pending != 0 {
		t.Errorf("a, observed again: %+v", v)
	}
}

// Observing, sampling, state changes, snapshots and forgetting, all at
// once: nothing is lost (run with -race).
func TestConcurrent(t *testing.T) {
	r := New(time.Minute, time.Second)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				now := at(time.Duration(i%50) * time.Second)
				r.ObserveCall("kept", now, time.Duration(i)*time.Microsecond, i%4 == 0)
				r.SamplePending("kept", now, w)
				r.ObserveCall("gone", now, time.Millisecond, false)
				r.State("kept", now, []string{"ready", "failed"}[i%2], "")
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			for _, v := range r.Snapshot(at(49 * time.Second)) {
				_ = v.Recent.P99
			}
			r.Forget("gone")
		}
	})
	wg.Wait()
	v := snap(t, r, "kept", at(49*time.Second))
	if v.Hour.Calls != workers*each || v.Hour.Errors != workers*each/4 {
		t.Errorf("hour: %+v, want %d calls, %d errors", v.Hour, workers*each, workers*each/4)
	}
	pending := 0
	for _, p := range v.Points {
		pending = max(pending, p.Pending)
	}
	if pending != workers-1 || len(v.Timeline) == 0 || len(v.Timeline) > maxTransitions {
		t.Errorf("most pending %d, want %d; %d transitions", pending, workers-1, len(v.Timeline))
	}
}
