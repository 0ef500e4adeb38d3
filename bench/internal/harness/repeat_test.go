package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := slices.Clone(tc.in)
		if got := median(in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median reordered its input: %v", in)
		}
	}
}

// Every contender runs once per repeat, the first rotating, none twice in a
// row; two alternate.
func TestRepeatOrder(t *testing.T) {
	order := repeatOrder(4, 5)
	if len(order) != 5 {
		t.Fatalf("%d repeats, want 5", len(order))
	}
	var flat []int
	for r, rep := range order {
		if got := slices.Sorted(slices.Values(rep)); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Errorf("repeat %d runs %v, want each of 4 once", r, rep)
		}
		if rep[0] != r%4 {
			t.Errorf("repeat %d starts with %d, want %d", r, rep[0], r%4)
		}
		flat = append(flat, rep...)
	}
	for i := 1; i < len(flat); i++ {
		if flat[i] == flat[i-1] {
			t.Errorf("contender %d runs twice in a row: %v", flat[i], flat)
		}
	}
	if diff := cmp.Diff([][]int{{0, 1}, {0, 1}, {0, 1}}, repeatOrder(2, 3)); diff != "" {
		t.Errorf("two contenders (-want +got):\n%s", diff)
	}
}

func TestFillRepeats(t *testing.T) {
	us := time.Microsecond
	ms := time.Millisecond
	reps := []repeatFigures{
		{calls: 1000, elapsed: 100 * ms, lat: summary{p50: 10 * us, p90: 20 * us, p99: 50 * us, max: 70 * us}, cpu: cpuUse{user: 30 * ms, sys: 10 * ms, children: 20 * ms}},
		{calls: 1000, elapsed: 50 * ms, lat: summary{p50: 30 * us, p90: 40 * us, p99: 90 * us, max: 300 * us}, cpu: cpuUse{user: 60 * ms, sys: 20 * ms, children: 10 * ms}},
		{calls: 1000, errs: 2, elapsed: 200 * ms, lat: summary{p50: 20 * us, p90: 25 * us, p99: 60 * us, max: 100 * us}, cpu: cpuUse{user: 45 * ms, sys: 15 * ms, children: 30 * ms}},
	}
	var got Record
	fillRepeats(&got, reps)
	want := Record{
		Calls: 3000, Errors: 2, Repeats: 3,
		P50us: 20, P90us: 25, P99us: 60, MaxUs: 300, CallsPerSec: 10000, // of 10,000, 20,000 and 5,000
		P50MinUs: 10, P50MaxUs: 30,
		HostCPU: 6, ServerCPU: 2, // 40, 80 and 60 ms; 20, 10 and 30 ms; per 1,000 calls
		RepeatP50us: []float64{10, 30, 20}, RepeatP99us: []float64{50, 90, 60}, RepeatCallsPerSec: []float64{10000, 20000, 5000},
		Metrics: map[string]float64{"host_user_cpu_s_per_100k_calls": 4.5, "host_sys_cpu_s_per_100k_calls": 1.5},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return a == b || (a-b)*(a-b) < 1e-18 })); diff != "" {
		t.Errorf("fillRepeats (-want +got):\n%s", diff)
	}
}

// fakeContender's calls sleep: in its kth repeat (from 0), delays[k]. Its
// connects and closes go to a shared log; connect number failAt (from 1)
// fails. pipelined has the form each connect asked for.
type fakeContender struct {
	label     string
	delays    []time.Duration
	failAt    int
	connects  int
	log       *[]string
	pipelined []bool
}

func (ct *fakeContender) name() string { return ct.label }

func (ct *fakeContender) connect(_ context.Context, _ *Env, _ int, pipelined bool) (client, error) {
	ct.pipelined = append(ct.pipelined, pipelined)
	ct.connects++
	*ct.log = append(*ct.log, "connect "+ct.label)
	if ct.connects == ct.failAt {
		return nil, errors.New("refused")
	}
	return &fakeClient{ct: ct, delay: ct.delays[ct.connects-1]}, nil
}

type fakeClient struct {
	ct    *fakeContender
	delay time.Duration
}

func (c *fakeClient) call(context.Context, int) error { time.Sleep(c.delay); return nil }

func (c *fakeClient) close() error {
	*c.ct.log = append(*c.ct.log, "close "+c.ct.label)
	return nil
}

// repeatLoad runs a fresh client per contender per repeat, one at a time in
// repeatOrder, stops trying one that could not connect, and records the
// medians of each contender's repeats.
func TestRepeatLoad(t *testing.T) {
	ms := time.Millisecond
	var log []string
	a := &fakeContender{label: "a", delays: []time.Duration{1 * ms, 10 * ms, 4 * ms}, log: &log}
	b := &fakeContender{label: "b", delays: []time.Duration{1 * ms, 1 * ms, 1 * ms}, log: &log}
	c := &fakeContender{label: "c", delays: []time.Duration{1 * ms, 1 * ms, 1 * ms}, failAt: 2, log: &log}
	env := &Env{Sizes: Sizes{Repeats: 3, WarmupCalls: 1}, Log: testLog{t}}
	runs, err := repeatLoad(context.Background(), env, []contender{a, b, c}, 1, 1, 3, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantLog := []string{
		"connect a", "close a", "connect b", "close b", "connect c", "close c", // repeat 1: a, b, c
		"connect b", "close b", "connect c", "connect a", "close a", // repeat 2: b, c (refused), a
		"connect a", "close a", "connect b", "close b", // repeat 3: c left out
	}
	if diff := cmp.Diff(wantLog, log); diff != "" {
		t.Errorf("connects and closes (-want +got):\n%s", diff)
	}
	ra := runs[0].record("s", "a", 1, 1, false)
	if ra.Repeats != 3 || ra.Calls != 9 || ra.Errors != 0 || ra.Note != "" {
		t.Fatalf("a: %+v", ra)
	}
	// a's repeats took 1, 10 and 4 ms a call: the median is the third's.
	if p := ra.RepeatP50us; !(p[0] < p[2] && p[2] < p[1]) || ra.P50us != p[2] || ra.P50MinUs != p[0] || ra.P50MaxUs != p[1] {
		t.Errorf("a: p50 %v (range %v–%v) of repeats %v, want the middle one", ra.P50us, ra.P50MinUs, ra.P50MaxUs, p)
	}
	if ra.P50us < 4000 {
		t.Errorf("a: p50 %.0f µs, want 4 ms or a little more", ra.P50us)
	}
	if rc := runs[2].record("s", "c", 1, 1, false); rc.Repeats != 1 || !strings.Contains(rc.Note, "could not connect for repeat 2: refused") {
		t.Errorf("c: %d repeat(s), note %q", rc.Repeats, rc.Note)
	}
}

// The floor is the synchronous raw client with one caller and the
// pipelined one with more: compare asks every contender for that form, and
// only the pipelined raw client has a reader goroutine.
func TestFloorForms(t *testing.T) {
	for _, tc := range []struct {
		callers   int
		pipelined bool
	}{{1, false}, {4, true}} {
		var log []string
		ct := &fakeContender{label: "f", delays: []time.Duration{0, 0}, log: &log}
		env := &Env{Sizes: Sizes{Repeats: 2, WarmupCalls: 1}, Log: testLog{t}}
		if _, err := compare(context.Background(), env, "s", []contender{ct}, tc.callers, 8, nil); err != nil {
			t.Fatal(err)
		}
		if want := []bool{tc.pipelined, tc.pipelined}; !slices.Equal(ct.pipelined, want) {
			t.Errorf("%d caller(s): connects asked for pipelined %v, want %v", tc.callers, ct.pipelined, want)
		}
	}
	for _, pipelined := range []bool{false, true} {
		c, err := rawContender{}.connect(context.Background(), &Env{Server: echoServer}, 1, pipelined)
		if err != nil {
			t.Fatal(err)
		}
		conn := c.(*rawClient).conns[0]
		if conn.pipelined != pipelined || (conn.readDone != nil) != pipelined {
			t.Errorf("raw client asked for pipelined %v: pipelined %v, reader goroutine %v", pipelined, conn.pipelined, conn.readDone != nil)
		}
		if err := c.call(context.Background(), 0); err != nil {
			t.Error(err)
		}
		if err := c.close(); err != nil {
			t.Error(err)
		}
	}
}

// spinEnv, when set to a duration, makes the test binary the child of
// TestCPUAccounting (see spinChild).
const spinEnv = "MCPBENCH_TEST_SPIN"

// spinChild says it is up, waits for a line on stdin, burns d of CPU time,
// says so, and exits at the end of its stdin.
func spinChild(d time.Duration) {
	in := bufio.NewReader(os.Stdin)
	fmt.Println("up")
	in.ReadString('\n')
	burnCPU(d, 2) // CLOCK_PROCESS_CPUTIME_ID
	fmt.Println("spun")
	io.Copy(io.Discard, in)
	os.Exit(0)
}

// burnCPU spins until clock (CLOCK_PROCESS_CPUTIME_ID or
// CLOCK_THREAD_CPUTIME_ID: the caller's own) has advanced d.
func burnCPU(d time.Duration, clock uintptr) {
	now := func() time.Duration {
		var ts syscall.Timespec
		syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0)
		return time.Duration(ts.Nano())
	}
	for start := now(); now()-start < d; {
		for range 10000 {
		}
	}
}

// The CPU a window measures is the time this process spent in it (RUSAGE_SELF),
// and apart, that of its children: one alive throughout, and one that
// exits and is waited for inside the window.
func TestCPUAccounting(t *testing.T) {
	const d = 200 * time.Millisecond
	t.Run("this process", func(t *testing.T) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start := cpuStart()
		burnCPU(d, 3) // CLOCK_THREAD_CPUTIME_ID
		use := cpuSince(start)
		if use.host() < d || use.user <= 0 {
			t.Errorf("host CPU %v (user %v, system %v) while a thread burnt %v", use.host(), use.user, use.sys, d)
		}
		if use.children > d/10 {
			t.Errorf("children's CPU %v with no child busy", use.children)
		}
	})
	t.Run("children", func(t *testing.T) {
		type child struct {
			cmd *exec.Cmd
			in  io.WriteCloser
			out *bufio.Reader
		}
		start := func() child {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), spinEnv+"="+d.String())
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			c := child{cmd, in, bufio.NewReader(out)}
			if line, _ := c.out.ReadString('\n'); line != "up\n" {
				t.Fatalf("child said %q", line)
			}
			return c
		}
		stays, exits := start(), start()
		defer stays.cmd.Wait()
		defer stays.in.Close()

		begin := cpuStart()
		var wg sync.WaitGroup
		for _, c := range []child{stays, exits} {
			io.WriteString(c.in, "go\n")
			wg.Go(func() {
				if line, _ := c.out.ReadString('\n'); line != "spun\n" {
					t.Errorf("child said %q", line)
				}
			})
		}
		wg.Wait()
		exits.in.Close()
		if err := exits.cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		use := cpuSince(begin)
		// Each child burnt d in the window; the one waited for counts
		// through RUSAGE_CHILDREN.
		if use.children < 2*d || use.children > 2*d+150*time.Millisecond {
			t.Errorf("children's CPU %v, want 2 × %v and a little", use.children, d)
		}
		if use.host() > d/2 {
			t.Errorf("this process's CPU %v while its children burnt theirs", use.host())
		}
	})
}
