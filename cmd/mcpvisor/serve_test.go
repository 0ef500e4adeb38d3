package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listening = regexp.MustCompile(`mcpvisor serve: listening on (https?://\S+) \(token in (.+)\)`)

// serving is a running `mcpvisor serve`.
type serving struct {
	url, tokenPath string
	stderr         *syncBuffer
	stop           context.CancelFunc
	done           chan error
}

// startServe runs serve on a free loopback port until the test ends.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{stderr: &syncBuffer{}, stop: cancel, done: make(chan error, 1)}
	args = append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)
	go func() { s.done <- run(ctx, args, io.Discard, s.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not return")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listening.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url, s.tokenPath = m[1], m[2]
			return s
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve returned %v: %s", err, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", s.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shutdown cancels serve's context and waits for it, bounded.
func (s *serving) shutdown(t *testing.T) error {
	t.Helper()
	s.stop()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after its context ended")
		return nil
	}
}

func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestServeGeneratesTokenAndShutsDown(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}}}`)
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, "--config", cfg, "--data", data)
	if want := filepath.Join(data, "token"); s.tokenPath != want {
		t.Errorf("token in %q, want %q", s.tokenPath, want)
	}
	st, err := os.Stat(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", st.Mode().Perm())
	}
	raw, _ := os.ReadFile(s.tokenPath)
	token := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Fatalf("token %q is not 32 bytes of hex", token)
	}

	if code, _ := get(t, s.url+"/healthz", ""); code != http.StatusOK {
		t.Errorf("healthz %d", code)
	}
	if code, _ := get(t, s.url+"/v1/servers", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	code, body := get(t, s.url+"/v1/servers", token)
	var l struct {
		Servers []struct{ Name string } `json:"servers"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil || len(l.Servers) != 1 || l.Servers[0].Name != "t" {
		t.Fatalf("servers: %d %s", code, body)
	}
	if code, _ := get(t, s.url+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d", code)
	}
	if code, body := get(t, s.url+"/metrics", token); code != http.StatusOK || !strings.Contains(string(body), `mcpvisor_server_state{server="t"`) {
		t.Errorf("metrics: %d, no server state for t:\n%.500s", code, body)
	}
	if err := s.shutdown(t); err != nil {
		t.Fatalf("serve returned %v", err)
	}

	// The next start reuses the token, and the journal was released.
	s = startServe(t, "--config", cfg, "--data", data)
	if again, _ := os.ReadFile(s.tokenPath); strings.TrimSpace(string(again)) != token {
		t.Errorf("token changed: %q → %q", token, again)
	}
	if code, _ := get(t, s.url+"/v1/servers", token); code != http.StatusOK {
		t.Errorf("old token refused: %d", code)
	}
}

func TestServeTokenFile(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	data := t.TempDir()
	tf := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tf, []byte("given-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--config", cfg, "--data", data, "--token-file", tf)
	if s.tokenPath != tf {
		t.Errorf("token in %q", s.tokenPath)
	}
	if code, body := get(t, s.url+"/v1/servers", "given-token-0123456789"); code != http.StatusOK {
		t.Errorf("given token: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(data, "token")); !os.IsNotExist(err) {
		t.Errorf("a token was generated although one was given: %v", err)
	}
}

// Shutdown cancels a call in flight instead of waiting for it.
func TestServeShutdownCancelsCalls(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST"}}}`)
	data := t.TempDir()
	s := startServe(t, "--config", cfg, "--data", data)
	raw, _ := os.ReadFile(s.tokenPath)
	body := `{"tool":"mcp__t__progress","arguments":{"steps":100000,"delay_ms":20}}`
	req, _ := http.NewRequest("POST", s.url+"/v1/call", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(raw)))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf) // the first progress event: the call is in flight
	if err != nil || !strings.Contains(string(buf[:n]), "event: progress") {
		t.Fatalf("first read %q: %v", buf[:n], err)
	}
	start := time.Now()
	if err := s.shutdown(t); err != nil {
		t.Fatalf("serve returned %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), "event: error") || !strings.Contains(string(rest), `"code":"cancelled"`) ||
		!strings.Contains(string(rest), "shutting down") {
		t.Errorf("the stream ended without a cancelled error: %.500s", rest)
	}
}

func TestServeRefusals(t *testing.T) {
	t.Setenv(configEnv, "")
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces", []string{"--listen", "0.0.0.0:7071"}, "needs TLS: pass --tls-cert and --tls-key"},
		{"empty host", []string{"--listen", ":7071"}, "needs TLS: pass --tls-cert and --tls-key"},
		{"public address", []string{"--listen", "192.0.2.1:7071"}, "needs TLS: pass --tls-cert and --tls-key"},
		{"a name", []string{"--listen", "example.com:7071"}, "needs TLS: pass --tls-cert and --tls-key"},
		{"no port", []string{"--listen", "127.0.0.1"}, "--listen"},
		{"no config", nil, "no config file"},
		{"stray argument", []string{"extra"}, "unexpected argument"},
		{"empty token file", []string{"--token-file", os.DevNull}, "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--data", t.TempDir()}
			if tc.name != "no config" {
				args = append(args, "--config", cfg)
			}
			err := run(context.Background(), append(args, tc.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:7071": true, "127.0.0.2:0": true, "[::1]:7071": true, "localhost:7071": true,
		"0.0.0.0:7071": false, "[::]:7071": false, ":7071": false, "10.0.0.1:80": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v", addr, err)
		}
	}
}

// /mcp and the /v1 routes that change state refuse a browser origin or a
// host name they were not told of, and take the ones --allowed-origins and
// --allowed-hosts list.
func TestServeAllowedOriginsAndHosts(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	s := startServe(t, "--config", cfg, "--data", t.TempDir(),
		"--allowed-origins", "https://app.example", "--allowed-hosts", "mcp.internal")
	tok, err := os.ReadFile(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		origin, host string
		want         int
	}{
		{"", "", http.StatusOK},
		{"https://app.example", "", http.StatusOK},
		{"https://evil.example", "", http.StatusForbidden},
		{"", "mcp.internal", http.StatusOK},
		{"", "evil.example", http.StatusForbidden},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Origin %q, Host %q: status %d, want %d", tc.origin, tc.host, resp.StatusCode, tc.want)
		}

		// The same through /v1 (issue 22, finding 5: it checked neither).
		req, _ = http.NewRequest(http.MethodPost, s.url+"/v1/sessions/s/end", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := tc.want
		if want == http.StatusOK {
			want = http.StatusNoContent // what ending a session answers
		}
		if resp.StatusCode != want {
			t.Errorf("/v1: Origin %q, Host %q: status %d, want %d: %s", tc.origin, tc.host, resp.StatusCode, want, b)
		}
	}
}

// TestServeBoundsIdleConnections is issue 22's finding 4 against the
// command: clients without the token that each ask GET /healthz and then
// hold their keep-alive connection are held only up to the per-address
// limit (sidecar.DefaultMaxUnauthConnsPerAddr), the longest idle closed
// for each newcomer, and a call with the token is answered meanwhile.
// Before, every such connection was held until descriptors ran out.
func TestServeBoundsIdleConnections(t *testing.T) {
	const limit, extra = 64, 6 // sidecar.DefaultMaxUnauthConnsPerAddr
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	s := startServe(t, "--config", cfg, "--data", t.TempDir())
	tok, err := os.ReadFile(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.url, "http://")
	healthz := func(c net.Conn, br *bufio.Reader) error {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	type held struct {
		c  net.Conn
		br *bufio.Reader
	}
	var conns []held
	for i := range limit + extra {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second)) // a guard; nothing waits on it
		h := held{c, bufio.NewReader(c)}
		if err := healthz(h.c, h.br); err != nil {
			t.Fatalf("healthz on connection %d: %v", i, err)
		}
		conns = append(conns, h)
	}
	if code, body := get(t, s.url+"/v1/servers", strings.TrimSpace(string(tok))); code != http.StatusOK {
		t.Fatalf("with the token: %d %s", code, body)
	}
	for i, h := range conns {
		err := healthz(h.c, h.br)
		if want := i >= extra; (err == nil) != want {
			t.Errorf("connection %d: held %v, want %v (%v)", i, err == nil, want, err)
		}
	}
}

// An open /readyz says only whether the host is ready; which servers are
// not, and their states, need the token (issue 22, finding 5).
func TestServeReadyzWithoutToken(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"secret-crm": {"command": "MCPTEST", "args": ["-exit-at-start", "3"]}}}`)
	s := startServe(t, "--config", cfg, "--data", t.TempDir())
	tok, err := os.ReadFile(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, s.url+"/readyz", "")
	if code != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != `{"status":"not_ready"}` {
		t.Errorf("readyz without the token: %d %s", code, body)
	}
	code, body = get(t, s.url+"/readyz", strings.TrimSpace(string(tok)))
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "secret-crm") {
		t.Errorf("readyz with the token: %d %s, want the server named", code, body)
	}
}

// SIGHUP reads the config file again: a server added starts, one changed
// restarts, one removed stops, one unchanged keeps its process; a file
// with an error changes nothing and is said.
func TestServeReloadsOnHangup(t *testing.T) {
	data := t.TempDir()
	cfgPath := writeConfig(t, `{"mcpServers": {
	  "keep": {"command": "NOTES"},
	  "change": {"command": "NOTES", "description": "before"},
	  "drop": {"command": "NOTES"}}}`)
	s := startSidecar(t, "--config", cfgPath, "--data", data)
	pids := func() map[string]string {
		t.Helper()
		out, errOut, code := cliExec("", "status", "--data", data, "--json")
		if code != 0 {
			t.Fatalf("status: exit %d: %s", code, errOut)
		}
		var sts []struct {
			Name, State string
			PID         int
		}
		if err := json.Unmarshal([]byte(out), &sts); err != nil {
			t.Fatalf("status --json: %v: %s", err, out)
		}
		m := map[string]string{}
		for _, st := range sts {
			m[st.Name] = fmt.Sprintf("%s/%d", st.State, st.PID)
		}
		return m
	}
	before := pids()
	hangUp := func(want string) {
		t.Helper()
		seen := strings.Count(s.stderr.String(), "SIGHUP") + strings.Count(s.stderr.String(), "reloaded ")
		if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(s.stderr.String(), "SIGHUP")+strings.Count(s.stderr.String(), "reloaded ") == seen {
			if time.Now().After(deadline) {
				t.Fatalf("nothing said after SIGHUP: %s", s.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(s.stderr.String(), want) {
			t.Fatalf("after SIGHUP, want %q in: %s", want, s.stderr)
		}
	}

	// A broken file: nothing changes.
	if err := os.WriteFile(cfgPath, []byte(`{"mcpServers": {"keep": {"command": ""}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	hangUp("not reloaded, the servers run on as they were")
	if after := pids(); !maps.Equal(after, before) {
		t.Fatalf("a broken file changed the servers: %v, before %v", after, before)
	}

	body := strings.ReplaceAll(`{"mcpServers": {
	  "keep": {"command": "NOTES"},
	  "change": {"command": "NOTES", "description": "after"},
	  "new": {"command": "NOTES"}}}`, "NOTES", notesBin)
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	hangUp("reloaded " + cfgPath + ": added new, changed change, removed drop, 1 unchanged")
	var after map[string]string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after = pids()
		if strings.HasPrefix(after["new"], "ready/") && strings.HasPrefix(after["change"], "ready/") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the servers after the reload: %v", after)
		}
	}
	if after["keep"] != before["keep"] {
		t.Errorf("the unchanged server: %s, before %s", after["keep"], before["keep"])
	}
	if after["change"] == before["change"] {
		t.Errorf("the changed server kept its process: %s", after["change"])
	}
	if _, ok := after["drop"]; ok {
		t.Errorf("the removed server is still there: %v", after)
	}
}

// serve logs a server that crash-loops, at the default level.
func TestServeLogsTransitions(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"crashes": {"command": "/bin/false"}, "notes": {"command": "NOTES"}}}`)
	s := startSidecar(t, "--config", cfg, "--data", t.TempDir())
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s.stderr.String(), `msg="server backoff" server=crashes`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no backoff logged for the crashing server: %s", s.stderr)
		}
	}
	if strings.Contains(s.stderr.String(), "server=notes") {
		t.Errorf("a healthy server's transitions at the default level: %s", s.stderr)
	}
}
