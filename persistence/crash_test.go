package persistence

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// committedRange is one line the crash child printed after Apply returned:
// events first..last of run, the first with k = k.
type committedRange struct {
	run         string
	first, last uint64
	k           int
}

// TestSurvivesSIGKILL runs a child that appends batches as fast as it can
// and kills it with SIGKILL at a random moment, five times over the same
// directory. Every batch whose Apply returned before the kill must be
// there after, exactly once and intact, task updates included, no batch
// may be there in part, and new seqs must go above all of them.
func TestSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	var committed []committedRange
	for run := range 5 {
		runID := strconv.Itoa(run)
		ranges := killDuringAppends(t, dir, runID, time.Duration(50+rand.IntN(351))*time.Millisecond)
		if len(ranges) == 0 {
			t.Logf("run %d: killed before any Apply returned", run)
		}
		committed = append(committed, ranges...)
		checkCommitted(t, dir, committed)
	}
}

// killDuringAppends starts the crash child on dir, kills it delay after it
// reports ready, and returns the ranges it printed.
func killDuringAppends(t *testing.T, dir, run string, delay time.Duration) []committedRange {
	t.Helper()
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), childEnv+"=crash", childDirEnv+"="+dir, childRunEnv+"="+run)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("run %s: child said %q, %v", run, line, err)
	}
	lines := make(chan []committedRange, 1)
	go func() { lines <- readRanges(t, out, run) }()

	time.Sleep(delay) // the deliberate random moment of the crash
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ranges := <-lines // EOF: the child is gone; Wait must come after the reads
	err = child.Wait()
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("run %s: child ended with %v, not by SIGKILL", run, err)
	}
	return ranges
}

// readRanges parses the child's stdout until EOF. A last line cut short
// by the kill has no newline and is ignored.
func readRanges(t *testing.T, r *bufio.Reader, run string) []committedRange {
	var ranges []committedRange
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return ranges
		}
		if err != nil {
			t.Errorf("reading child: %v", err)
			return ranges
		}
		c := committedRange{run: run}
		if _, err := fmt.Sscanf(line, "%d %d %d\n", &c.first, &c.last, &c.k); err != nil {
			t.Errorf("child printed %q: %v", line, err)
			return ranges
		}
		ranges = append(ranges, c)
	}
}

// checkCommitted reopens dir and checks every committed event is present
// once with its content, then that a new Apply's seq is above them all.
func checkCommitted(t *testing.T, dir string, committed []committedRange) {
	t.Helper()
	s, err := Open(dir, Options{MaintenanceInterval: -1})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	events, err := s.Events(EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	bySeq := make(map[uint64]EventRecord, len(events))
	copies := make(map[string]int, len(events))
	var maxSeq uint64
	var pending int64
	for _, e := range events {
		if e.Status == EventPending {
			pending++
		}
		bySeq[e.Seq] = e
		copies[string(e.Params)]++
		maxSeq = max(maxSeq, e.Seq)
	}
	want := 0
	for _, c := range committed {
		for seq := c.first; seq <= c.last; seq++ {
			want++
			params := string(crashParams(c.run, c.k+int(seq-c.first)))
			e, ok := bySeq[seq]
			switch {
			case !ok:
				t.Fatalf("run %s: event %d was committed but is missing", c.run, seq)
			case string(e.Params) != params || e.Server != "crash" || e.Method != "notify" || e.Status != EventPending:
				t.Fatalf("run %s: event %d is %+v, want params %s", c.run, seq, e, params)
			case copies[params] != 1:
				t.Fatalf("run %s: event %d stored %d times", c.run, seq, copies[params])
			}
			maxSeq = max(maxSeq, seq)
		}
	}
	checkCommittedTasks(t, s, committed, copies)
	checkCommittedCalls(t, s, committed, copies)
	if got := s.Stats().PendingEvents; got != pending {
		t.Errorf("PendingEvents = %d, want %d", got, pending)
	}
	if !s.pendingCounted {
		t.Error("the pending events were not counted after a SIGKILL")
	}
	res, err := s.Apply([]Op{AppendEvent(EventRecord{Server: "probe"})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events[0].Seq <= maxSeq {
		t.Fatalf("new seq %d is not above the old %d", res.Events[0].Seq, maxSeq)
	}
	// The probe must not count as a crash event in later runs.
	if _, err := s.Apply([]Op{AckEvents(res.Events[0].Seq)}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d committed events checked (%d stored, %d pending), next seq %d", want, len(events), pending, res.Events[0].Seq)
}

// checkCommittedCalls checks the crash child's call records, written in
// blocks: each committed batch's are there once, every one stored came
// with its batch's events, and a new record's seq goes above them all.
func checkCommittedCalls(t *testing.T, s *Store, committed []committedRange, copies map[string]int) {
	t.Helper()
	calls, err := s.History(HistoryFilter{Kind: HistoryCall, Server: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	stored := make(map[string]int, len(calls))
	var last uint64
	for _, h := range calls {
		if h.Seq <= last {
			t.Fatalf("call record %d read after %d", h.Seq, last)
		}
		last = h.Seq
		stored[h.Tool]++
		run, k, ok := strings.Cut(strings.TrimPrefix(h.Tool, "crash-"), "-")
		n, err := strconv.Atoi(k)
		if !ok || err != nil {
			t.Fatalf("stored call record %+v is not the crash child's", h)
		}
		if c := copies[string(crashParams(run, n))]; c != 1 {
			t.Fatalf("call record %s is stored but its batch's event is there %d times", h.Tool, c)
		}
	}
	for _, c := range committed {
		for k := c.k; k <= c.k+int(c.last-c.first); k++ {
			if n := stored[crashTool(c.run, k)]; n != 1 {
				t.Fatalf("run %s: call record %d was committed and is there %d times", c.run, k, n)
			}
		}
	}
	res, err := s.Apply([]Op{AppendHistory(HistoryRecord{Kind: HistoryLifecycle, Server: "probe"})})
	if err != nil {
		t.Fatal(err)
	}
	if seq := res.History[0].Seq; seq <= last {
		t.Fatalf("new history seq %d is not above the old %d", seq, last)
	}
	t.Logf("%d call records checked", len(calls))
}

// checkCommittedTasks checks the crash child's tasks: each committed
// batch's task is there, Done once the next batch of its run committed,
// and every task stored, committed or not, came with all of its batch's
// events (copies counts the stored events by params).
func checkCommittedTasks(t *testing.T, s *Store, committed []committedRange, copies map[string]int) {
	t.Helper()
	for i, c := range committed {
		n := int(c.last-c.first) + 1
		want := crashTask(c.run, c.k, n)
		got, found, err := s.Task(want.Server, want.TaskID)
		switch {
		case err != nil:
			t.Fatal(err)
		case !found:
			t.Fatalf("run %s: task %s was committed but is missing", c.run, want.TaskID)
		case string(got.Result) != string(want.Result) || got.StatusMessage != want.StatusMessage:
			t.Fatalf("run %s: task %s is %+v, want %+v", c.run, want.TaskID, got, want)
		}
		nextCommitted := i+1 < len(committed) && committed[i+1].run == c.run
		if nextCommitted && (!got.Done || got.Status != TaskCompleted) {
			t.Fatalf("run %s: task %s is %s, done %v; the next batch marking it completed was committed", c.run, want.TaskID, got.Status, got.Done)
		}
	}
	tasks, err := s.Tasks(TaskFilter{Server: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		run, k, ok := strings.Cut(task.TaskID, "-")
		first, errK := strconv.Atoi(k)
		n, errN := strconv.Atoi(task.StatusMessage)
		if !ok || errK != nil || errN != nil {
			t.Fatalf("stored task %+v is not the crash child's", task)
		}
		for i := range n {
			if params := crashParams(run, first+i); copies[string(params)] != 1 {
				t.Fatalf("task %s is stored but its event %s is there %d times", task.TaskID, params, copies[string(params)])
			}
		}
	}
	t.Logf("%d tasks checked", len(tasks))
}
