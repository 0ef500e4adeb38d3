package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/telemetry"
)

// What the commands that run a host or open the journal share.

// signalContext ends with Ctrl-C or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// parseInterspersed parses flags wherever they appear among the positional

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

func open(ctx context.Context, f flags, cfg *mcpvisor.Config, logger *slog.Logger) (*mcpvisor.Host, error) {
	h, err := mcpvisor.Open(ctx, hostOptions(f, cfg, logger))
	return h, lockHint(err)
}

// lockHint adds what to do about a journal another process holds, and
// makes a config error found while opening (an input nobody can answer)
// exit 2, as one found while loading the file does.
func lockHint(err error) error {
	if errors.Is(err, mcpvisor.ErrConfig) {
		return usageError(err)
	}
	if errors.Is(err, mcpvisor.ErrJournalLocked) {
		return fmt.Errorf("%w (another mcpvisor is running on this data directory; stop it or pass a different --data)", err)
	}
	return err
}

// waitAll waits until every enabled server is ready or its start has
// failed (Host.WaitSettled), at most wait unless one still starting shows
// progress (waiting.go), and reports the ones not ready.
func waitAll(ctx context.Context, h *mcpvisor.Host, wait time.Duration) []mcpvisor.ServerStatus {
	return waitStarting(ctx, h, wait, nil)
}

// notReady are the enabled servers among sts that are not ready.
func notReady(sts []mcpvisor.ServerStatus) []mcpvisor.ServerStatus {
	var bad []mcpvisor.ServerStatus
	for _, st := range sts {
		if st.Enabled && st.State != mcpvisor.StateReady {
			bad = append(bad, st)
		}
	}
	return bad
}

// notReadyError says which servers are not ready and why; one that needs a
// sign-in comes with the command that signs it in (loginCommand), for a
// command run by no one who could sign in.
func notReadyError(bad []mcpvisor.ServerStatus, f flags, viaSidecar bool) error {
	if len(bad) == 0 {
		return nil
	}
	var b strings.Builder
	for i, st := range bad {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "server %q is %s", st.Name, st.State)
		if st.LastError != "" {
			fmt.Fprintf(&b, ": %s", st.LastError)
		}
		if st.State == mcpvisor.StateNeedsAuth {
			fmt.Fprintf(&b, "\n  sign in with: %s", loginCommand(f, st.Name, viaSidecar))
		}
	}
	return &exitError{code: exitFailure, msg: b.String()}
}

// startMetrics pushes g's metrics over OTLP when the OTEL_* environment
// asks for it (telemetry.StartMetrics); stop sends the last export.
func startMetrics(ctx context.Context, logger *slog.Logger, g prometheus.Gatherer) (stop func()) {
	m, err := telemetry.StartMetrics(ctx, os.LookupEnv, g)
	if err != nil {
		logger.Warn("OTLP metrics are off", "err", err)
		return func() {}
	}
	return func() {
		if err := m.Shutdown(ctx); err != nil {
			logger.Warn("OTLP metrics: the last export was not sent", "err", err)
		}
	}
}

// startTracing is the tracing of the commands that serve calls (serve, run,
// stdio): spans over OTLP when the OTEL_* environment asks for them, else
// none (a nil provider). A setup that fails is logged, not fatal: the
// servers matter more than their traces. stop flushes the last spans; call
// it after the host has closed.
func startTracing(ctx context.Context, logger *slog.Logger) (tp trace.TracerProvider, stop func()) {
	t, err := telemetry.Start(ctx, os.LookupEnv)
	if err != nil {
		logger.Warn("tracing is off", "err", err)
		return nil, func() {}
	}
	return t.TracerProvider(), func() {
		if err := t.Shutdown(ctx); err != nil {
			logger.Warn("tracing: the last spans were not sent", "err", err)
		}
	}
}
