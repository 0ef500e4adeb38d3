package mcpvisor

import (
	"context"
	"time"
)

// WaitSettled blocks until each named server (every enabled one when none
// is named) has settled: it is ready, or the attempt to start it under way
// has failed (StateBackoff, StateFailed, or StateNeedsAuth with no sign-in
// under way), or it is disabled or stopped. Unlike WaitReady it does not
// wait through restarts: a command that is not found settles at once, a
// server that never answers at its startupTimeout, one that needs a
// sign-in at its first 401 unless Options.SignIn has begun one. It is
// what a one-shot command waits for before it reports the servers' states.
//
// It returns nil once every one has settled, whatever its state (Status
// says which); an error wrapping ErrUnknownServer for a name not
// registered; and when ctx ends first, an error wrapping ErrUnavailable
// and ctx's error that names the servers not ready. Safe for concurrent
// use; it never waits on a server's actor.
func (h *Host) WaitSettled(ctx context.Context, names ...string) error {
	return h.rt.WaitSettled(ctx, names...)
}

// LastStderr returns the last line server's process wrote to stderr since
// it last started, and when; "" for none, a remote server or an unknown
// name. While a server starts it says what it is doing (npx's download
// progress, say). It never waits on the server, and is safe concurrently.
func (h *Host) LastStderr(server string) (string, time.Time) { return h.rt.LastStderr(server) }
