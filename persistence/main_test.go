package persistence

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary doubles as the child process of the cross-process tests:
// with childEnv set, TestMain runs that role instead of the tests.
const (
	childEnv    = "MCPVISOR_PERSISTENCE_CHILD" // "lock" or "crash"
	childDirEnv = "MCPVISOR_PERSISTENCE_DIR"
	childRunEnv = "MCPVISOR_PERSISTENCE_RUN"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "lock":
		os.Exit(holdLock(os.Getenv(childDirEnv)))
	case "crash":
		os.Exit(appendUntilKilled(os.Getenv(childDirEnv), os.Getenv(childRunEnv)))
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, os.Getenv(childEnv))
		os.Exit(2)
	}
}

// holdLock opens dir, says so on stdout, and keeps it open until stdin
// closes (or the parent kills it).
func holdLock(dir string) int {
	s, err := Open(dir, Options{MaintenanceInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// appendUntilKilled appends batches of 1..500 events as fast as it can and,
// only after each Apply returns, prints "<first seq> <last seq> <first k>":
// event k of this run has params crashParams(run, k). Each batch also puts
// its task, crashTask(run, k, n), and marks the previous batch's task Done.
func appendUntilKilled(dir, run string) int {
	s, err := Open(dir, Options{MaintenanceInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	k := 0
	var previous *TaskRecord
	for {
		n := 1 + rand.IntN(500)
		ops := make([]Op, n, 2*n+3)
		for i := range ops {
			ops[i] = AppendEvent(EventRecord{Server: "crash", Method: "notify", Params: crashParams(run, k+i)})
		}
		// A call record per event, in blocks cut by a transition.
		for i := range n {
			if i == n/2 {
				ops = append(ops, AppendHistory(HistoryRecord{Kind: HistoryLifecycle, Server: "crash", Transition: "ready"}))
			}
			ops = append(ops, AppendHistory(HistoryRecord{Kind: HistoryCall, Server: "crash", Tool: crashTool(run, k+i)}))
		}
		task := crashTask(run, k, n)
		ops = append(ops, PutTask(task))
		if previous != nil {
			previous.Status, previous.Done = TaskCompleted, true
			ops = append(ops, PutTask(*previous))
		}
		previous = &task
		res, err := s.Apply(ops)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(out, "%d %d %d\n", res.Events[0].Seq, res.Events[n-1].Seq, k)
		out.Flush()
		k += n
	}
}

// crashTool is the tool of the crash child's call record k of run.
func crashTool(run string, k int) string { return fmt.Sprintf("crash-%s-%d", run, k) }

func crashParams(run string, k int) []byte {
	return fmt.Appendf(nil, `{"run":%q,"k":%d,"pad":"0123456789abcdef0123456789abcdef"}`, run, k)
}

// crashTask is the task of the crash child's batch of n events from k.
func crashTask(run string, k, n int) TaskRecord {
	return TaskRecord{
		Server: "crash", TaskID: fmt.Sprintf("%s-%d", run, k), Status: TaskWorking,
		StatusMessage: strconv.Itoa(n), Result: crashParams(run, k),
	}
}

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// openStore opens dir with maintenance off unless opts says otherwise, and
// closes it at the end of the test.
func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.MaintenanceInterval == 0 {
		opts.MaintenanceInterval = -1
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustApply(t testing.TB, s *Store, ops ...Op) Applied {
	t.Helper()
	res, err := s.Apply(ops)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}
