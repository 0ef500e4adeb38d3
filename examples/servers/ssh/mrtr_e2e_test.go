package main_test

// The SSH server under a host that speaks MCP 2026-07-28: no initialize,
// and passwords asked through input_required results (MRTR) instead of
// elicitation requests of the server's own.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// modernVersion is the revision the host and the server both speak.
const modernVersion = "2026-07-28"

// wantModern fails the test unless the host speaks modernVersion to the
// server.
func (r *rig) wantModern() {
	r.t.Helper()
	for _, st := range r.host.Status() {
		if st.Name != serverName {
			continue
		}
		if st.ProtocolVersion != modernVersion {
			r.t.Fatalf("the host speaks protocol %q to the server, want %s", st.ProtocolVersion, modernVersion)
		}
		if st.ServerInfo.Name != "ssh" {
			r.t.Errorf("serverInfo %+v, want the ssh server's (from server/discover)", st.ServerInfo)
		}
		return
	}
	r.t.Fatalf("no status for server %q", serverName)
}

// inputRequired is an input_required result as the server wrote it.
type inputRequired struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message string `json:"message"`
		} `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

// callPassInput calls tool with PassInput, so that an input_required result
// comes back to the test instead of the host's elicitation handler; resume
// is the retry's inputResponses and requestState, or nil.
func (r *rig) callPassInput(tool string, args any, resume json.RawMessage) (*mcpvisor.Result, error) {
	r.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout+10*time.Second)
	defer cancel()
	res, err := r.host.CallWith(ctx, mcpvisor.ToolName(serverName, tool), raw, mcpvisor.CallOptions{PassInput: true, Resume: resume})
	if err == nil {
		r.mu.Lock()
		r.results = append(r.results, tool+": "+res.Text, string(res.Raw))
		r.mu.Unlock()
	}
	return res, err
}

// A password login and a sudo password, through the host's elicitation
// handler: the host fulfils each input_required round and retries.
func TestModernPasswordLoginAndSudoThroughMRTR(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.wantModern()
	r.sshd.SudoWithPassword(t)
	r.addAlias("box", map[string]any{"auth": "password", "key_path": nil, "sudo": "prompt"})

	r.asker.reply(r.sshd.Password(), r.sshd.Password())
	if got := strings.TrimSpace(stdout(t, r.ok("exec", sudoArgs("box", "id -u")))); got != "0" {
		t.Fatalf("sudo id -u = %q, want 0", got)
	}
	asked := r.asker.requests()
	if len(asked) != 2 {
		t.Fatalf("%d elicitations, want 2 (login, then sudo)", len(asked))
	}
	if !strings.Contains(asked[0].Message, "login password") || !strings.Contains(asked[1].Message, "sudo password") {
		t.Errorf("elicitations %q, %q: want the login password, then the sudo one", asked[0].Message, asked[1].Message)
	}
	// Both are cached now: no more rounds.
	if got := strings.TrimSpace(stdout(t, r.ok("exec", sudoArgs("box", "id -u")))); got != "0" {
		t.Fatalf("second sudo id -u = %q, want 0", got)
	}
	if n := r.asker.count(); n != 2 {
		t.Fatalf("%d elicitations after a second call, want 2 (both passwords cached)", n)
	}
	if strings.Contains(r.serverLog(), "elicitation/create") {
		t.Errorf("the server sent a request of its own in the modern era:\n%s", r.serverLog())
	}
}

// The rounds one by one, as a gateway's modern client sees them: login,
// then sudo, each an input_required result whose requestState carries no
// answer in clear and cannot be altered; then the result.
func TestMRTRRoundsOneByOne(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.wantModern()
	r.sshd.SudoWithPassword(t)
	r.addAlias("box", map[string]any{"auth": "password", "key_path": nil, "sudo": "prompt"})
	args := sudoArgs("box", "id -u")
	pw := r.sshd.Password()

	round := func(n int, resume json.RawMessage, want string) (key, state string) {
		t.Helper()
		res, err := r.callPassInput("exec", args, resume)
		if err != nil {
			t.Fatalf("round %d: %v", n, err)
		}
		if !res.InputRequired {
			t.Fatalf("round %d: a complete result %q, want input_required", n, res.Text)
		}
		var ir inputRequired
		if err := json.Unmarshal(res.Raw, &ir); err != nil {
			t.Fatal(err)
		}
		if ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
			t.Fatalf("round %d: %s, want one input request and a requestState", n, res.Raw)
		}
		for k, req := range ir.InputRequests {
			if req.Method != "elicitation/create" || !strings.Contains(req.Params.Message, want) {
				t.Fatalf("round %d: input request %s %q, want elicitation/create for the %s", n, req.Method, req.Params.Message, want)
			}
			key = k
		}
		if strings.Contains(string(res.Raw), pw) {
			t.Fatalf("round %d: the password is in the input_required result", n)
		}
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
			if b, err := enc.DecodeString(ir.RequestState); err == nil && strings.Contains(string(b), pw) {
				t.Fatalf("round %d: the password is in requestState, base64-encoded", n)
			}
		}
		return key, ir.RequestState
	}
	answer := func(key, state, password string) json.RawMessage {
		b, err := json.Marshal(map[string]any{
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"password": password}}},
			"requestState":   state,
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	loginKey, state1 := round(1, nil, "login password")
	sudoKey, state2 := round(2, answer(loginKey, state1, pw), "sudo password")
	if sudoKey == loginKey {
		t.Errorf("the sudo ask has the login ask's key %q", loginKey)
	}

	// A requestState altered by the client is refused.
	b := []byte(state2)
	b[len(b)/2] ^= 1
	if b[len(b)/2] == '-' || b[len(b)/2] == '_' {
		b[len(b)/2] = 'A'
	}
	if res, err := r.callPassInput("exec", args, answer(sudoKey, string(b), pw)); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("altered requestState: %+v, %v; want an error about requestState", res, err)
	}
	// So is one presented for other arguments.
	other := sudoArgs("box", "id -un")
	if _, err := r.callPassInput("exec", other, answer(sudoKey, state2, pw)); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("requestState of another call: %v; want an error about requestState", err)
	}

	res, err := r.callPassInput("exec", args, answer(sudoKey, state2, pw))
	if err != nil {
		t.Fatalf("round 3: %v", err)
	}
	if res.InputRequired || res.IsError {
		t.Fatalf("round 3: %s, want the command's result", res.Raw)
	}
	if got := strings.TrimSpace(stdout(t, res.Text)); got != "0" {
		t.Fatalf("sudo id -u = %q, want 0", got)
	}
	if n := r.asker.count(); n != 0 {
		t.Errorf("%d elicitations reached the host's handler, want 0 (PassInput)", n)
	}
}
