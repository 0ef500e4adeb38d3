package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// Servers that misbehave slowly, without exiting: each is found out, its
// process restarted by its policy with the reason in its status events and
// its log, the call it held fails with that reason long before its
// timeout, and a healthy neighbour answers all along.

// callsWhileNeighbourAnswers runs calls calls to tool at once and, until
// they return, calls the neighbour ok's echo, each of which must answer.
// It returns the calls' errors and how long the last took.
func callsWhileNeighbourAnswers(t *testing.T, h *mcpvisor.Host, calls int, tool, args string) ([]error, time.Duration) {
	t.Helper()
	done := make(chan error, calls)
	start := time.Now()
	for range calls {
		go func() {
			_, err := h.Call(context.Background(), tool, json.RawMessage(args))
			done <- err
		}()
	}
	var errs []error
	for n := 0; ; n++ {
		select {
		case err := <-done:
			if errs = append(errs, err); len(errs) == calls {
				took := time.Since(start)
				t.Logf("%d calls to %s failed within %s; the neighbour answered %d calls meanwhile", calls, tool, took.Round(time.Millisecond), n)
				return errs, took
			}
			continue
		default:
		}
		call(t, h, "mcp__ok__echo", `{"n":1}`)
	}
}

// checkRestarted waits for server to go to backoff with a reason holding
// want and to be ready again, then checks its restart count and log.
func checkRestarted(t *testing.T, h *mcpvisor.Host, events <-chan mcpvisor.Event, dataDir, server, want string) {
	t.Helper()
	ev := waitState(t, events, server, mcpvisor.StateBackoff, mcpvisor.StateFailed)
	if ev.State != mcpvisor.StateBackoff || !strings.Contains(ev.Err, want) {
		t.Errorf("%s went to %s (%q), want backoff with a reason holding %q", server, ev.State, ev.Err, want)
	}
	waitState(t, events, server, mcpvisor.StateReady)
	if st := status(t, h, server); st.Restarts != 1 || st.State != mcpvisor.StateReady {
		t.Errorf("%s: %s with %d restarts, want ready after 1", server, st.State, st.Restarts)
	}
	if log := waitLog(t, dataDir, server, "[lifecycle] unhealthy: "); !strings.Contains(log, want) {
		t.Errorf("log of %s does not give the reason %q:\n%s", server, want, log)
	}
	call(t, h, "mcp__ok__echo", `{"after":true}`)
}

// A server that answers a call with a line that never ends: the host stops
// reading it past 16 frame limits (256 MiB at least) instead of discarding
// for ever, and restarts it.
func TestEndlessOutputRestartsServer(t *testing.T) {
	const limit = 64 << 10
	onEvent, events := eventSink()
	dataDir := t.TempDir()
	endless := mcptest("endless", "-endless-output")
	endless.Timeout = mcpvisor.Duration(time.Hour) // the failure must not come from a timeout
	h := openHost(t, mcpvisor.Options{MaxFrame: limit, OnEvent: onEvent, DataDir: dataDir}, endless, mcptest("ok"))
	waitReadyEvents(t, events, "endless", "ok")

	errs, _ := callsWhileNeighbourAnswers(t, h, 1, "mcp__endless__echo", `{}`)
	if err := errs[0]; !errors.Is(err, mcpvisor.ErrConnectionLost) || !errors.Is(err, mcpvisor.ErrFrameTooLarge) || !strings.Contains(err.Error(), "without a newline") {
		t.Fatalf("call answered by a line without end = %v, want ErrConnectionLost and ErrFrameTooLarge saying there was no newline", err)
	}
	checkRestarted(t, h, events, dataDir, "endless", "bytes without a newline (frame limit 65536)")
}

// A server that stops reading its stdin: a second after that shows, the
// calls it holds fail with ErrNotReading, not at their timeout (a minute),
// and the server is restarted. It shows when a write blocks (two calls,
// more than the pipe holds), and when a frame the pipe took whole, sent
// while the server owed nothing, is still in the pipe (the first call).
func TestServerThatStopsReadingIsRestarted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		calls  int
		args   string
		reason string
	}{
		{"write blocks", 2, `{"pad":"` + strings.Repeat("x", 256<<10) + `"}`, "its stdin has taken nothing for"},
		{"first small call", 1, `{"text":"hi"}`, "waited in its stdin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEvent, events := eventSink()
			dataDir := t.TempDir()
			deaf := mcptest("deaf", "-stop-reading-after-list")
			deaf.Timeout = mcpvisor.Duration(time.Minute)
			h := openHost(t, mcpvisor.Options{OnEvent: onEvent, DataDir: dataDir}, deaf, mcptest("ok"))
			waitReadyEvents(t, events, "deaf", "ok")

			errs, took := callsWhileNeighbourAnswers(t, h, tc.calls, "mcp__deaf__echo", tc.args)
			for _, err := range errs {
				if !errors.Is(err, mcpvisor.ErrNotReading) || errors.Is(err, mcpvisor.ErrTimeout) {
					t.Fatalf("call to a server that stopped reading = %v, want ErrNotReading", err)
				}
			}
			if took > 30*time.Second {
				t.Errorf("the calls failed after %s, want about a second", took)
			}
			checkRestarted(t, h, events, dataDir, "deaf", tc.reason)
		})
	}
}
