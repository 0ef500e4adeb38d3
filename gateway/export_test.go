package gateway

import "time"

// SetClock replaces the clock of idle expiry; call it before any session.
func (g *Gateway) SetClock(now func() time.Time) { g.now = now }

// SweepIdle runs one idle sweep now.
func (g *Gateway) SweepIdle() { g.sweepIdle() }
