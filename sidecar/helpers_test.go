package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

var mcptestBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{
		"github.com/mcpvisor/mcpvisor/examples/servers/mcptest": &mcptestBin,
	})
}

// The test sidecar's tokens: testToken is the admin token, which every
// route takes; testGatewayToken the gateway token, an MCP client's.
const (
	testToken        = "s3cret-token"
	testGatewayToken = "gateway-s3cret-token"
)

func mcptest(name string, args ...string) mcpvisor.ServerConfig {
	return mcpvisor.ServerConfig{Name: name, Type: "stdio", Command: mcptestBin,
		Args: append([]string{"-name", name}, args...), Enabled: true}
}

// api is a sidecar on a real loopback listener in front of a real Host.
type api struct {
	t    *testing.T
	h    *mcpvisor.Host
	ts   *httptest.Server
	data string
}

// openAPI opens a Host with the inbox on, serves it, and waits for the
// enabled servers. Both are closed when the test ends.
func openAPI(t *testing.T, sopts sidecar.Options, servers ...mcpvisor.ServerConfig) *api {
	t.Helper()
	return openAPIHost(t, mcpvisor.Options{}, sopts, servers...)
}

// openAPIHost is openAPI with hopts for the Host (its approval options,
// AlwaysOn, a restart policy, a DataDir); the config, data directory
// (unless hopts has one), logger, grace periods, restart policy (unless
// hopts has one) and Inbox are set here.
func openAPIHost(t *testing.T, hopts mcpvisor.Options, sopts sidecar.Options, servers ...mcpvisor.ServerConfig) *api {
	t.Helper()
	data := hopts.DataDir
	if data == "" {
		data = t.TempDir()
	}
	hopts.Config, hopts.DataDir, hopts.Inbox = &mcpvisor.Config{Servers: servers}, data, true
	hopts.Logger = slog.New(slog.DiscardHandler)
	hopts.StopGrace, hopts.TermGrace = 500*time.Millisecond, 500*time.Millisecond
	if hopts.Restart == (mcpvisor.RestartPolicy{}) {
		hopts.Restart = mcpvisor.RestartPolicy{InitialInterval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond,
			RandomizationFactor: -1}
	}
	h, err := mcpvisor.Open(context.Background(), hopts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if sopts.Token == "" {
		sopts.Token, sopts.AdminToken = testGatewayToken, testToken
	}
	sopts.DataDir = data
	sopts.Logger = slog.New(slog.DiscardHandler)
	ts := httptest.NewServer(sidecar.New(h, sopts).Handler())
	t.Cleanup(ts.Close) // runs before h.Close
	var enabled []string
	for _, sc := range servers {
		if sc.Enabled {
			enabled = append(enabled, sc.Name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx, enabled...); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return &api{t: t, h: h, ts: ts, data: data}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %d is not JSON: %v\n%s", r.status, err, r.body)
	}
}

// errorCode is the code of a JSON error response.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Error struct {
			Code       string `json:"code"`
			Message    string `json:"message"`
			RetryAfter int64  `json:"retryAfterMs"`
		} `json:"error"`
	}
	r.json(t, &e)
	if e.Error.Message == "" {
		t.Errorf("error %q without a message: %s", e.Error.Code, r.body)
	}
	return e.Error.Code
}

// do sends a request with the test token; body, when not nil, is sent as
// JSON (a string or []byte as it is).
func (a *api) do(method, path string, body any) response {
	a.t.Helper()
	return a.doAuth(method, path, body, "Bearer "+testToken, nil)
}

// doHost is do with headers, Host among them.
func (a *api) doHost(method, path string, body any, hdr http.Header) response {
	a.t.Helper()
	return a.doAuth(method, path, body, "Bearer "+testToken, hdr)
}

func (a *api) doAuth(method, path string, body any, auth string, hdr http.Header) response {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.ts.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if host := hdr.Get("Host"); host != "" { // the client sends req.Host, not the header
		req.Host = host
	}
	resp, err := a.ts.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type sseEvent struct {
	name string
	data string
}

// readSSE reads events until one named in stop (or the end of the body).
func readSSE(t *testing.T, body io.Reader, stop ...string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				evs = append(evs, cur)
				for _, s := range stop {
					if cur.name == s {
						return evs
					}
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		}
	}
	return evs
}

// eventually polls cond every 10 ms for at most 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type callResult struct {
	ResultType string          `json:"type"`
	IsError    bool            `json:"isError"`
	Result     string          `json:"wire"`
	Structured json.RawMessage `json:"structuredContent"`
	Media      []struct {
		Kind     string `json:"kind"`
		URL      string `json:"url"`
		MimeType string `json:"mimeType"`
		Size     int64  `json:"size"`
	} `json:"media"`
	Task *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Done   bool   `json:"done"`
	} `json:"task"`
}
