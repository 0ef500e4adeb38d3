package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// echoHTTP is the echo server over Streamable HTTP (echoserver -http), run
// as a child process of the harness: its CPU time stays out of the host's
// profile and its memory and descriptors out of the host's RSS and fd count,
// and it has an open-file limit of its own (the scale scenario holds one
// connection per supervised server at each end).
type echoHTTP struct {
	cmd   *exec.Cmd
	url   string       // the MCP endpoint
	stats string       // the counters' URL
	hc    *http.Client // for the counters only
}

// serverStats are echoserver's counters (its /stats endpoint).
type serverStats struct {
	Conns    int64 `json:"conns"` // accepted, ever
	Open     int64 `json:"open"`  // open now
	Sessions int64 `json:"sessions"`
	Posts    int64 `json:"posts"`
	Gets     int64 `json:"gets"`
	Deletes  int64 `json:"deletes"`
}

// startEchoHTTP starts the server on a free loopback port and waits for the
// URL it prints. modern: it speaks 2026-07-28 (-era modern), no session.
func startEchoHTTP(ctx context.Context, env *Env, modern bool) (*echoHTTP, error) {
	cmd := exec.Command(env.Server, append([]string{"-http", "127.0.0.1:0"}, echoServerArgs(modern)...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	s := &echoHTTP{cmd: cmd, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 10 * time.Second}}
	select {
	case u, ok := <-line:
		if !ok || !strings.HasPrefix(u, "http://") {
			s.close()
			return nil, fmt.Errorf("echoserver -http printed %q, not its URL", u)
		}
		s.url = u
		s.stats = strings.TrimSuffix(u, "/mcp") + "/stats"
	case <-time.After(10 * time.Second):
		s.close()
		return nil, errors.New("echoserver -http did not print its URL within 10 s")
	case <-ctx.Done():
		s.close()
		return nil, ctx.Err()
	}
	return s, nil
}

// counters reads the server's counters.
func (s *echoHTTP) counters() (serverStats, error) {
	var st serverStats
	resp, err := s.hc.Get(s.stats)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// rssKB is the server process's resident set, in KiB (0 if unknown).
func (s *echoHTTP) rssKB() float64 {
	return statusKB(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid), "VmRSS:")
}

func (s *echoHTTP) close() error {
	s.hc.CloseIdleConnections()
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		return <-done
	}
}

// fdCount is how many file descriptors this process has open.
func fdCount() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents) - 1 // ReadDir's own
}
