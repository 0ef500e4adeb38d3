package main_test

// End-to-end tests of the SSH MCP server: the built binary runs under a real
// mcpvisor.Host, as a stdio server, against a real OpenSSH server on
// loopback (internal/sshdtest). Elicitations reach the host's
// Options.Elicitation handler, which answers from a script and counts them.

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/examples/servers/ssh/internal/sshdtest"
	"github.com/mcpvisor/mcpvisor/internal/testbin"
)

// Binaries built once for the whole package.
var bin struct{ ssh, mcpvisor string }

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{
		"github.com/mcpvisor/mcpvisor/examples/servers/ssh": &bin.ssh,
		"github.com/mcpvisor/mcpvisor/cmd/mcpvisor":         &bin.mcpvisor,
	})
}

const (
	callTimeout = 60 * time.Second // one tool call, connection included
	serverName  = "ssh"
)

// rigOptions shape a rig. The zero value: the host key already known, no
// extra environment.
type rigOptions struct {
	// env adds to the server's environment (SSH_MCP_POOL_TTL, …).
	env map[string]string
	// unknownHost starts with an empty known_hosts.
	unknownHost bool
	// sshd, when set, is used instead of a new one (for RotateHostKey
	// before the first connection).
	sshd *sshdtest.SSHD
	// hostEnv are variables of the host's environment, for ${VAR}
	// references in env: how a configuration names a secret without
	// writing it (the host stores a server's configuration as written).
	hostEnv map[string]string
	// inbox: the host has no elicitation handler; prompts wait in its
	// inbox (the sidecar's page and API answer them).
	inbox bool
}

// rig is one test's world: an sshd with its account, a temporary HOME for
// the SSH server, and a host running the server.
type rig struct {
	t          *testing.T
	sshd       *sshdtest.SSHD
	home       string // the server's HOME
	aliases    string // SSH_MCP_ALIASES
	knownHosts string // SSH_MCP_KNOWN_HOSTS
	dataDir    string // the host's DataDir (logs in DataDir/logs)
	host       *mcpvisor.Host
	asker      *asker
	hostLog    *lockedBuffer

	mu      sync.Mutex
	results []string // every tool result's text and raw JSON, for the secrets check
	scan    []string // directories checked for secrets when the test ends
}

func newRig(t *testing.T, opts rigOptions) *rig {
	t.Helper()
	d := opts.sshd
	if d == nil {
		d = sshdtest.Start(t, sshdtest.Options{})
	}
	r := &rig{t: t, sshd: d, home: t.TempDir(), dataDir: t.TempDir(), asker: &asker{t: t}, hostLog: &lockedBuffer{}}
	r.aliases = filepath.Join(r.home, "aliases.json")
	r.knownHosts = filepath.Join(r.home, "known_hosts")
	kh := ""
	if !opts.unknownHost {
		kh = d.HostKeyLine() + "\n"
	}
	if err := os.WriteFile(r.knownHosts, []byte(kh), 0o600); err != nil {
		t.Fatal(err)
	}
	r.scan = []string{r.home, r.dataDir}
	// Registered before the host opens, so it runs after the host closed
	// (cleanups run last-in first-out) and sees every file and log line.
	t.Cleanup(r.checkSecrets)

	env := map[string]string{
		"SSH_MCP_ALIASES":     r.aliases,
		"SSH_MCP_KNOWN_HOSTS": r.knownHosts,
		"HOME":                r.home,
	}
	for k, v := range opts.env {
		env[k] = v
	}
	lookup := func(name string) (string, bool) {
		if v, ok := opts.hostEnv[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}
	hostOpts := mcpvisor.Options{
		LookupEnv: lookup,
		DataDir:   r.dataDir,
		Logger:    slog.New(slog.NewTextHandler(r.hostLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
		StopGrace: 2 * time.Second,
		TermGrace: 2 * time.Second,
		Inbox:     opts.inbox,
		Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{
			Name: serverName, Type: "stdio", Command: bin.ssh, Env: env, Enabled: true,
			Timeout: mcpvisor.Duration(callTimeout),
		}}},
	}
	if !opts.inbox {
		hostOpts.Elicitation = r.asker.handle
	}
	h, err := mcpvisor.Open(context.Background(), hostOpts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	r.host = h
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitReady(ctx, serverName); err != nil {
		t.Fatalf("WaitReady: %v\nhost log:\n%s", err, r.hostLog)
	}
	return r
}

// call runs mcp__ssh__<tool> with args and returns the result; a Go error
// (not a tool error) fails the test.
func (r *rig) call(tool string, args any) *mcpvisor.Result {
	r.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout+10*time.Second)
	defer cancel()
	res, err := r.host.Call(ctx, mcpvisor.ToolName(serverName, tool), raw)
	if err != nil {
		r.t.Fatalf("%s %s: %v", tool, raw, err)
	}
	r.mu.Lock()
	r.results = append(r.results, tool+": "+res.Text, string(res.Raw))
	r.mu.Unlock()
	return res
}

// ok calls tool and returns its text; a tool error fails the test.
func (r *rig) ok(tool string, args any) string {
	r.t.Helper()
	res := r.call(tool, args)
	if res.IsError {
		r.t.Fatalf("%s %v: tool error: %s", tool, args, res.Text)
	}
	return res.Text
}

// fails calls tool, which must answer a tool error containing every one of
// want (case-insensitive); it returns the error text.
func (r *rig) fails(tool string, args any, want ...string) string {
	r.t.Helper()
	res := r.call(tool, args)
	if !res.IsError {
		r.t.Fatalf("%s %v: succeeded with %q, want a tool error containing %q", tool, args, res.Text, want)
	}
	for _, w := range want {
		if !strings.Contains(strings.ToLower(res.Text), strings.ToLower(w)) {
			r.t.Fatalf("%s %v: error %q, want it to contain %q", tool, args, res.Text, w)
		}
	}
	return res.Text
}

// addAlias adds alias with the sshd's address and account, key login with
// the unencrypted key and no sudo; fields override or add arguments.
func (r *rig) addAlias(alias string, fields map[string]any) {
	r.t.Helper()
	args := map[string]any{
		"alias": alias, "host": r.sshd.Host(), "port": r.sshd.Port(), "user": r.sshd.User(),
		"auth": "key", "key_path": r.sshd.KeyPath(), "sudo": "none",
	}
	for k, v := range fields {
		if v == nil {
			delete(args, k)
		} else {
			args[k] = v
		}
	}
	r.ok("add_alias", args)
}

// exec runs command on alias and returns its output; it must succeed.
func (r *rig) exec(alias, command string) string {
	r.t.Helper()
	return r.ok("exec", map[string]any{"alias": alias, "command": command})
}

// secrets are the strings no file, log or result may contain.
func (r *rig) secrets() []string { return []string{r.sshd.Password(), r.sshd.Passphrase()} }

// checkSecrets, run when the test ends, looks for the login password and
// the key passphrase in every file under the temporary directories (the
// server's HOME with its aliases and known_hosts, the host's DataDir with
// the per-server logs and the journal), in the host's own log and in every
// tool result.
func (r *rig) checkSecrets() {
	t := r.t
	t.Helper()
	for _, dir := range r.scan {
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, s := range r.secrets() {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("secret found in %s", path)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("scanning %s: %v", dir, err)
		}
	}
	logs := filepath.Join(r.dataDir, "logs")
	if _, err := os.Stat(logs); err != nil {
		t.Errorf("no per-server logs to check: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.secrets() {
		if strings.Contains(r.hostLog.String(), s) {
			t.Errorf("secret found in the host's log")
		}
		for _, res := range r.results {
			if strings.Contains(res, s) {
				t.Errorf("secret found in a tool result: %.200q…", res)
			}
		}
	}
	if t.Failed() {
		if b, err := os.ReadFile(filepath.Join(logs, serverName+".log")); err == nil {
			t.Logf("server log:\n%s", b)
		}
	}
}

// serverLog returns the server's stderr as the host logged it.
func (r *rig) serverLog() string {
	b, _ := os.ReadFile(filepath.Join(r.dataDir, "logs", serverName+".log"))
	return string(b)
}

// asker answers the server's elicitations from a script of replies, in
// order, and records every request. With no reply left it answers cancel
// and fails the test: an elicitation nobody expected is a bug.
type asker struct {
	t       *testing.T
	mu      sync.Mutex
	replies []mcpvisor.ElicitationResponse // Content holds the value under "" until the field is known
	asked   []mcpvisor.ElicitationRequest
}

// reply queues accepts with these values for the next elicitations.
func (a *asker) reply(values ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, v := range values {
		a.replies = append(a.replies, mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept, Content: map[string]any{"": v}})
	}
}

// decline queues a decline for the next elicitation.
func (a *asker) decline() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.replies = append(a.replies, mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitDecline})
}

// count is how many elicitations the server has made.
func (a *asker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// requests returns copies of the elicitations made so far.
func (a *asker) requests() []mcpvisor.ElicitationRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]mcpvisor.ElicitationRequest(nil), a.asked...)
}

func (a *asker) handle(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, *req)
	cancel := mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitCancel}
	if req.Mode != mcpvisor.ElicitForm {
		a.t.Errorf("elicitation in mode %q, want form: %q", req.Mode, req.Message)
		return cancel, nil
	}
	field, ok := secretField(req)
	if !ok {
		a.t.Errorf("elicitation %q: want one required masked string field (format password), got %+v", req.Message, req.Fields)
		return cancel, nil
	}
	if len(a.replies) == 0 {
		a.t.Errorf("unexpected elicitation #%d: %q", len(a.asked), req.Message)
		return cancel, nil
	}
	resp := a.replies[0]
	a.replies = a.replies[1:]
	if v, ok := resp.Content[""]; ok {
		resp.Content = map[string]any{field.Name: v}
	}
	return resp, nil
}

// secretField is the form's one field, a masked string: the single
// required property, or the single property.
func secretField(req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationField, bool) {
	var required []mcpvisor.ElicitationField
	for _, f := range req.Fields {
		if f.Required {
			required = append(required, f)
		}
	}
	fields := req.Fields
	if len(required) > 0 {
		fields = required
	}
	if len(fields) != 1 {
		return mcpvisor.ElicitationField{}, false
	}
	f := fields[0]
	return f, f.Type == "string" && f.Format == "password" && f.Sensitive
}

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// remotePath is a path in the account's home, where the tools work (the
// sshd runs on this machine, so the test checks the remote side directly).
func (r *rig) remotePath(rel string) string { return filepath.Join(r.sshd.HomeDir(), rel) }

// writeRemote creates a file in the account's home, owned by the account,
// with its parent directories.
func (r *rig) writeRemote(rel, content string) string {
	r.t.Helper()
	p := r.remotePath(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	uid, gid := r.owner()
	for q := p; q != r.sshd.HomeDir() && strings.HasPrefix(q, r.sshd.HomeDir()); q = filepath.Dir(q) {
		if err := os.Chown(q, uid, gid); err != nil {
			r.t.Fatal(err)
		}
	}
	return p
}

// readRemote returns a file of the account's home.
func (r *rig) readRemote(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(r.remotePath(rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// owner is the account's uid and gid, from its home directory.
func (r *rig) owner() (int, int) {
	r.t.Helper()
	fi, err := os.Stat(r.sshd.HomeDir())
	if err != nil {
		r.t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}
