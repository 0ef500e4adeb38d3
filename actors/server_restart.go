package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// connGracePeriod is how long the actor waits for an exit status after
// stdout closed, so a crash is reported with its exit code or signal.
const connGracePeriod = 500 * time.Millisecond

// onConnBroken handles stdout EOF or a failed write: the process is almost
// certainly exiting; wait briefly for its exit status so callers learn why.
func (a *serverActor) onConnBroken(reason string) {
	if a.inc.conn == nil || a.inc.connDying {
		return
	}
	if a.inc.exited {
		a.onDeath(reason)
		return
	}
	a.inc.connDying = true
	a.lastErr = reason
	a.inc.graceTmr = a.after(connGracePeriod, &connGrace{gen: a.inc.gen})
}

// onUnhealthy handles a server that runs but misbehaves in a way only a
// restart mends (connUnhealthy): its process is stopped, every call in
// flight fails with err, and it is restarted by its policy, err the
// reason in its status, its log and the journal.
func (a *serverActor) onUnhealthy(err error) {
	a.slog.Warn("server unhealthy; restarting it", "err", err)
	a.logLifecycle("unhealthy: %v", err)
	a.recordLifecycle("unhealthy", err.Error(), a.inc.conn.pid(), nil)
	a.fail(err)
}

// onExited handles the reaped exit of the current connection's process.
// Running out of memory under the server's limit is a failure like any
// other (restarted by policy), said as such everywhere the exit is.
func (a *serverActor) onExited(exit supervision.ExitInfo) {
	if exit.OutOfMemory && a.inc.conn != nil {
		a.slog.Warn("server ran out of memory", "limit", supervision.FormatBytes(exit.MemoryLimit), "exit", exit.String())
	}
	a.onDeath(exit.String())
}

// onDeath handles the end of the current connection. The reason quotes
// the last lines the process wrote to stderr: a wrapper that exits says
// why there.
func (a *serverActor) onDeath(reason string) {
	if a.inc.conn == nil {
		return
	}
	tail := a.entry.stderr.take()
	reason = withStderr(reason, tail)
	wasReady := a.state == StateReady
	if wasReady {
		a.logLifecycle("exited: %s", reason)
	} else {
		a.logLifecycle("failed to start: %s", reason)
	}
	a.recordLifecycle("exited", reason, a.inc.conn.pid(), tail)
	a.fail(errors.New(reason))
}

// fail ends the current connection, fails every request in flight and
// schedules a restart by policy, or gives up: a cause that is ErrPermanent,
// or the restart intensity spent.
func (a *serverActor) fail(cause error) {
	reason := cause.Error()
	a.lastErr, a.lastCause = reason, cause
	if errors.Is(cause, oauth.ErrNeedsAuth) && a.spec.Auth != nil && a.stopErr == nil {
		a.needAuth(cause)
		return
	}
	a.dropConn(fmt.Errorf("%w: server %q: %w", ErrConnectionLost, a.spec.Name, cause))
	if a.stopErr != nil {
		return
	}
	if errors.Is(cause, ErrPermanent) {
		a.logLifecycle("failed: %s", reason)
		a.recordLifecycle("failed", reason, 0, nil)
		a.setState(StateFailed, reason)
		return
	}
	delay, giveUp := a.restarter.Failed(time.Now())
	if giveUp {
		p := a.spec.Restart
		a.logLifecycle("failed: more than %d restarts within %s; re-enable to try again", p.MaxRestarts, p.Window)
		why := fmt.Sprintf("%s (gave up: more than %d restarts within %s)", reason, p.MaxRestarts, p.Window)
		a.recordLifecycle("failed", why, 0, nil)
		a.setState(StateFailed, why)
		return
	}
	a.nextRetry = time.Now().Add(delay)
	a.logLifecycle("backoff %s before restart", delay.Round(time.Millisecond))
	a.recordLifecycle("backoff", fmt.Sprintf("%s before restart: %s", delay.Round(time.Millisecond), reason), 0, nil)
	a.setState(StateBackoff, reason)
	a.retryTmr = a.after(delay, &retryTick{gen: a.inc.gen})
}

// needAuth parks the server until it is signed in: no restarts with
// backoff, since only a sign-in can help. A token that arrived meanwhile
// (a sign-in that finished before this failure was handled) starts it at
// once.
//
// Calls queued for the server while it started keep waiting (each within
// its own timeout) while a sign-in is under way: the person may be at the
// browser right now. Without one they fail with the reason.
func (a *serverActor) needAuth(cause error) {
	reason := cause.Error()
	queued := a.queued
	a.queued = nil
	a.dropConn(fmt.Errorf("%w: server %q: %w", ErrConnectionLost, a.spec.Name, cause))
	a.queued = queued
	if a.spec.Auth.Ready() {
		a.logLifecycle("authorization obtained; starting again")
		a.start()
		return
	}
	if !a.spec.Auth.Status().Pending {
		a.failQueued(a.unavailableAs(StateNeedsAuth, reason))
	}
	if a.state != StateNeedsAuth {
		a.logLifecycle("needs sign-in: %s", reason)
		a.recordLifecycle("needs_auth", reason, 0, nil)
	}
	a.setState(StateNeedsAuth, reason)
}

// onAuthChanged starts a server that waited for sign-in once it has a
// token, parks a signed-in server whose token is gone (a sign-out) at
// once, and republishes its status (sign-in pending or failed).
func (a *serverActor) onAuthChanged() {
	if a.signedOut() {
		a.fail(fmt.Errorf("%w: signed out", oauth.ErrNeedsAuth))
		return
	}
	if a.state != StateNeedsAuth || a.stopErr != nil || !a.spec.Enabled {
		a.publish()
		return
	}
	if a.spec.Auth.Ready() {
		a.restarter.Reset()
		a.logLifecycle("signed in; starting")
		a.start()
		return
	}
	if !a.spec.Auth.Status().Pending {
		// The sign-in ended without a token: the calls waiting for it fail.
		a.failQueued(a.unavailable())
	}
	a.publish()
}

// signedOut reports whether the running connection was signed in and its
// token is now gone with no sign-in under way: the next request would
// meet a 401, so the server needs a sign-in now, not at its next call.
// A machine grant gets its token again by itself and is left running; so
// is a server that never used a token (its resource asks for none).
func (a *serverActor) signedOut() bool {
	switch a.state {
	case StateStarting, StateInitializing, StateReady:
	default:
		return false
	}
	if a.spec.Auth == nil || a.stopErr != nil || !a.spec.Enabled {
		return false
	}
	if a.spec.Auth.Ready() {
		a.inc.authorized = true
		return false
	}
	st := a.spec.Auth.Status()
	return a.inc.authorized && !st.Pending && st.Grant == oauth.GrantAuthorizationCode
}

// failQueued fails the calls queued for the server with err.
func (a *serverActor) failQueued(err error) {
	queued := a.queued
	a.queued = nil
	for _, m := range queued {
		m.reply <- callReply{err: err}
	}
}

// unavailableAs is the error a call gets from a server entering state s.
func (a *serverActor) unavailableAs(s State, reason string) error {
	return &UnavailableError{Server: a.spec.Name, State: s, Reason: reason, Cause: a.lastCause}
}

// dropConn closes the current connection (asynchronously) and fails every
// pending and queued call with err.
func (a *serverActor) dropConn(err error) {
	a.entry.fast.Store(nil)
	a.stopServing()
	if a.inc.conn != nil {
		for _, p := range a.inc.conn.pending().close(err) {
			if p.kind == reqCall {
				p.call.reply <- callReply{err: err}
			}
		}
		a.closeConn(a.inc.conn)
	}
	a.inc.end()
	queued := a.queued
	a.queued = nil
	for _, m := range queued {
		m.reply <- callReply{err: err}
	}
}

// closeConn runs the stop ladder on a goroutine and reports connClosed.
func (a *serverActor) closeConn(c conn) {
	self := a.self
	a.rt.goroutine(func() {
		ctx, cancel := context.WithTimeout(context.Background(), a.spec.StopGrace+a.spec.TermGrace+5*time.Second)
		defer cancel()
		c.close(ctx)
		a.rt.send(self, &connClosed{gen: c.generation()})
	})
	a.busy++
}

// stopLane stops the server's legacy incarnation, if it runs one (for
// good when final): its process is this server's too, so a stop or a
// disable settles once it is gone.
func (a *serverActor) stopLane(err error, final bool) {
	lane := a.rt.stopLegacy(a.entry, err, final)
	if lane == nil {
		return
	}
	a.busy++
	self := a.self
	a.rt.goroutine(func() {
		<-lane.stopped
		a.rt.send(self, &connClosed{})
	})
}

// settle completes a disable or a stop once no spawn or stop goroutine is
// outstanding, that is once no process of this server is left.
func (a *serverActor) settle() {
	if a.busy > 0 {
		return
	}
	if a.disableAck != nil {
		close(a.disableAck)
		a.disableAck = nil
	}
	if a.stopErr != nil && a.stopSelf {
		a.stopSelf = false
		// No process is left to write to the log: close it here, since a
		// server may be unregistered or replaced long before the host closes.
		_ = a.log.Close()
		a.entry.markStopped()
		a.rt.system.Root.Stop(a.self)
	}
}

func (a *serverActor) onSetEnabled(m *setEnabledMsg) {
	if a.stopErr != nil {
		close(m.done)
		return
	}
	a.spec.Enabled = m.enabled
	if a.owner != "" {
		// Placed on another member, which starts or stops it; the status
		// shown here is that member's.
		close(m.done)
		return
	}
	if a.spec.Unprefixed && !a.spec.Hidden {
		// Published with the state below; the others see this server's
		// names come or go once its status says enabled or not.
		a.checkExposure()
		defer a.rt.notifyExposure(a.entry)
	}
	if m.enabled {
		if a.state == StateDisabled || a.state == StateFailed || a.state == StateNeedsAuth {
			a.restarter.Reset()
			a.lastErr = ""
			a.logLifecycle("enabled")
			a.start()
		}
		close(m.done)
		return
	}
	if a.state == StateDisabled {
		close(m.done)
		return
	}
	a.logLifecycle("disabled")
	a.stopLane(fmt.Errorf("%w: server %q was disabled", ErrUnavailable, a.spec.Name), false)
	stopTimer(&a.retryTmr)
	a.inc.gen++ // ignore anything the old connection still reports
	a.dropConn(fmt.Errorf("%w: server %q was disabled", ErrUnavailable, a.spec.Name))
	a.setState(StateDisabled, "")
	if a.disableAck != nil {
		close(a.disableAck)
	}
	a.disableAck = m.done
	a.settle()
}

// onRestart stops the server's process, if it has one, and starts it again
// now, whatever state it was in short of disabled or stopped: the
// operator's restart. Calls in flight fail as unavailable; the restart
// count and the backoff start afresh, as when it is re-enabled.
func (a *serverActor) onRestart() error {
	switch {
	case a.stopErr != nil:
		return fmt.Errorf("%w: %q", ErrUnknownServer, a.spec.Name)
	case !a.spec.Enabled || a.state == StateDisabled:
		return fmt.Errorf("%w: server %q is disabled: enable it instead", ErrUnavailable, a.spec.Name)
	case a.owner != "":
		return fmt.Errorf("%w: server %q runs on cluster member %s: restart it there", ErrUnavailable, a.spec.Name, a.owner)
	}
	a.logLifecycle("restart requested")
	a.rt.stopLegacy(a.entry, fmt.Errorf("%w: server %q is restarting on request", ErrUnavailable, a.spec.Name), false)
	stopTimer(&a.retryTmr)
	a.inc.gen++ // ignore anything the old connection still reports
	a.dropConn(fmt.Errorf("%w: server %q is restarting on request", ErrUnavailable, a.spec.Name))
	a.restarter.Reset()
	a.lastErr = ""
	a.start()
	return nil
}

// onStop stops the server for good. With stopSelf the actor stops itself
// once its process is gone; without it (protoactor is already stopping the
// actor) the process is still stopped, by goroutines the runtime joins.
func (a *serverActor) onStop(err error, stopSelf bool) {
	if a.stopErr != nil {
		return
	}
	a.stopErr = err
	a.stopSelf = stopSelf
	a.stopLane(err, true)
	stopTimer(&a.retryTmr)
	a.inc.gen++
	a.dropConn(err)
	a.setState(StateStopped, a.lastErr)
	a.logLifecycle("stopped")
	a.recordLifecycle("stopped", err.Error(), 0, nil)
	a.settle()
}

// unavailable explains why a call cannot be sent now.
func (a *serverActor) unavailable() error {
	e := &UnavailableError{Server: a.spec.Name, State: a.state, Reason: a.lastErr, Cause: a.lastCause}
	if a.state == StateBackoff {
		e.RetryAfter = time.Until(a.nextRetry)
	}
	return e
}

// UnavailableError is returned for a call to a server that is not ready:
// restarting (with RetryAfter), disabled, failed or stopped.
type UnavailableError struct {
	Server     string
	State      State
	Reason     string
	Cause      error // the failure behind Reason, when known
	RetryAfter time.Duration
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q is %s", e.Server, e.State)
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter.Round(time.Millisecond))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the failure behind it (e.g. ErrPrivateAddress).
func (e *UnavailableError) Unwrap() error { return e.Cause }
