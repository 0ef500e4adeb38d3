package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// token is the bearer token of a running serve.
func (s *serving) token(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

type apiAnswer struct {
	status int
	body   string
}

// request sends one API request with the token, bounded by ctx.
func (s *serving) request(ctx context.Context, method, path, token, body string) apiAnswer {
	req, _ := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return apiAnswer{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return apiAnswer{status: resp.StatusCode, body: string(b)}
}

// callInBackground POSTs body to /v1/call; the answer arrives on the
// channel. The request is cancelled and waited for when the test ends,
// before serve stops.
func (s *serving) callInBackground(t *testing.T, ctx context.Context, token, body string) <-chan apiAnswer {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	done := make(chan apiAnswer, 1)
	wg.Go(func() { done <- s.request(ctx, "POST", "/v1/call", token, body) })
	return done
}

type pendingApproval struct {
	ID      string   `json:"id"`
	Session string   `json:"session"`
	Tool    string   `json:"tool"`
	Command []string `json:"command"`
}

// followApprovals reads GET /v1/inbox/stream and sends the approvals of
// each snapshot, until the test ends.
func (s *serving) followApprovals(t *testing.T, ctx context.Context, token string) <-chan []pendingApproval {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/inbox/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("inbox stream: %v %v", resp, err)
	}
	out := make(chan []pendingApproval, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { resp.Body.Close(); wg.Wait() })
	wg.Go(func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Approvals []pendingApproval `json:"approvals"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil {
				select {
				case out <- ev.Approvals:
				case <-ctx.Done():
					return
				}
			}
		}
	})
	return out
}

func nextApprovals(t *testing.T, ctx context.Context, evs <-chan []pendingApproval, n int) []pendingApproval {
	t.Helper()
	for {
		select {
		case l := <-evs:
			if len(l) == n {
				return l
			}
		case <-ctx.Done():
			t.Fatalf("the inbox stream never showed %d pending approvals", n)
		}
	}
}

func awaitAnswer(t *testing.T, ctx context.Context, done <-chan apiAnswer, what string) apiAnswer {
	t.Helper()
	select {
	case a := <-done:
		return a
	case <-ctx.Done():
		t.Fatalf("%s did not return", what)
		return apiAnswer{}
	}
}

// registerBody is a POST /v1/call body: session s registers an mcptest
// server named fresh, with an argument holding a space and a secret env.
func registerBody() (body string, command []string) {
	args, _ := json.Marshal(map[string]any{"name": "fresh", "transport": "stdio", "command": mcptestBin,
		"args": []string{"-name", "fresh server"}, "env": map[string]string{"TOKEN": "some-secret"}})
	return `{"session":"s","tool":"register_mcp","arguments":` + string(args) + `}`,
		[]string{mcptestBin, "-name", "fresh server"}
}

// Without --approve-host-tools a model's register_mcp waits in the
// approval inbox; the CLI lists it with its command line and answers it.
func TestServeHostToolsWaitForApproval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, errOut, code := runCLIData(t, t.TempDir(), "approvals"); code != 1 || !strings.Contains(errOut, "no sidecar is running") {
		t.Fatalf("approvals without a sidecar: code %d: %s", code, errOut)
	}
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, "--config", cfg, "--data", data)
	token := s.token(t)
	if a := s.request(ctx, "POST", "/v1/sessions/s/activate", token, `{"groups":["config"]}`); a.status != http.StatusOK {
		t.Fatalf("activate config: %d %s", a.status, a.body)
	}
	inbox := s.followApprovals(t, ctx, token)
	nextApprovals(t, ctx, inbox, 0)

	body, command := registerBody()
	done := s.callInBackground(t, ctx, token, body)
	pending := nextApprovals(t, ctx, inbox, 1)[0]
	if pending.Tool != "register_mcp" || pending.Session != "s" || !slices.Equal(pending.Command, command) {
		t.Fatalf("pending %+v, want register_mcp from s running %q", pending, command)
	}
	a := s.request(ctx, "GET", "/v1/approvals", token, "")
	if a.status != http.StatusOK || !strings.Contains(a.body, pending.ID) || strings.Contains(a.body, "some-secret") {
		t.Fatalf("GET /v1/approvals: %d %s", a.status, a.body)
	}
	select {
	case a := <-done:
		t.Fatalf("register_mcp returned before anyone approved it: %d %s", a.status, a.body)
	default:
	}

	out, errOut, code := runCLIData(t, data, "approvals")
	quoted := strconv.Quote(mcptestBin) + ` "-name" "fresh server"`
	if code != 0 || !strings.Contains(out, pending.ID) || !strings.Contains(out, "session s wants to run register_mcp") ||
		!strings.Contains(out, "command: "+quoted) || strings.Contains(out, "some-secret") {
		t.Fatalf("approvals: code %d:\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLIData(t, data, "approvals", "--json")
	var listed pendingApproval
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || listed.ID != pending.ID || strings.Contains(out, "some-secret") {
		t.Fatalf("approvals --json: code %d:\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approvals", "allow"}, 2, "approvals allow|deny ID"},
		{[]string{"approvals", "maybe", pending.ID}, 2, "approvals allow|deny ID"},
		{[]string{"approvals", "--reason", "why"}, 2, "unknown flag --reason; it goes with approvals deny"},
		{[]string{"approvals", "allow", pending.ID, "--reason", "why"}, 2, "unknown flag --reason; it goes with approvals deny"},
		{[]string{"approvals", "allow", "no-such-id"}, 1, "unknown_approval"},
	} {
		if _, errOut, code := runCLIData(t, data, tc.args...); code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: code %d: %s, want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}

	if out, errOut, code := runCLIData(t, data, "approvals", "allow", pending.ID); code != 0 || out != "approval "+pending.ID+" allowed\n" {
		t.Fatalf("approvals allow: code %d: %s%s", code, out, errOut)
	}
	a = awaitAnswer(t, ctx, done, "the allowed register_mcp")
	if a.status != http.StatusOK || !strings.Contains(a.body, `"isError":false`) || !strings.Contains(a.body, "ready") {
		t.Fatalf("the allowed register_mcp: %d %s", a.status, a.body)
	}
	nextApprovals(t, ctx, inbox, 0)

	done = s.callInBackground(t, ctx, token, `{"session":"s","tool":"toggle_item","arguments":{"kind":"mcp","id":"fresh","enabled":false}}`)
	pending = nextApprovals(t, ctx, inbox, 1)[0]
	const reason = "keep it running"
	if out, errOut, code := runCLIData(t, data, "approvals", "deny", pending.ID, "--reason", reason); code != 0 || out != "approval "+pending.ID+" denied\n" {
		t.Fatalf("approvals deny: code %d: %s%s", code, out, errOut)
	}
	a = awaitAnswer(t, ctx, done, "the denied toggle_item")
	if a.status != http.StatusOK || !strings.Contains(a.body, `"isError":true`) || !strings.Contains(a.body, reason) {
		t.Fatalf("the denied toggle_item: %d %s", a.status, a.body)
	}
}

// With --approve-host-tools the same register_mcp runs at once.
func TestServeApproveHostTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	s := startServe(t, "--config", cfg, "--data", t.TempDir(), "--approve-host-tools")
	token := s.token(t)
	if a := s.request(ctx, "POST", "/v1/sessions/s/activate", token, `{"groups":["config"]}`); a.status != http.StatusOK {
		t.Fatalf("activate config: %d %s", a.status, a.body)
	}
	body, _ := registerBody()
	a := s.request(ctx, "POST", "/v1/call", token, body)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"isError":false`) || !strings.Contains(a.body, "ready") {
		t.Fatalf("register_mcp: %d %s", a.status, a.body)
	}
	if a := s.request(ctx, "GET", "/v1/approvals", token, ""); a.status != http.StatusOK || strings.TrimSpace(a.body) != `{"approvals":[]}` {
		t.Errorf("GET /v1/approvals: %d %s", a.status, a.body)
	}
	if a := s.request(ctx, "GET", "/v1/servers", token, ""); !strings.Contains(a.body, `"name":"fresh"`) {
		t.Errorf("fresh is not listed: %s", a.body)
	}
}

// mcpvisor stdio has no inbox a person can answer: the calls that change
// the servers are put to the client's user as a form elicitation showing
// the whole command line, refused to a client that cannot ask, and run at
// once with --approve-host-tools.
func TestStdioHostTools(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    []string
		caps    string // the client's capabilities
		answer  string // the client's elicitation action; "" when it must not be asked
		allowed bool
		reason  string
	}{
		{"client accepts", nil, `{"elicitation":{"form":{}}}`, "accept", true, ""},
		{"client declines", nil, `{"elicitation":{"form":{}}}`, "decline", false, "the user declined"},
		{"client cannot ask", nil, `{}`, "", false, "cannot ask its user"},
		{"approved by flag", []string{"--approve-host-tools"}, `{"elicitation":{"form":{}}}`, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, `{"mcpServers":{}}`)
			c := startStdioCLI(t, append([]string{"--config", cfg, "--data", t.TempDir()}, tc.flag...)...)
			var asked []string
			rpc := func(id int, method, params string) string {
				t.Helper()
				c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`)
				return c.answer(strconv.Itoa(id), func(line string) {
					var m struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
						Params struct {
							Message string `json:"message"`
						} `json:"params"`
					}
					if json.Unmarshal([]byte(line), &m) != nil || m.Method != "elicitation/create" {
						return
					}
					asked = append(asked, m.Params.Message)
					action := tc.answer
					if action == "" {
						action = "cancel"
					}
					c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"` + action + `"}}`)
				})
			}
			rpc(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+tc.caps+`,"clientInfo":{"name":"t","version":"1"}}`)
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if activated := rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["config"]}}`); strings.Contains(activated, `"isError":true`) {
				t.Fatalf("activate config: %s", activated)
			}
			if listed := rpc(3, "tools/call", `{"name":"list_items","arguments":{"type":"mcp"}}`); strings.Contains(listed, `"isError":true`) || len(asked) > 0 {
				t.Fatalf("list_items changes nothing and must not ask: %s (asked %q)", listed, asked)
			}
			args, _ := json.Marshal(map[string]any{"name": "fresh", "transport": "stdio", "command": mcptestBin, "args": []string{"-name", "two words"}})
			registered := rpc(4, "tools/call", `{"name":"register_mcp","arguments":`+string(args)+`}`)
			switch {
			case tc.answer == "" && len(asked) > 0:
				t.Errorf("the client was asked %q", asked)
			case tc.answer != "" && (len(asked) != 1 || !strings.Contains(asked[0], strconv.Quote(mcptestBin)) ||
				!strings.Contains(asked[0], `[2] "two words"`)):
				t.Errorf("the client was asked %q; want one question with every argument of the command line", asked)
			}
			if tc.allowed != !strings.Contains(registered, `"isError":true`) || !strings.Contains(registered, tc.reason) {
				t.Fatalf("register_mcp: %s; want allowed %v, reason %q", registered, tc.allowed, tc.reason)
			}
			if tc.allowed && !strings.Contains(registered, "ready") {
				t.Fatalf("register_mcp allowed but not ready: %s", registered)
			}
		})
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"run /bin/x 'two words'": "run /bin/x 'two words'",
		"ok\x1b[2K\rfake":        `ok\x1b[2K\rfake`,
		"name\u202egnp.exe":      `name\u202egnp.exe`,
		"zero\u200bwidth":        `zero\u200bwidth`,
		"café":                   "café",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
