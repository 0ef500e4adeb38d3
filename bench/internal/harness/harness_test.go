package harness

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// echoServer is the echo server binary, built once for every test.
var echoServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpbench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoServer, err = BuildEchoServer(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func tinyEnv(t *testing.T) *Env {
	return &Env{Server: echoServer, Sizes: TinySizes(), Log: testLog{t}, TempDir: t.TempDir()}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// Every scenario runs at a tiny size and reports sane figures for every
// contender: no failed call, a positive latency or ready time.
func TestScenarios(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			recs, err := sc.Run(ctx, tinyEnv(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				t.Fatal("no records")
			}
			for _, r := range recs {
				if r.Scenario != sc.Name {
					t.Errorf("%s: record of scenario %q", r.Contender, r.Scenario)
				}
				if r.Errors != 0 || r.Note != "" {
					t.Errorf("%s: %d error(s): %s", r.Contender, r.Errors, r.Note)
				}
				if r.P50us <= 0 && r.Metrics["ready_ms"] <= 0 && r.Metrics["events_per_sec"] <= 0 && r.Metrics["lines_per_sec"] <= 0 {
					t.Errorf("%s: neither a latency, a ready time nor a rate: %+v", r.Contender, r)
				}
			}
		})
	}
}

// The isolation scenario's trouble is real: the hung server's calls time out,
// the crash-looping one is restarted, the deaf one is reported as not reading.
func TestIsolationTroubleHappens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := Isolation(ctx, tinyEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Contender != "mcpvisor-trouble" {
		t.Fatalf("records: %+v", recs)
	}
	m := recs[1].Metrics
	for _, name := range []string{"bad_timeout", "bad_not_reading", "crash_restarts", "p99_ratio", "status_max_us"} {
		if m[name] <= 0 {
			t.Errorf("%s = %v, want > 0 (metrics %v)", name, m[name], m)
		}
	}
}

// Every event of the flood is accounted for, journaled or counted as
// dropped, and the figures the report and its targets use are there.
func TestJournalAccountsForTheFlood(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := tinyEnv(t)
	recs, err := Journal(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Contender != Raw || recs[1].Contender != Mcpvisor || recs[2].Contender != MjournalMulti {
		t.Fatalf("records: %+v", recs)
	}
	n := float64(env.Sizes.JournalEvents)
	if m := recs[0].Metrics; m["lines"] != n || m["lines_per_sec"] <= 0 {
		t.Errorf("raw: %v, want %v lines", m, n)
	}
	for _, r := range recs[1:] {
		m := r.Metrics
		if r.Errors != 0 || m["events"] != n || m["journaled"]+m["dropped"] < n || m["journaled"] <= 0 {
			t.Errorf("%s: %d error(s) (%s), %v journaled + %v dropped of %v", r.Contender, r.Errors, r.Note, m["journaled"], m["dropped"], m["events"])
		}
		for _, name := range []string{"events_per_sec", "commits", "events_per_commit", "elapsed_ms", "answered_ms", "disk_alloc_mb", "rss_base_mb"} {
			if m[name] <= 0 {
				t.Errorf("%s: %s = %v, want > 0", r.Contender, name, m[name])
			}
		}
	}
	if recs[2].Servers != env.Sizes.JournalServers {
		t.Errorf("%s: %d servers, want %d", MjournalMulti, recs[2].Servers, env.Sizes.JournalServers)
	}
}
