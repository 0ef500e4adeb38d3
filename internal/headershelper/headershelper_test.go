package headershelper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// countingHelper returns a Helper running script under /bin/sh with $COUNT
// naming a file that gets one line per run, and a function that reads
// the number of runs. The script can use $n, the number of this run.
func countingHelper(t *testing.T, script string, timeout time.Duration) (*Helper, func() int) {
	t.Helper()
	count := filepath.Join(t.TempDir(), "count")
	if err := os.WriteFile(count, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full := `echo x >> "$COUNT"; n=$(wc -l < "$COUNT" | tr -d ' '); ` + script
	h := New([]string{"/bin/sh", "-c", full}, []string{"COUNT=" + count, "PATH=" + os.Getenv("PATH")}, "", timeout)
	runs := func() int {
		b, err := os.ReadFile(count)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	return h, runs
}

// tokenServer accepts requests whose Authorization is "Bearer tok-<n>" for
// n >= accept, answers 401 to the others, and records what it saw.
type tokenServer struct {
	accept int
	mu     sync.Mutex
	auths  []string
	bodies []string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	auth := r.Header.Get("Authorization")
	s.mu.Lock()
	s.auths = append(s.auths, auth)
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	n, err := strconv.Atoi(strings.TrimPrefix(auth, "Bearer tok-"))
	if err != nil || n < s.accept {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	fmt.Fprint(w, "ok ", r.Header.Get("X-Extra"))
}

func (s *tokenServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

// newServer starts s and returns it with a constructor of clients whose
// transport is the helper's over the server's.
func newServer(t *testing.T, s *tokenServer) (*httptest.Server, func(*Helper) *http.Client) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	tr := srv.Client().Transport
	return srv, func(h *Helper) *http.Client {
		return &http.Client{Transport: h.Transport(tr)}
	}
}

const tokenScript = `printf '{"Authorization":"Bearer tok-%s","X-Extra":"extra"}' "$n"`

func get(t *testing.T, c *http.Client, url string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestTransportSetsHeaders(t *testing.T) {
	s := &tokenServer{accept: 1}
	srv, client := newServer(t, s)
	h, runs := countingHelper(t, tokenScript, 0)
	c := client(h)
	for range 3 {
		code, body, err := get(t, c, srv.URL)
		if err != nil || code != 200 || body != "ok extra" {
			t.Fatalf("GET = %d %q %v, want 200 \"ok extra\"", code, body, err)
		}
	}
	if got := runs(); got != 1 {
		t.Errorf("helper ran %d times, want 1", got)
	}
	if got := h.Secrets(); len(got) != 2 || !slices.Contains(got, "Bearer tok-1") || !slices.Contains(got, "extra") {
		t.Errorf("Secrets() = %q, want the two values", got)
	}
}

func TestTransportRerunsAndRetriesOn401(t *testing.T) {
	s := &tokenServer{accept: 2}
	srv, client := newServer(t, s)
	h, runs := countingHelper(t, tokenScript, 0)
	c := client(h)

	req, err := http.NewRequest("POST", srv.URL, strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200 after the retry", resp.StatusCode)
	}
	if got := runs(); got != 2 {
		t.Errorf("helper ran %d times, want 2", got)
	}
	want := []string{"Bearer tok-1", "Bearer tok-2"}
	if diff := cmp.Diff(want, s.seen()); diff != "" {
		t.Errorf("Authorization headers the server saw (-want +got):\n%s", diff)
	}
	if s.bodies[0] != "payload" || s.bodies[1] != "payload" {
		t.Errorf("bodies %q, want the payload twice", s.bodies)
	}
	// The new token sticks.
	if code, _, err := get(t, c, srv.URL); err != nil || code != 200 {
		t.Fatalf("second GET = %d %v", code, err)
	}
	if got := runs(); got != 2 {
		t.Errorf("helper ran %d times, want still 2", got)
	}
}

func TestTransportNoRetryWithoutReplayableBody(t *testing.T) {
	s := &tokenServer{accept: 2}
	srv, client := newServer(t, s)
	h, runs := countingHelper(t, tokenScript, 0)
	c := client(h)
	req, err := http.NewRequest("POST", srv.URL, io.NopCloser(strings.NewReader("once")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want the 401 back", resp.StatusCode)
	}
	if got := len(s.seen()); got != 1 {
		t.Errorf("server saw %d requests, want 1 (no retry)", got)
	}
	if got := runs(); got != 2 {
		t.Errorf("helper ran %d times, want 2 (refreshed for the next request)", got)
	}
	if code, _, err := get(t, c, srv.URL); err != nil || code != 200 {
		t.Fatalf("next GET = %d %v, want 200 with the refreshed token", code, err)
	}
}

// A server that always answers 401 gets each request at most twice, and
// concurrent 401s share one rerun.
func TestTransportAlways401IsRateLimited(t *testing.T) {
	s := &tokenServer{accept: 1 << 30}
	srv, client := newServer(t, s)
	h, runs := countingHelper(t, tokenScript, 0)
	c := client(h)
	// Run the helper first so that all requests carry generation 1.
	if _, err := h.Headers(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	const n = 10
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			code, _, err := get(t, c, srv.URL)
			if err != nil {
				t.Error(err)
			}
			codes[i] = code
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusUnauthorized {
			t.Errorf("request %d: status %d, want 401", i, code)
		}
	}
	if got := runs(); got != 2 {
		t.Errorf("helper ran %d times, want 2", got)
	}
	if got := len(s.seen()); got != 2*n {
		t.Errorf("server saw %d requests, want %d", got, 2*n)
	}
}

func TestHeadersForceWaitsASecond(t *testing.T) {
	h, runs := countingHelper(t, tokenScript, 0)
	ctx := context.Background()
	if _, err := h.Headers(ctx, false); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := h.Headers(short, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forced Headers right after a run: err = %v, want it to wait past the deadline", err)
	}
	if got := runs(); got != 1 {
		t.Fatalf("helper ran %d times, want 1", got)
	}
	hdr, err := h.Headers(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("Authorization"); got != "Bearer tok-2" {
		t.Errorf("Authorization = %q, want Bearer tok-2", got)
	}
}

func TestSingleflight(t *testing.T) {
	s := &tokenServer{accept: 1}
	srv, client := newServer(t, s)
	h, runs := countingHelper(t, `sleep 0.3; `+tokenScript, 0)
	c := client(h)
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 20 {
		wg.Go(func() {
			code, _, err := get(t, c, srv.URL)
			if err != nil {
				t.Error(err)
			}
			if code == 200 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 20 {
		t.Errorf("%d of 20 requests succeeded", ok.Load())
	}
	if got := runs(); got != 1 {
		t.Errorf("helper ran %d times, want 1", got)
	}
}

// A waiter whose context ends leaves; the run goes on for the others.
func TestWaiterCancel(t *testing.T) {
	h, runs := countingHelper(t, `sleep 0.3; `+tokenScript, 0)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := h.Headers(context.Background(), false); err != nil {
			t.Error(err)
		}
	})
	time.Sleep(50 * time.Millisecond) // let the leader start (correctness does not depend on it)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Headers(ctx, false); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	wg.Wait()
	if got := runs(); got != 1 {
		t.Errorf("helper ran %d times, want 1", got)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	h := New([]string{"/bin/sh", "-c", `sleep 60 & echo $! > "$PIDFILE"; wait; echo '{}'`},
		[]string{"PIDFILE=" + pidFile, "PATH=" + os.Getenv("PATH")}, "", 300*time.Millisecond)
	_, err := h.Headers(context.Background(), false)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d still alive after the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, waiting for a reaper that may
// never come in a container, counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

const secret = "s3cr3t-VALUE"

func TestInvalidOutput(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         error
		wantMsg      string
	}{
		{"exit", `echo '{"A":"` + secret + `"}'; echo boom >&2; exit 1`, ErrFailed, "exit status 1: boom"},
		{"empty", `true`, ErrInvalidOutput, "empty"},
		{"not json", `echo 'Bearer ` + secret + `'`, ErrInvalidOutput, "not valid JSON"},
		{"trailing", `echo '{"A":"x"} ` + secret + `'`, ErrInvalidOutput, "not valid JSON"},
		{"array", `echo '["` + secret + `"]'`, ErrInvalidOutput, "not a JSON object"},
		{"null", `echo null`, ErrInvalidOutput, "not a JSON object"},
		{"number value", `echo '{"X-Key":12345678}'`, ErrInvalidOutput, "X-Key is not a JSON string"},
		{"object value", `echo '{"X-Key":{"v":"` + secret + `"}}'`, ErrInvalidOutput, "X-Key is not a JSON string"},
		{"bad name", `echo '{"Bearer ` + secret + `":"x"}'`, ErrInvalidOutput, "not a valid HTTP token"},
		{"empty name", `echo '{"":"` + secret + `"}'`, ErrInvalidOutput, "not a valid HTTP token"},
		{"CRLF", `printf '{"A":"%s\\r\\nX-Evil: 1"}' ` + secret, ErrInvalidOutput, "CR, LF or NUL"},
		{"NUL", `printf '{"A":"%s\\u0000"}' ` + secret, ErrInvalidOutput, "CR, LF or NUL"},
		{"too large", `printf '{"A":"'; i=0; while [ $i -lt 6000 ]; do printf ` + secret + `; i=$((i+1)); done; printf '"}'`, ErrInvalidOutput, "exceeds 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New([]string{"/bin/sh", "-c", tc.script}, nil, "", 0)
			hdr, err := h.Headers(context.Background(), false)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Headers = %v, %v; want %v", hdr, err, tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantMsg) || !strings.HasPrefix(msg, "headersHelper") {
				t.Errorf("error %q, want it to start with headersHelper and contain %q", msg, tc.wantMsg)
			}
			for _, leak := range []string{secret, "Bearer", "12345678", "X-Evil"} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q quotes stdout (%q)", msg, leak)
				}
			}
			if s := h.Secrets(); len(s) != 0 {
				t.Errorf("Secrets() = %q after a failed run", s)
			}
		})
	}
}

func TestHelperErrorFailsRequest(t *testing.T) {
	s := &tokenServer{accept: 1}
	srv, client := newServer(t, s)
	h := New([]string{"/bin/sh", "-c", "echo nope >&2; exit 3"}, nil, "", 0)
	_, _, err := get(t, client(h), srv.URL)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "exit status 3: nope") {
		t.Fatalf("err = %v, want the helper's failure", err)
	}
	if n := len(s.seen()); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestStderrBounded(t *testing.T) {
	h := New([]string{"/bin/sh", "-c", `i=0; while [ $i -lt 2000 ]; do printf 'errorerror' >&2; i=$((i+1)); done; exit 1`}, nil, "", 0)
	_, err := h.Headers(context.Background(), false)
	if err == nil || len(err.Error()) > maxStderr+200 {
		t.Fatalf("err = %.200v (len %d), want a bounded excerpt", err, len(fmt.Sprint(err)))
	}
}

func ExampleHelper_Headers() {
	h := New([]string{"/bin/sh", "-c", `echo '{"x-api-key": "k-123"}'`}, nil, "", 0)
	hdr, err := h.Headers(context.Background(), false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(hdr.Get("X-Api-Key"))
	// Output: k-123
}

type idleCounter struct {
	http.RoundTripper
	closed int
}

func (c *idleCounter) CloseIdleConnections() { c.closed++ }

// http.Client.CloseIdleConnections reaches the transport underneath.
func TestTransportClosesIdleConnections(t *testing.T) {
	base := &idleCounter{RoundTripper: http.DefaultTransport}
	h := New([]string{"/bin/sh", "-c", "echo {}"}, nil, "", 0)
	(&http.Client{Transport: h.Transport(base)}).CloseIdleConnections()
	if base.closed != 1 {
		t.Error("CloseIdleConnections did not reach the transport underneath")
	}
}
