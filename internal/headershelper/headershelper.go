package headershelper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

const (
	defaultTimeout = 10 * time.Second
	// minInterval is the least time between the starts of two runs.
	minInterval = time.Second
	maxStdout   = 64 << 10
	maxStderr   = 4 << 10
	// waitDelay bounds the wait for the helper's pipes once it has exited
	// or been killed (a grandchild outside its process group may hold them).
	waitDelay = time.Second
	// maxDrain is how much of a 401 body is read so its connection can be
	// reused for the retry.
	maxDrain = 4 << 10
)

var (
	// ErrFailed: the helper could not be run, exited non-zero, or timed out.
	ErrFailed = errors.New("headersHelper failed")
	// ErrInvalidOutput: the helper's stdout is not a JSON object of valid
	// header names to valid header values.
	ErrInvalidOutput = errors.New("headersHelper: invalid output")
)

// Helper runs one server's headers helper and keeps the headers it
// printed. Its methods are safe for concurrent use. It starts no goroutine
// of its own: a run happens on the goroutine of the caller that needs it,
// and lasts at most the timeout.
type Helper struct {
	argv     []string
	env      []string
	dir      string
	timeout  time.Duration
	interval time.Duration

	mu        sync.Mutex
	headers   http.Header // from the last successful run; never mutated, only replaced
	gen       uint64      // successful runs so far
	lastErr   error       // of the last run, nil if it succeeded
	lastStart time.Time   // start of the last run that was not abandoned
	running   *run        // the run in progress, if any
}

// run is one execution of the helper, shared by everyone who waits on it.
type run struct {
	done      chan struct{} // closed when the fields below are set
	headers   http.Header
	gen       uint64
	err       error
	abandoned bool // the leader's context ended: waiters should try again
}

// New returns a Helper that runs argv (argv[0] is looked up in PATH) with
// environment env (nil: this process's environment) in directory dir
// (empty: this process's), killing it after timeout (0: 10 s). It does not
// run the helper. New panics if argv is empty.
func New(argv []string, env []string, dir string, timeout time.Duration) *Helper {
	if len(argv) == 0 {
		panic("headershelper: New with empty argv")
	}
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return &Helper{
		argv:     append([]string(nil), argv...),
		env:      append([]string(nil), env...),
		dir:      dir,
		timeout:  timeout,
		interval: minInterval,
	}
}

// Headers returns the current headers, running the helper if it has not
// run successfully (or if force). A forced run waits until a second has
// passed since the previous run started. Headers blocks until the run ends
// or ctx is done; concurrent calls share one run. The returned Header is the
// caller's to modify.
func (h *Helper) Headers(ctx context.Context, force bool) (http.Header, error) {
	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	hdr, _, err := h.fetch(ctx, force, gen)
	return hdr.Clone(), err
}

// Secrets returns the header values last obtained, for redaction in logs.
func (h *Helper) Secrets() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, vs := range h.headers {
		for _, v := range vs {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// fetch returns the headers and their generation, running the helper when
// there are none, or when force and they are still those of generation
// stale (someone else refreshing them in the meantime satisfies force).
// A non-forced call within a second of a failed run returns that run's
// error instead of running again. The Header returned is shared: read only.
func (h *Helper) fetch(ctx context.Context, force bool, stale uint64) (http.Header, uint64, error) {
	h.mu.Lock()
	for {
		if r := h.running; r != nil {
			h.mu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, 0, fmt.Errorf("%w: waiting for headersHelper: %w", ErrFailed, ctx.Err())
			}
			if !r.abandoned {
				// A run that started after the caller asked is fresh enough
				// for force too.
				return r.headers, r.gen, r.err
			}
			h.mu.Lock()
			continue
		}
		if h.headers != nil && (!force || h.gen != stale) {
			hdr, gen := h.headers, h.gen
			h.mu.Unlock()
			return hdr, gen, nil
		}
		wait := time.Until(h.lastStart.Add(h.interval))
		if wait <= 0 {
			break
		}
		if !force && h.lastErr != nil {
			err := h.lastErr
			h.mu.Unlock()
			return nil, 0, err
		}
		h.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, 0, fmt.Errorf("%w: waiting to rerun headersHelper: %w", ErrFailed, ctx.Err())
		}
		h.mu.Lock()
	}
	r := &run{done: make(chan struct{})}
	h.running = r
	prevStart := h.lastStart
	h.lastStart = time.Now()
	h.mu.Unlock()

	hdr, err := h.exec(ctx)

	h.mu.Lock()
	switch {
	case err != nil && ctx.Err() != nil:
		// Our caller gave up; that says nothing about the helper.
		r.abandoned = true
		h.lastStart = prevStart
	case err != nil:
		h.lastErr = err
	default:
		h.gen++
		h.headers, h.lastErr = hdr, nil
	}
	r.headers, r.gen, r.err = h.headers, h.gen, err
	if err != nil {
		r.headers, r.gen = nil, 0
	}
	h.running = nil
	close(r.done)
	h.mu.Unlock()
	return r.headers, r.gen, err
}

// exec runs the helper once and parses its stdout.
func (h *Helper) exec(ctx context.Context) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.argv[0], h.argv[1:]...)
	if h.env != nil {
		cmd.Env = h.env
	}
	cmd.Dir = h.dir
	stdout := &cappedBuffer{max: maxStdout, failOnOverflow: true}
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr // Stdin nil: /dev/null
	// Its own process group, so that killing it kills what `sh -c` started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// Something of the helper's still holds its stdout or stderr.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	switch {
	case stdout.overflow:
		return nil, fmt.Errorf("%w: stdout exceeds %d bytes", ErrInvalidOutput, maxStdout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && err != nil:
		return nil, fmt.Errorf("%w: timed out after %v%s", ErrFailed, h.timeout, stderr.excerpt())
	case ctx.Err() != nil && err != nil:
		return nil, fmt.Errorf("%w: %w", ErrFailed, ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("%w: %w%s", ErrFailed, err, stderr.excerpt())
	}
	return parse(stdout.buf.Bytes())
}

// parse reads the helper's stdout. Its errors never quote the output: a
// json error would, so they are replaced by our own words.
func parse(out []byte) (http.Header, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, fmt.Errorf("%w: stdout is empty, want a JSON object", ErrInvalidOutput)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("%w: stdout is not valid JSON (syntax error at byte %d)", ErrInvalidOutput, syn.Offset)
		}
		return nil, fmt.Errorf("%w: stdout is not a JSON object", ErrInvalidOutput)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: stdout is not a JSON object", ErrInvalidOutput)
	}
	hdr := make(http.Header, len(raw))
	for name, value := range raw {
		if !isToken(name) {
			return nil, fmt.Errorf("%w: a header name is not a valid HTTP token", ErrInvalidOutput)
		}
		var v string
		if err := json.Unmarshal(value, &v); err != nil {
			return nil, fmt.Errorf("%w: the value of header %s is not a JSON string", ErrInvalidOutput, http.CanonicalHeaderKey(name))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("%w: the value of header %s contains CR, LF or NUL", ErrInvalidOutput, http.CanonicalHeaderKey(name))
		}
		hdr.Set(name, v)
	}
	return hdr, nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// cappedBuffer keeps at most max bytes. Past that it fails the write (so
// the helper gets SIGPIPE instead of running on) or, if !failOnOverflow,
// drops the rest.
type cappedBuffer struct {
	buf            bytes.Buffer
	max            int
	failOnOverflow bool
	overflow       bool
}

var errOverflow = errors.New("output limit exceeded")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if len(p) <= room {
		return b.buf.Write(p)
	}
	b.overflow = true
	if b.failOnOverflow {
		return 0, errOverflow
	}
	b.buf.Write(p[:room])
	return len(p), nil
}

// excerpt is ": <stderr>", trimmed, or "" if stderr was empty.
func (b *cappedBuffer) excerpt() string {
	s := strings.TrimSpace(strings.ToValidUTF8(b.buf.String(), "\uFFFD"))
	if s == "" {
		return ""
	}
	if b.overflow {
		s += " …"
	}
	return ": " + s
}

// Transport returns a RoundTripper that sets the helper's headers on every
// request through base (running the helper on first use), and on a 401 runs
// it again once and retries the request once. The retry happens only when
// the request body can be replayed (req.GetBody != nil or no body);
// otherwise the helper still reruns, for the next request, and the 401 is
// returned. Errors from the helper fail the request.
func (h *Helper) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{h: h, base: base}
}

type transport struct {
	h    *Helper
	base http.RoundTripper
}

// CloseIdleConnections closes the idle connections of the transport
// underneath, so http.Client.CloseIdleConnections reaches it through this
// wrapper.
func (t *transport) CloseIdleConnections() { outbound.CloseIdle(t.base) }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	hdr, gen, err := t.h.fetch(ctx, false, 0)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(withHeaders(req, hdr))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	hdr, _, err = t.h.fetch(ctx, true, gen)
	if err != nil {
		discard(resp)
		return nil, err
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if !replayable {
		return resp, nil
	}
	retry := withHeaders(req, hdr)
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			discard(resp)
			return nil, fmt.Errorf("headersHelper: replaying request body: %w", err)
		}
		retry.Body = body
	}
	discard(resp)
	return t.base.RoundTrip(retry)
}

// withHeaders is a copy of req carrying hdr: a RoundTripper must not
// modify its request.
func withHeaders(req *http.Request, hdr http.Header) *http.Request {
	r := req.Clone(req.Context())
	for name, vs := range hdr {
		r.Header[name] = append([]string(nil), vs...)
	}
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// discard drains a little of resp's body, so its connection can be reused,
// and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
}
