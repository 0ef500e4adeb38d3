package mcpvisor_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// A server's log file is open only while its lines are written: servers
// that have logged and gone quiet hold no descriptor (issue 21: at 10,000
// servers the descriptor each log held crowded out their connections).
func TestIdleServerLogsHoldNoDescriptor(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	const servers = 200
	// A command that cannot start fails at once, after writing its
	// lifecycle lines, and then waits in backoff for an hour: no process,
	// no pipe, nothing but its log.
	h := openHost(t, mcpvisor.Options{Restart: mcpvisor.RestartPolicy{
		InitialInterval: time.Hour, MaxInterval: time.Hour, RandomizationFactor: -1, MaxRestarts: -1,
	}})
	before := openFDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := make([]string, servers)
	for i := range names {
		names[i] = fmt.Sprintf("quiet%03d", i)
		sc := mcpvisor.ServerConfig{Name: names[i], Command: "/nonexistent/mcp-server-" + names[i], Enabled: true}
		if err := h.Register(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.WaitSettled(ctx, names...); err != nil {
		t.Fatal(err)
	}
	// The logs' one writer may hold one file open while it writes; the
	// journal's own files may grow by a few.
	const slack = 8
	if after := openFDs(t); after > before+slack {
		t.Errorf("%d quiet servers hold %d descriptors (%d before them), want at most %d more", servers, after, before, slack)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		b, err := os.ReadFile(h.LogFile(name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "[lifecycle] failed to start") {
			t.Fatalf("%s:\n%s\nwant its failure", h.LogFile(name), b)
		}
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// The data directory, its logs directory and a server's log are its
// user's alone (issue 38: another user read servers' stderr), whatever
// the process's umask and whichever command makes them.
func TestDataDirIsPrivate(t *testing.T) {
	data := t.TempDir() + "/data"
	h := openHost(t, mcpvisor.Options{DataDir: data, Restart: mcpvisor.RestartPolicy{
		InitialInterval: time.Hour, MaxInterval: time.Hour, RandomizationFactor: -1, MaxRestarts: -1,
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A command that cannot start still writes its lifecycle to its log.
	if err := h.Register(ctx, mcpvisor.ServerConfig{Name: "gone", Command: "/nonexistent/mcp-server", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitSettled(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{data: 0o700, data + "/logs": 0o700, h.LogFile("gone"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
}
