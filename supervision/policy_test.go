package supervision

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestRestartPolicyWithDefaults(t *testing.T) {
	defaults := RestartPolicy{
		InitialInterval:     500 * time.Millisecond,
		MaxInterval:         60 * time.Second,
		Multiplier:          2,
		RandomizationFactor: 0.5,
		StableAfter:         60 * time.Second,
		MaxRestarts:         10,
		Window:              5 * time.Minute,
	}
	custom := RestartPolicy{
		InitialInterval:     time.Second,
		MaxInterval:         time.Minute,
		Multiplier:          3,
		RandomizationFactor: 0.2,
		StableAfter:         time.Hour,
		MaxRestarts:         4,
		Window:              time.Hour,
	}
	tests := []struct {
		name string
		in   RestartPolicy
		want RestartPolicy
	}{
		{"zero means defaults", RestartPolicy{}, defaults},
		{"set fields are kept", custom, custom},
		{"negative durations mean defaults", RestartPolicy{
			InitialInterval: -1, MaxInterval: -1, StableAfter: -1, Window: -1,
		}, defaults},
		{"multiplier below 1 means default", RestartPolicy{Multiplier: 0.5}, defaults},
		{"multiplier 1 is constant backoff", RestartPolicy{Multiplier: 1},
			func() RestartPolicy { p := defaults; p.Multiplier = 1; return p }()},
		{"negative jitter means none and is kept", RestartPolicy{RandomizationFactor: -1},
			func() RestartPolicy { p := defaults; p.RandomizationFactor = -1; return p }()},
		{"jitter above 1 is clamped", RestartPolicy{RandomizationFactor: 7},
			func() RestartPolicy { p := defaults; p.RandomizationFactor = 1; return p }()},
		{"negative max restarts means no limit and is kept", RestartPolicy{MaxRestarts: -1},
			func() RestartPolicy { p := defaults; p.MaxRestarts = -1; return p }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.WithDefaults()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("WithDefaults() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, got.WithDefaults()); diff != "" {
				t.Errorf("WithDefaults is not idempotent (-once +twice):\n%s", diff)
			}
		})
	}
}

// failN records n failures, each one delay after the last (as a restart
// loop would), and returns the delays and the time after the last one.
func failN(r *Restarter, start time.Time, n int) (delays []time.Duration, now time.Time) {
	now = start
	for range n {
		d, giveUp := r.Failed(now)
		if giveUp {
			panic("unexpected give-up")
		}
		delays = append(delays, d)
		now = now.Add(d)
	}
	return delays, now
}

func TestRestarterBackoffWithoutJitter(t *testing.T) {
	r := NewRestarter(RestartPolicy{
		InitialInterval:     time.Second,
		MaxInterval:         60 * time.Second,
		RandomizationFactor: -1,
		MaxRestarts:         -1,
	})
	got, _ := failN(r, t0, 9)
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		want[i] *= time.Second
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}
	if r.Restarts() != 9 {
		t.Errorf("Restarts() = %d, want 9", r.Restarts())
	}
}

func TestRestarterBackoffJitterBounds(t *testing.T) {
	const maxInterval = 60 * time.Second
	policy := RestartPolicy{InitialInterval: time.Second, MaxInterval: maxInterval, MaxRestarts: -1} // jitter 0.5
	firsts := map[time.Duration]bool{}
	for range 50 {
		r := NewRestarter(policy)
		delays, _ := failN(r, t0, 12)
		firsts[delays[0]] = true
		base := time.Second
		for i, d := range delays {
			lo := time.Duration(float64(base) * 0.5)
			hi := min(time.Duration(float64(base)*1.5), maxInterval)
			if d < lo || d > hi {
				t.Fatalf("delay %d = %v, want within [%v, %v]", i, d, lo, hi)
			}
			base = min(2*base, maxInterval)
		}
	}
	if len(firsts) < 2 {
		t.Errorf("50 restarters all drew the same first delay %v: no jitter", firsts)
	}
}

func TestRestarterResetsOnlyAfterStableAfter(t *testing.T) {
	tests := []struct {
		name      string
		readyFor  time.Duration // -1: never ready
		wantDelay time.Duration
	}{
		{"never ready", -1, 8 * time.Second},
		{"ready briefly", time.Second, 8 * time.Second},
		{"ready just short of StableAfter", time.Minute - time.Nanosecond, 8 * time.Second},
		{"ready exactly StableAfter", time.Minute, time.Second},
		{"ready long", time.Hour, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRestarter(RestartPolicy{
				InitialInterval:     time.Second,
				RandomizationFactor: -1,
				StableAfter:         time.Minute,
				MaxRestarts:         -1,
			})
			_, now := failN(r, t0, 3) // 1s, 2s, 4s
			if tt.readyFor >= 0 {
				r.Ready(now)
				now = now.Add(tt.readyFor)
			} else {
				now = now.Add(time.Hour) // time alone does not reset
			}
			got, giveUp := r.Failed(now)
			if giveUp || got != tt.wantDelay {
				t.Errorf("Failed() = %v, %v; want %v, false", got, giveUp, tt.wantDelay)
			}
		})
	}
}

func TestRestarterReadyTwiceKeepsFirstTime(t *testing.T) {
	r := NewRestarter(RestartPolicy{InitialInterval: time.Second, RandomizationFactor: -1, StableAfter: time.Minute})
	_, now := failN(r, t0, 3)
	r.Ready(now)
	r.Ready(now.Add(59 * time.Second))
	if d, _ := r.Failed(now.Add(time.Minute)); d != time.Second {
		t.Errorf("delay = %v, want the reset interval 1s", d)
	}
}

func TestRestarterIntensity(t *testing.T) {
	tests := []struct {
		name       string
		policy     RestartPolicy
		spacing    []time.Duration // between consecutive failures; the last one is the failure that decides
		wantGiveUp bool
	}{
		{"11th failure within window gives up", RestartPolicy{}, repeat(10, time.Second), true},
		{"10th failure within window does not", RestartPolicy{}, repeat(9, time.Second), false},
		{"11 failures spread over more than the window do not", RestartPolicy{}, repeat(10, 31*time.Second), false},
		{"first failure leaves the window exactly at Window", RestartPolicy{},
			append(repeat(9, time.Second), 5*time.Minute-9*time.Second), false},
		{"first failure still inside the window", RestartPolicy{},
			append(repeat(9, time.Second), 5*time.Minute-9*time.Second-time.Nanosecond), true},
		{"custom intensity", RestartPolicy{MaxRestarts: 2, Window: time.Minute}, repeat(2, time.Second), true},
		{"no limit", RestartPolicy{MaxRestarts: -1}, repeat(1000, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRestarter(tt.policy)
			now := t0
			if _, giveUp := r.Failed(now); giveUp {
				t.Fatal("first failure gave up")
			}
			for i, gap := range tt.spacing {
				now = now.Add(gap)
				_, giveUp := r.Failed(now)
				last := i == len(tt.spacing)-1
				if !last && giveUp {
					t.Fatalf("failure %d gave up early", i+2)
				}
				if last && giveUp != tt.wantGiveUp {
					t.Fatalf("failure %d: giveUp = %v, want %v", i+2, giveUp, tt.wantGiveUp)
				}
			}
		})
	}
}

func repeat(n int, d time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

func TestRestarterGiveUpIsStickyUntilReset(t *testing.T) {
	r := NewRestarter(RestartPolicy{InitialInterval: time.Second, RandomizationFactor: -1, MaxRestarts: 2})
	failN(r, t0, 2)
	if _, giveUp := r.Failed(t0); !giveUp {
		t.Fatal("third failure did not give up")
	}
	if r.Restarts() != 2 {
		t.Errorf("Restarts() = %d, want 2", r.Restarts())
	}
	if _, giveUp := r.Failed(t0.Add(24 * time.Hour)); !giveUp {
		t.Error("give-up was forgotten once the window passed")
	}

	r.Reset()
	if r.Restarts() != 0 {
		t.Errorf("Restarts() after Reset = %d, want 0", r.Restarts())
	}
	d, giveUp := r.Failed(t0.Add(24 * time.Hour))
	if giveUp || d != time.Second {
		t.Errorf("Failed after Reset = %v, %v; want 1s, false", d, giveUp)
	}
}

// A crash-looping server under the default policy, restarted after each
// delay on a fake clock, is given up on at its 11th failure, inside 5m.
func TestRestarterCrashLoopGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r := NewRestarter(RestartPolicy{})
		failures := 0
		for {
			failures++
			delay, giveUp := r.Failed(time.Now())
			if giveUp {
				break
			}
			if delay > DefaultMaxInterval {
				t.Fatalf("delay %v exceeds MaxInterval", delay)
			}
			time.Sleep(delay) // the actor's restart timer
		}
		if failures != 11 {
			t.Errorf("gave up at failure %d, want 11", failures)
		}
		if el := time.Since(start); el >= DefaultWindow {
			t.Errorf("gave up after %v, want within %v", el, DefaultWindow)
		}
	})
}

// A server that runs stable for StableAfter between failures restarts
// quickly every time and is never given up on.
func TestRestarterStableServerRestartsQuicklyForever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRestarter(RestartPolicy{})
		for i := range 50 {
			r.Ready(time.Now())
			time.Sleep(DefaultStableAfter)
			delay, giveUp := r.Failed(time.Now())
			if giveUp {
				t.Fatalf("failure %d gave up", i+1)
			}
			if delay > 750*time.Millisecond {
				t.Fatalf("failure %d: delay %v, want the initial interval with jitter", i+1, delay)
			}
			time.Sleep(delay)
		}
	})
}
