//go:build linux

package actors

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// procBound is how long these tests wait for something that should happen
// at once; reaching it is a failure.
const procBound = 20 * time.Second

// realRuntime is a Runtime that spawns real processes, closed when the test
// ends; with a journal when store is not nil.
func realRuntime(t *testing.T, store *persistence.Store, opts Options) *Runtime {
	t.Helper()
	var j *Journal
	if store != nil {
		j = NewJournal(store, JournalOptions{}, nil)
		opts.Journal = j
	}
	rt := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), procBound)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if j != nil {
			j.Close()
		}
	})
	return rt
}

func shellSpec(name, script string) ServerSpec {
	return ServerSpec{
		Name: name, Command: "sh", Args: []string{"-c", script}, Enabled: true,
		Env:       supervision.BaseEnv(os.Environ()),
		Restart:   supervision.RestartPolicy{InitialInterval: time.Hour, MaxInterval: time.Hour}, // one failure, then quiet
		StopGrace: 50 * time.Millisecond,                                                         // sleep ignores its stdin closing
	}
}

// waitServer polls the server's status until ok says so.
func waitServer(t *testing.T, rt *Runtime, name string, ok func(ServerStatus) bool) ServerStatus {
	t.Helper()
	deadline := time.Now().Add(procBound)
	for {
		ch := rt.StatusChanged()
		st, found := rt.ServerStatus(name)
		if found && ok(st) {
			return st
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("server %s: status %+v never came", name, st)
		}
	}
}

// A wrapper (npx, uvx, sh -c) that exits says why on stderr: the exit's
// reason quotes its last lines rather than a bare "exit status 2" (issue
// 22, finding 5).
func TestWrapperExitQuotesStderr(t *testing.T) {
	rt := realRuntime(t, nil, Options{})
	spec := shellSpec("npx", `echo "npm ERR! code E404" >&2; echo >&2; echo "npm ERR! 404 Not Found - GET https://registry.npmjs.org/@x%2fnope" >&2; exit 2`)
	if err := rt.Register(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	st := waitServer(t, rt, "npx", func(st ServerStatus) bool { return st.State == StateBackoff })
	want := `exit status 2; stderr ends: "npm ERR! code E404", "npm ERR! 404 Not Found - GET https://registry.npmjs.org/@x%2fnope"`
	if st.LastError != want {
		t.Errorf("LastError = %q\nwant        %q", st.LastError, want)
	}
}

// A missing cwd is named as such, not as "fork/exec sh: no such file or
// directory", which blames the command (issue 22, finding 5).
func TestMissingWorkDirSaysSo(t *testing.T) {
	rt := realRuntime(t, nil, Options{})
	spec := shellSpec("nocwd", "cat")
	spec.Dir = filepath.Join(t.TempDir(), "gone")
	if err := rt.Register(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	st := waitServer(t, rt, "nocwd", func(st ServerStatus) bool { return st.State == StateBackoff })
	want := `failed to start: start "sh": bad working directory: ` + strconv.Quote(spec.Dir) + ` does not exist`
	if st.LastError != want {
		t.Errorf("LastError = %q\nwant        %q", st.LastError, want)
	}
}

func TestStatusSaysContainmentAndLimits(t *testing.T) {
	for _, pgOnly := range []bool{false, true} {
		t.Run("processGroupsOnly="+strconv.FormatBool(pgOnly), func(t *testing.T) {
			rt := realRuntime(t, nil, Options{Containment: supervision.ContainmentOptions{ProcessGroupsOnly: pgOnly}})
			spec := shellSpec("held", "exec sleep 1000") // never answers: stays initializing
			spec.Limits = supervision.Limits{Memory: 256 << 20, CPU: 0.5}
			if err := rt.Register(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			st := waitServer(t, rt, "held", func(st ServerStatus) bool { return st.Containment != nil })
			c := st.Containment
			want := string(rt.containment.Mode())
			if c.Mode != want || pgOnly && c.Mode != "process-group" {
				t.Fatalf("containment %+v, want mode %s", c, want)
			}
			if c.Mode == "cgroup" {
				procs, err := os.ReadFile(filepath.Join(c.Cgroup, "cgroup.procs"))
				if err != nil || strings.TrimSpace(string(procs)) != strconv.Itoa(st.PID) {
					t.Errorf("cgroup %s holds %q (%v), want the server's pid %d", c.Cgroup, procs, err, st.PID)
				}
			} else if c.Fallback == "" {
				t.Error("process-group containment without the reason")
			}
			if len(c.Limits) != 2 || !strings.HasPrefix(c.Limits[0], "memory 256 MiB: ") || !strings.HasPrefix(c.Limits[1], "cpu 0.5: ") {
				t.Errorf("limits %q", c.Limits)
			}
		})
	}
}

// Running out of memory under the server's limit is said as such in its
// status and the journal, and the server restarts by its policy.
func TestOutOfMemoryReportedAndRestarted(t *testing.T) {
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt := realRuntime(t, store, Options{Containment: supervision.ContainmentOptions{ProcessGroupsOnly: true}})
	// Without a cgroup's memory.events, a SIGKILL the host did not send,
	// under a memory limit, is the OOM killer's: this server sends it.
	spec := shellSpec("hog", `kill -KILL $$`)
	spec.Limits = supervision.Limits{Memory: 64 << 20}
	spec.Restart = supervision.RestartPolicy{InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, MaxRestarts: -1}
	if err := rt.Register(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	st := waitServer(t, rt, "hog", func(st ServerStatus) bool { return st.Restarts >= 1 })
	if want := "out of memory (limit 64 MiB): killed by SIGKILL"; !strings.HasPrefix(st.LastError, want) {
		t.Errorf("LastError = %q, want it to start %q", st.LastError, want)
	}
	for deadline := time.Now().Add(procBound); ; time.Sleep(5 * time.Millisecond) {
		hs, err := store.History(persistence.HistoryFilter{Kind: persistence.HistoryLifecycle})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range hs {
			found = found || h.Transition == "exited" && strings.HasPrefix(h.Detail, "out of memory (limit 64 MiB)")
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exited record saying out of memory in %+v", hs)
		}
	}
}

// Each incarnation's containment is journaled while it runs, and forgotten
// once it is stopped.
func TestContainmentJournaledWhileRunning(t *testing.T) {
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt := realRuntime(t, store, Options{})
	if err := rt.Register(context.Background(), shellSpec("kept", "exec sleep 1000")); err != nil {
		t.Fatal(err)
	}
	st := waitServer(t, rt, "kept", func(st ServerStatus) bool { return st.PID != 0 })
	var rec persistence.ContainmentRecord
	for deadline := time.Now().Add(procBound); rec.PGID == 0; time.Sleep(5 * time.Millisecond) {
		recs, err := store.Containments()
		if err != nil || len(recs) > 1 {
			t.Fatalf("Containments: %+v, %v", recs, err)
		}
		if len(recs) == 1 {
			rec = recs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completed record: %+v", recs)
		}
	}
	if rec.Server != "kept" || rec.PGID != st.PID || rec.Mode != string(rt.containment.Mode()) || rec.Marker == "" {
		t.Errorf("record %+v for pid %d", rec, st.PID)
	}
	if err := rt.Unregister(context.Background(), "kept"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(procBound); ; time.Sleep(5 * time.Millisecond) {
		if recs, _ := store.Containments(); len(recs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the record of a stopped server is still there")
		}
	}
}

// A new runtime on a journal that holds the record of a crashed life stops
// what that life left, before starting anything, and says so.
func TestRuntimeReclaimsWhatACrashedLifeLeft(t *testing.T) {
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// The leftover: a process that left its group and session, found by
	// the marker it inherited.
	marker := "crashed-life-1"
	left := exec.Command("sleep", "1000")
	left.Env = append(os.Environ(), supervision.EnvMarker+"="+marker)
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- left.Wait() }()
	if _, err := store.Apply([]persistence.Op{persistence.PutContainment(persistence.ContainmentRecord{
		ID: marker, Server: "gone", Mode: "process-group", Marker: marker, PGID: 1 << 22, Started: time.Now(),
	})}); err != nil {
		t.Fatal(err)
	}
	realRuntime(t, store, Options{})
	select {
	case <-exited:
	case <-time.After(procBound):
		t.Fatal("the leftover is still running")
	}
	if recs, _ := store.Containments(); len(recs) != 0 {
		t.Errorf("records left: %+v", recs)
	}
	hs, _ := store.History(persistence.HistoryFilter{Kind: persistence.HistoryLifecycle})
	if len(hs) != 1 || hs[0].Server != "gone" || hs[0].Transition != "reclaimed" || !strings.Contains(hs[0].Detail, "stopped 1 process") {
		t.Errorf("history %+v, want one reclaimed record", hs)
	}
}
