package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// cliExecEnv runs the built CLI as cliExec does, with env added to this
// process's environment.
func cliExecEnv(env []string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(cliBin, args...)
	cmd.Env = append(os.Environ(), env...)
	return runCmd(cmd)
}

// reviewsJSON decodes tools review --json.
func reviewsJSON(t *testing.T, out string) []mcpvisor.ToolReview {
	t.Helper()
	var rvs []mcpvisor.ToolReview
	if err := json.Unmarshal([]byte(out), &rvs); err != nil {
		t.Fatalf("tools review --json is not a JSON array of reviews: %v\n%s", err, out)
	}
	return rvs
}

func findReview(rvs []mcpvisor.ToolReview, tool string) (mcpvisor.ToolReview, bool) {
	i := slices.IndexFunc(rvs, func(rv mcpvisor.ToolReview) bool { return rv.Tool == tool })
	if i < 0 {
		return mcpvisor.ToolReview{}, false
	}
	return rvs[i], true
}

// Without a sidecar, under MCPVISOR_TOOL_POLICY=hold in the commands'
// environment: every tool of a new server waits for a person; tools
// approve exposes the ones named, by the hash it listed, durably (a later
// command, a new host, finds them approved); tools reject keeps one
// withheld; approve without TOOL takes every other; a changed definition
// is shown with its diff.
func TestToolReviewsStandalone(t *testing.T) {
	hold := []string{mcpvisor.ToolPolicyEnv + "=" + mcpvisor.ToolPolicyHold}
	dir := t.TempDir()
	// echo lists an icon and an MCP Apps _meta.ui: pinned, so shown.
	cfg := writeConfig(t, `{"mcpServers": {"rp": {"command": "MCPTEST", "args": ["-rug-pull", "meta"]}, "notes": {"command": "NOTES"}}}`)
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		return cliExecEnv(hold, append(args, "--config", cfg, "--data", dir)...)
	}

	out, errOut, code := cli("tools", "review", "--server", "rp", "--json")
	if code != 0 {
		t.Fatalf("tools review --json: exit %d: %s", code, errOut)
	}
	rvs := reviewsJSON(t, out)
	echo, ok := findReview(rvs, "echo")
	if !ok || !echo.Held || echo.State != "new" || echo.Name != "mcp__rp__echo" || !strings.HasPrefix(echo.Hash, "sha256:") {
		t.Fatalf("echo's review: %+v (of %d)", echo, len(rvs))
	}
	if i := slices.IndexFunc(rvs, func(rv mcpvisor.ToolReview) bool { return rv.Server != "rp" }); i >= 0 {
		t.Errorf("--server rp lists a review of %s", rvs[i].Server)
	}

	out, errOut, code = cli("tools", "review")
	for _, want := range []string{"server rp  tool echo  new  HELD  since ", "  hash: " + echo.Hash + "\n",
		"  description:\n    Return the call's arguments as JSON text.\n", "server notes  tool add  new  HELD",
		`  icons: [{"src":"https://cdn.example.com/echo.png",`, `  _meta: {"ui":{"resourceUri":"ui://mcptest/echo.html"}}`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("tools review (exit %d, %s) lacks %q:\n%s", code, errOut, want, out)
		}
	}

	out, errOut, code = cli("tools", "approve", "rp", "echo")
	if code != 0 || out != "approved rp/echo "+echo.Hash+"\n" {
		t.Fatalf("tools approve rp echo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// status counts what is withheld and points at the review.
	if out, errOut, code := cli("status", "--wait", "30s"); !regexp.MustCompile(`(?m)^rp +ready +\S+ +1 \(\+\d+ held\)`).MatchString(out) ||
		!strings.Contains(out, "await a person's review: mcpvisor tools review") {
		t.Errorf("status: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := cli("call", "mcp__rp__echo", `{}`); code != 0 || out != "{}\n" {
		t.Errorf("call of the approved echo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// slow is still withheld: said so even though call runs it while its
	// server starts, before the live catalog is known.
	out, errOut, code = cli("call", "mcp__rp__slow", `{"ms":1}`)
	if code != 1 || out != "" || !strings.Contains(errOut, `"slow"`) || !strings.Contains(errOut, "withheld") {
		t.Errorf("call of the withheld slow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	out, errOut, code = cli("tools", "reject", "rp", "slow")
	if code != 0 || !strings.HasPrefix(out, "rejected rp/slow sha256:") || strings.Count(out, "\n") != 1 {
		t.Fatalf("tools reject rp slow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Without TOOL: every definition awaiting review but the rejected one.
	out, errOut, code = cli("tools", "approve", "rp")
	if code != 0 || strings.Contains(out, "rp/slow") || !strings.Contains(out, "approved rp/pid sha256:") ||
		strings.Contains(out, "rp/echo") || strings.Contains(out, "notes/") {
		t.Fatalf("tools approve rp: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, _ = cli("tools", "review", "--server", "rp", "--json")
	if rvs := reviewsJSON(t, out); len(rvs) != 1 || rvs[0].Tool != "slow" || !rvs[0].Rejected || !rvs[0].Held {
		t.Errorf("reviews after approving all but slow: %+v", rvs)
	}
	out, errOut, code = cli("tools", "approve", "rp")
	if code != 0 || out != "" || !strings.Contains(errOut, "server rp: no tool definition awaits review") {
		t.Errorf("tools approve rp with nothing to approve: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = cli("tools", "approve", "rp", "nope")
	if code != 1 || out != "" || !strings.Contains(errOut, "rp/nope: no definition of it awaits review") {
		t.Errorf("tools approve rp nope: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := cli("tools", "approve", "nosuch"); code != 1 || !strings.Contains(errOut, `no server "nosuch"`) {
		t.Errorf("tools approve nosuch: exit %d, stderr %q", code, errOut)
	}

	// The server changes echo's description: echo is withheld again, and
	// its review shows the diff from the approved definition.
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(`{"mcpServers": {"rp": {"command": "MCPTEST", "args": ["-long-description", "60"]},
	  "notes": {"command": "NOTES"}}}`, "MCPTEST", mcptestBin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cli("tools", "review", "--server", "rp")
	for _, want := range []string{"server rp  tool echo  changed  HELD", "  approved before: " + echo.Hash + "\n", "  diff:\n    description"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("tools review after the change (exit %d, %s) lacks %q:\n%s", code, errOut, want, out)
		}
	}
	out, errOut, code = cli("tools", "approve", "rp", "mcp__rp__echo") // the namespaced name works too
	if code != 0 || !strings.HasPrefix(out, "approved rp/echo sha256:") || strings.Contains(out, echo.Hash) {
		t.Fatalf("tools approve of the changed echo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := cli("call", "mcp__rp__echo", `{"a":1}`); code != 0 || !strings.Contains(out, `"a": 1`) {
		t.Errorf("call of the changed echo once approved: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Usage errors exit 2 before any server starts.
func TestToolReviewsUsage(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"rp": {"command": "/nonexistent/server"}}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "approve"}, "tools approve: want SERVER [TOOL...]"},
		{[]string{"tools", "reject"}, "tools reject: want SERVER TOOL..."},
		{[]string{"tools", "reject", "rp"}, "tools reject: want SERVER TOOL..."},
		{[]string{"tools", "review", "rp"}, "tools review: takes no arguments"},
		{[]string{"tools", "aprove", "rp"}, `tools: unknown subcommand "aprove"`},
	} {
		out, errOut, code := runCLI(t, append(tc.args, "--config", cfg)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// With no tool policy there is never anything to review: the command
// says why at once, without waiting for the servers (one here never
// answers its handshake: a wait would last --wait, ten minutes).
func TestToolReviewsNoPolicy(t *testing.T) {
	if _, set := os.LookupEnv(mcpvisor.ToolPolicyEnv); set {
		t.Skipf("%s is set in the test's environment", mcpvisor.ToolPolicyEnv)
	}
	hangs := writeConfig(t, `{"mcpServers": {"hangs": {"command": "/bin/sleep", "args": ["3600"]}}}`)
	if out, errOut, code := runCLI(t, "tools", "review", "--config", hangs, "--wait", "10m"); code != 0 || out != "" || !strings.Contains(errOut, "no tool policy is in force") {
		t.Errorf("tools review without a policy, a server that never starts: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	cfg := writeConfig(t, `{"mcpServers": {"notes": {"command": "NOTES"}}}`)
	out, errOut, code := runCLI(t, "tools", "review", "--config", cfg)
	if code != 0 || out != "" || !strings.Contains(errOut, "no tool policy is in force") {
		t.Errorf("tools review without a policy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = runCLI(t, "tools", "review", "--config", cfg, "--json")
	if code != 0 || out != "[]\n" {
		t.Errorf("tools review --json without a policy: exit %d, stdout %q", code, out)
	}
}

// decideReviews decides each named review by its listed hash, goes on
// past a failure, and fails (exit 1) with what went wrong: a stale
// definition, from the host or the sidecar, says to review again.
func TestDecideReviews(t *testing.T) {
	rv := func(tool, hash string, rejected bool) mcpvisor.ToolReview {
		return mcpvisor.ToolReview{Server: "s", Tool: tool, Name: "mcp__s__" + tool, Hash: hash, Held: true, Rejected: rejected}
	}
	reviews := []mcpvisor.ToolReview{rv("a", "sha256:a", false), rv("b", "sha256:b", true), rv("c", "sha256:c", false),
		rv("d", "sha256:d", false), {Server: "other", Tool: "a", Hash: "sha256:other"}}
	type decision struct {
		tool, hash, by string
		approve        bool
	}
	for _, tc := range []struct {
		name      string
		tools     []string
		approve   bool
		fail      map[string]error // by tool
		decided   []decision
		stdout    string
		exitMsg   []string // each line of the error, in order; nil: success
		stderrHas string
	}{
		{name: "approve all", approve: true,
			decided: []decision{{"a", "sha256:a", "cli:t", true}, {"c", "sha256:c", "cli:t", true}, {"d", "sha256:d", "cli:t", true}},
			stdout:  "approved s/a sha256:a\napproved s/c sha256:c\napproved s/d sha256:d\n"},
		{name: "approve named, rejected too", tools: []string{"b", "mcp__s__a", "a"}, approve: true,
			decided: []decision{{"b", "sha256:b", "cli:t", true}, {"a", "sha256:a", "cli:t", true}},
			stdout:  "approved s/b sha256:b\napproved s/a sha256:a\n"},
		{name: "approve the hash reviewed", tools: []string{"a@sha256:a", "c@sha256:old"}, approve: true,
			fail:    map[string]error{"c": mcpvisor.ErrStaleReview},
			decided: []decision{{"a", "sha256:a", "cli:t", true}, {"c", "sha256:old", "cli:t", true}},
			stdout:  "approved s/a sha256:a\n",
			exitMsg: []string{"s/c: the definition changed since it was listed; review again (mcpvisor tools review --server s)"}},
		{name: "reject, one stale from the host, one from the sidecar, one unknown",
			tools: []string{"a", "x", "c", "d"},
			fail: map[string]error{"a": fmt.Errorf("wrapped: %w", mcpvisor.ErrStaleReview),
				"c": &apiError{status: http.StatusConflict, code: sidecar.CodeStaleReview, message: "stale"},
				"d": errors.New("journal: disk full")},
			decided: []decision{{"a", "sha256:a", "cli:t", false}, {"c", "sha256:c", "cli:t", false}, {"d", "sha256:d", "cli:t", false}},
			exitMsg: []string{"s/x: no definition of it awaits review (approved already, or not listed)",
				"s/a: the definition changed since it was listed; review again (mcpvisor tools review --server s)",
				"s/c: the definition changed since it was listed; review again (mcpvisor tools review --server s)",
				"s/d: cannot reject: journal: disk full"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var decided []decision
			d := &reviewDesk{reviews: reviews, close: func() {},
				decide: func(_ context.Context, rv mcpvisor.ToolReview, approve bool, by string) error {
					decided = append(decided, decision{rv.Tool, rv.Hash, by, approve})
					return tc.fail[rv.Tool]
				}}
			var stdout, stderr bytes.Buffer
			err := decideReviews(context.Background(), d, "s", tc.tools, tc.approve, "cli:t", &stdout, &stderr)
			if diff := cmp.Diff(tc.decided, decided, cmp.AllowUnexported(decision{})); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			if stdout.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tc.stdout)
			}
			if tc.exitMsg == nil {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if exitCode(err) != exitFailure || err.Error() != strings.Join(tc.exitMsg, "\n") {
				t.Errorf("error (exit %d):\n%v\nwant exit 1 and:\n%s", exitCode(err), err, strings.Join(tc.exitMsg, "\n"))
			}
		})
	}
}

// awaitReviews reads GET /v1/inbox/stream until a snapshot's tool reviews
// satisfy cond, and returns them.
func (s *serving) awaitReviews(t *testing.T, ctx context.Context, token string, cond func([]mcpvisor.ToolReview) bool) []mcpvisor.ToolReview {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/inbox/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("inbox stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			ToolReviews []mcpvisor.ToolReview `json:"toolReviews"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && cond(ev.ToolReviews) {
			return ev.ToolReviews
		}
	}
	t.Fatalf("the inbox stream ended before the reviews were as wanted: %v", sc.Err())
	return nil
}

// Through a running sidecar (a server's "toolPolicy": "hold" in its
// config): the commands list and decide through its API, without
// --config; a rug pull (echo's description poisoned after approval) shows
// as a changed definition with its diff and findings; the journal records
// who decided.
func TestToolReviewsThroughSidecar(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data := t.TempDir()
	cfg := writeConfig(t, `{"mcpServers": {"rp": {"command": "MCPTEST", "toolPolicy": "hold"}}}`)
	s := startServe(t, "--config", cfg, "--data", data)
	token := s.token(t)

	out, errOut, code := runCLIData(t, data, "tools", "review", "--json")
	if code != 0 {
		t.Fatalf("tools review --json: exit %d: %s", code, errOut)
	}
	echo, ok := findReview(reviewsJSON(t, out), "echo")
	if !ok || !echo.Held || echo.State != "new" {
		t.Fatalf("echo's review through the sidecar: %+v", echo)
	}
	if _, errOut, code := runCLIData(t, data, "tools", "review", "--server", "nope"); code != 1 || !strings.Contains(errOut, `no server "nope"`) {
		t.Errorf("tools review --server nope: exit %d, stderr %q", code, errOut)
	}

	out, errOut, code = runCLIData(t, data, "tools", "approve", "rp", "echo", "rug_pull")
	if code != 0 || !strings.HasPrefix(out, "approved rp/echo "+echo.Hash+"\napproved rp/rug_pull sha256:") {
		t.Fatalf("tools approve rp echo rug_pull: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := runCLIData(t, data, "call", "mcp__rp__echo", `{}`); code != 0 || out != "{}\n" {
		t.Errorf("call of the approved echo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := runCLIData(t, data, "call", "mcp__rp__slow", `{"ms":1}`); code != 1 || out != "" ||
		!strings.Contains(errOut, "withheld") || !strings.Contains(errOut, "not been approved") {
		t.Errorf("call of the withheld slow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// The rug pull.
	if _, errOut, code := runCLIData(t, data, "call", "mcp__rp__rug_pull", `{}`); code != 0 {
		t.Fatalf("call rug_pull: exit %d: %s", code, errOut)
	}
	changed, _ := findReview(s.awaitReviews(t, ctx, token, func(rvs []mcpvisor.ToolReview) bool {
		rv, ok := findReview(rvs, "echo")
		return ok && rv.State == "changed"
	}), "echo")
	out, errOut, code = runCLIData(t, data, "tools", "review", "--server", "rp")
	for _, want := range []string{"server rp  tool echo  changed  HELD", "  hash: " + changed.Hash + "\n",
		"  approved before: " + echo.Hash + "\n", "  findings:\n", " secret-path description: ", "id_rsa", "  diff:\n    description"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("tools review after the rug pull (exit %d, %s) lacks %q:\n%s", code, errOut, want, out)
		}
	}

	out, errOut, code = runCLIData(t, data, "tools", "reject", "rp", "echo")
	if code != 0 || out != "rejected rp/echo "+changed.Hash+"\n" {
		t.Fatalf("tools reject rp echo: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := runCLIData(t, data, "call", "mcp__rp__echo", `{}`); code != 1 || !strings.Contains(errOut, "rejected") {
		t.Errorf("call of the rejected echo: exit %d, stderr %q", code, errOut)
	}
	a := s.request(ctx, "GET", "/v1/history?"+url.Values{"kind": {"tool"}, "tool": {"mcp__rp__echo"}}.Encode(), token, "")
	var hist struct {
		History []mcpvisor.HistoryRecord `json:"history"`
	}
	if err := json.Unmarshal([]byte(a.body), &hist); a.status != http.StatusOK || err != nil {
		t.Fatalf("GET /v1/history: %d %s (%v)", a.status, a.body, err)
	}
	var trail []string
	for _, r := range hist.History {
		if r.By != "" {
			trail = append(trail, r.Transition+" by "+r.By)
		}
	}
	by := "api:" + decidedBy()
	if want := []string{"approved by " + by, "rejected by " + by}; !slices.Equal(trail, want) {
		t.Errorf("echo's decisions in the journal: %q, want %q", trail, want)
	}
}
