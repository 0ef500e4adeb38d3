package supervision

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Defaults applied by RestartPolicy.WithDefaults.
const (
	DefaultInitialInterval     = 500 * time.Millisecond
	DefaultMaxInterval         = 60 * time.Second
	DefaultMultiplier          = 2.0
	DefaultRandomizationFactor = 0.5
	DefaultStableAfter         = 60 * time.Second
	DefaultMaxRestarts         = 10
	DefaultWindow              = 5 * time.Minute
)

// RestartPolicy says how a server is restarted: exponential backoff with
// jitter, reset after a stable run, and a restart intensity beyond which the
// server is given up on. The zero value of every field means its default;
// WithDefaults fills them in.
type RestartPolicy struct {
	// InitialInterval is the first restart delay. Default 500ms.
	InitialInterval time.Duration
	// MaxInterval caps every restart delay, jitter included. Default 60s.
	MaxInterval time.Duration
	// Multiplier grows the delay after each restart. Values below 1 mean the
	// default, 2; exactly 1 gives a constant delay.
	Multiplier float64
	// RandomizationFactor is the jitter: each delay is drawn uniformly from
	// interval*(1±RandomizationFactor). Zero means the default, 0.5; any
	// negative value (use -1) means no jitter; values above 1 count as 1.
	RandomizationFactor float64
	// StableAfter: the backoff resets only after the server has been ready
	// for at least this long. Default 60s.
	StableAfter time.Duration
	// MaxRestarts is the restart intensity: more than MaxRestarts failures
	// within Window and the server goes to failed. Zero means the default,
	// 10; any negative value means no limit.
	MaxRestarts int
	// Window is the period MaxRestarts is counted over. Default 5m.
	Window time.Duration
}

// WithDefaults returns a copy with every zero (or out-of-range) field set to
// its default. It is idempotent: the "none" and "no limit" markers (negative
// RandomizationFactor, negative MaxRestarts) are kept as they are.
func (p RestartPolicy) WithDefaults() RestartPolicy {
	if p.InitialInterval <= 0 {
		p.InitialInterval = DefaultInitialInterval
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = DefaultMaxInterval
	}
	if p.Multiplier < 1 {
		p.Multiplier = DefaultMultiplier
	}
	switch {
	case p.RandomizationFactor == 0:
		p.RandomizationFactor = DefaultRandomizationFactor
	case p.RandomizationFactor > 1:
		p.RandomizationFactor = 1
	}
	if p.StableAfter <= 0 {
		p.StableAfter = DefaultStableAfter
	}
	if p.MaxRestarts == 0 {
		p.MaxRestarts = DefaultMaxRestarts
	}
	if p.Window <= 0 {
		p.Window = DefaultWindow
	}
	return p
}

// Restarter is one server's restart history under a RestartPolicy. It is pure
// bookkeeping over the times its caller passes in: it starts no timers and
// never sleeps. It is not safe for concurrent use; its owner (one actor)
// calls it.
type Restarter struct {
	policy  RestartPolicy
	clock   *callerClock
	backoff *backoff.ExponentialBackOff

	ready    bool
	readyAt  time.Time
	failures []time.Time // within the intensity window, oldest first
	restarts int
	gaveUp   bool
}

// callerClock is the backoff's clock, set from the times passed to Failed,
// so the backoff never reads the wall clock.
type callerClock struct{ now time.Time }

func (c *callerClock) Now() time.Time { return c.now }

// NewRestarter returns a Restarter for p (with defaults applied).
func NewRestarter(p RestartPolicy) *Restarter {
	p = p.WithDefaults()
	jitter := p.RandomizationFactor
	if jitter < 0 {
		jitter = 0
	}
	clock := &callerClock{}
	b := &backoff.ExponentialBackOff{
		InitialInterval:     p.InitialInterval,
		RandomizationFactor: jitter,
		Multiplier:          p.Multiplier,
		MaxInterval:         p.MaxInterval,
		MaxElapsedTime:      0, // never stop on elapsed time; intensity decides when to give up
		Stop:                backoff.Stop,
		Clock:               clock,
	}
	b.Reset()
	return &Restarter{policy: p, clock: clock, backoff: b}
}

// Policy returns the policy in force, defaults applied.
func (r *Restarter) Policy() RestartPolicy { return r.policy }

// Ready records that the server became ready at now. A second call without a
// Failed in between keeps the first time.
func (r *Restarter) Ready(now time.Time) {
	if r.ready {
		return
	}
	r.ready = true
	r.readyAt = now
}

// Failed records that the server stopped, or failed to start, at now. If it
// had been ready for at least StableAfter, the backoff resets first. The
// failure is counted in the intensity window; if that makes more than
// MaxRestarts within Window (failures less than Window before now), giveUp
// is true. Otherwise delay is the next backoff interval: it grows by
// Multiplier per restart, with jitter, and never exceeds MaxInterval.
//
// Once Failed has returned giveUp it keeps doing so until Reset.
func (r *Restarter) Failed(now time.Time) (delay time.Duration, giveUp bool) {
	r.clock.now = now
	if r.ready && now.Sub(r.readyAt) >= r.policy.StableAfter {
		r.backoff.Reset()
	}
	r.ready = false
	if r.gaveUp {
		return 0, true
	}
	if r.policy.MaxRestarts >= 0 {
		r.failures = append(r.failures, now)
		horizon := now.Add(-r.policy.Window)
		old := 0
		for old < len(r.failures) && !r.failures[old].After(horizon) {
			old++
		}
		r.failures = append(r.failures[:0], r.failures[old:]...)
		if len(r.failures) > r.policy.MaxRestarts {
			r.gaveUp = true
			return 0, true
		}
	}
	r.restarts++
	// The backoff caps its base interval at MaxInterval but jitters around
	// it; the contract here is that no delay exceeds MaxInterval.
	return min(r.backoff.NextBackOff(), r.policy.MaxInterval), false
}

// Restarts returns how many restarts Failed has granted (calls that did not
// give up) since NewRestarter or Reset.
func (r *Restarter) Restarts() int { return r.restarts }

// Reset forgets the whole history: backoff, intensity window, restart count,
// readiness and a previous give-up. Use it when an operator re-enables a
// server that went to failed.
func (r *Restarter) Reset() {
	r.backoff.Reset()
	r.ready = false
	r.readyAt = time.Time{}
	r.failures = r.failures[:0]
	r.restarts = 0
	r.gaveUp = false
}
