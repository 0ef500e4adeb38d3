package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/peers"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// hostToolsPlan is what testdata/hosttools-client.mjs is asked to do (see
// its header).
type hostToolsPlan struct {
	SDK       string          `json:"sdk"`
	URL       string          `json:"url"`
	Mode      string          `json:"mode"`
	Server    string          `json:"server"`
	Register  json.RawMessage `json:"register,omitempty"`
	EchoText  string          `json:"echoText"`
	TimeoutMS int64           `json:"timeoutMs"`
}

// hostToolsResult is a tools/call result as the script reports it.
type hostToolsResult struct {
	IsError           bool            `json:"isError"`
	Text              string          `json:"text"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

type listedTool struct {
	Name        string                    `json:"name"`
	Annotations *protocol.ToolAnnotations `json:"annotations"`
}

// hostToolsStep is one line the script prints; each step fills its own
// fields. Raw is the whole line.
type hostToolsStep struct {
	Step   string `json:"step"`
	Server *struct {
		Name string `json:"name"`
	} `json:"server"` // initialize
	ToolsListChanged bool `json:"toolsListChanged"`
	// A tools/call: the result's fields, or for a call that changes the
	// session's tools, Call, then the tools listed after ListChanged
	// notifications.
	hostToolsResult
	Call           *hostToolsResult `json:"call"`
	Tools          []listedTool     `json:"tools"`
	ListChanged    int              `json:"listChanged"`
	Errors         []string         `json:"errors"`         // errors, closed
	SessionID      string           `json:"sessionId"`      // terminate
	SessionIDAfter *string          `json:"sessionIdAfter"` // terminate
	Streams        []struct {
		Status      int     `json:"status"`
		ContentType string  `json:"contentType"`
		Error       *string `json:"error"`
	} `json:"streams"` // terminate

	Raw json.RawMessage `json:"-"`
}

func (s hostToolsStep) names() []string {
	var names []string
	for _, t := range s.Tools {
		names = append(names, t.Name)
	}
	return names
}

func (s hostToolsStep) tool(t *testing.T, name string) listedTool {
	t.Helper()
	for _, tl := range s.Tools {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("step %s: no tool %s in %v", s.Step, name, s.names())
	return listedTool{}
}

// runHostToolsClient runs testdata/hosttools-client.mjs with plan and
// returns its steps by name. It fails the test at the first step whose
// call failed or succeeded against expectation (toolErrorSteps); onStep,
// if not nil, is then called with the step, and may write to the script's
// stdin (see peers.RunSteps).
func runHostToolsClient(t *testing.T, node string, plan hostToolsPlan, onStep func(hostToolsStep, io.Writer)) map[string]hostToolsStep {
	t.Helper()
	decode := func(s peers.Step) hostToolsStep {
		var st hostToolsStep
		s.Decode(t, &st)
		st.Raw = s.Line
		return st
	}
	return runScript(t, node, "hosttools-client.mjs", plan, decode, func(st hostToolsStep, stdin io.Writer) {
		// A call that went wrong may leave the script waiting for a
		// list_changed that cannot come: stop at once.
		if isErr := st.IsError || st.Call != nil && st.Call.IsError; isErr != toolErrorSteps[st.Step] {
			t.Fatalf("step %s: tool error %v, want %v: %s", st.Step, isErr, !isErr, st.Raw)
		}
		if onStep != nil {
			onStep(st, stdin)
		}
	})
}

// toolErrorSteps are the script's steps whose call should fail.
var toolErrorSteps = map[string]bool{"delete-denied": true}

// lockedBuffer is the host's log: written by the host's goroutines, read
// by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// hostToolsHost is one life of the host on a data dir, with a gateway
// serving it over Streamable HTTP on a loopback httptest server.
type hostToolsHost struct {
	h    *mcpvisor.Host
	g    *gateway.Gateway
	srv  *httptest.Server
	once sync.Once
}

// openHostToolsHost opens a host on dir with the mcptest server "a" in its
// config file, waits for it, and serves a gateway that lets clients
// activate the config group. A cleanup closes what close has not.
func openHostToolsHost(t *testing.T, dir string, logger *slog.Logger, configure func(*mcpvisor.Options)) *hostToolsHost {
	t.Helper()
	o := mcpvisor.Options{
		Config: &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{
			{Name: "a", Type: "stdio", Command: bin.mcptest, Args: []string{"-name", "a"}, Enabled: true},
		}},
		DataDir: dir,
		Logger:  logger,
		// Host-tool arguments are journaled (redacted): a secret that
		// slipped through would be on disk to find.
		Journal:   mcpvisor.JournalOptions{KeepCallPayloads: true},
		StopGrace: 500 * time.Millisecond, TermGrace: 500 * time.Millisecond,
	}
	if configure != nil {
		configure(&o)
	}
	h, err := mcpvisor.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := h.WaitReady(ctx, "a"); err != nil {
		_ = h.Close()
		t.Fatalf("WaitReady: %v", err)
	}
	r := &hostToolsHost{h: h, g: gateway.New(h, gateway.Options{AllowConfigGroup: true, Logger: logger})}
	r.srv = httptest.NewServer(r.g.Handler())
	t.Cleanup(func() { r.close(t) })
	return r
}

// close ends the gateway (first: it ends the streams the HTTP server's
// Close waits for), the HTTP server and the host. Idempotent.
func (r *hostToolsHost) close(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		if err := r.g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		r.srv.Close()
		if err := r.h.Close(); err != nil {
			t.Errorf("host Close: %v", err)
		}
	})
}

// status returns the host's status of server, if it has that server.
func (r *hostToolsHost) status(server string) (mcpvisor.ServerStatus, bool) {
	for _, st := range r.h.Status() {
		if st.Name == server {
			return st, true
		}
	}
	return mcpvisor.ServerStatus{}, false
}

// inboxApprover answers a host's approval inbox as a person would, allowing
// every call and keeping the requests it saw. Its goroutine ends at stop.
type inboxApprover struct {
	done chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	seen []mcpvisor.ApprovalRequest
	errs []error
}

func startInboxApprover(h *mcpvisor.Host) *inboxApprover {
	a := &inboxApprover{done: make(chan struct{})}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			changed := h.ApprovalsChanged() // before listing: no change is missed
			for _, req := range h.Approvals() {
				err := h.ResolveApproval(req.ID, true, "")
				a.mu.Lock()
				a.seen = append(a.seen, req)
				if err != nil {
					a.errs = append(a.errs, err)
				}
				a.mu.Unlock()
			}
			select {
			case <-changed:
			case <-a.done:
				return
			}
		}
	}()
	return a
}

// stop ends the approver and returns the requests it answered.
func (a *inboxApprover) stop(t *testing.T) []mcpvisor.ApprovalRequest {
	t.Helper()
	close(a.done)
	a.wg.Wait()
	if len(a.errs) > 0 {
		t.Errorf("resolving approvals: %v", a.errs)
	}
	return a.seen
}

// recordingApprover is an ApprovalFunc that keeps every request; it denies
// the first delete_mcp and allows the rest.
type recordingApprover struct {
	mu     sync.Mutex
	seen   []mcpvisor.ApprovalRequest
	denied bool
}

const denyReason = "not before a review"

func (a *recordingApprover) approve(_ context.Context, req *mcpvisor.ApprovalRequest) (mcpvisor.ApprovalDecision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, *req)
	if req.Tool == mcpvisor.ToolDelete && !a.denied {
		a.denied = true
		return mcpvisor.ApprovalDecision{Reason: denyReason}, nil
	}
	return mcpvisor.ApprovalDecision{Allow: true}, nil
}

func (a *recordingApprover) requests() []mcpvisor.ApprovalRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

func approvalTools(reqs []mcpvisor.ApprovalRequest) []string {
	var tools []string
	for _, r := range reqs {
		tools = append(tools, r.Tool)
	}
	return tools
}

// filesHolding lists the files under dir (relative, slash-separated) whose
// bytes contain s. Files that vanish while it walks (the store compacting,
// a temporary file renamed) are skipped.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	// The store's log files are preallocated (a running host's are over
	// 100 MB, mostly zeros): read them through one buffer.
	buf := make([]byte, 1<<20)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		holds, err := fileHolds(path, []byte(s), buf)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if holds {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return found
}

// fileHolds reports whether the file at path contains s, reading it
// through buf (longer than s), which keeps the last len(s)-1 bytes of each
// read before the next so a match across two reads is found.
func fileHolds(path string, s, buf []byte) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	kept := 0
	for {
		n, err := io.ReadFull(f, buf[kept:])
		chunk := buf[:kept+n]
		if bytes.Contains(chunk, s) {
			return true, nil
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		kept = min(len(s)-1, len(chunk))
		copy(buf, chunk[len(chunk)-kept:])
	}
}

// checkSecretOnlyIn fails unless the files under dir holding secret are
// exactly want.
func checkSecretOnlyIn(t *testing.T, dir, secret, when string, want ...string) {
	t.Helper()
	if got := filesHolding(t, dir, secret); !slices.Equal(got, want) {
		t.Fatalf("%s: the secret is in the files %q under the data dir, want only in %q", when, got, want)
	}
}

// serverItems decodes list_items' structuredContent, by name.
func serverItems(t *testing.T, s hostToolsStep) map[string]mcpvisor.ServerItem {
	t.Helper()
	if s.IsError {
		t.Fatalf("%s: list_items failed: %s", s.Step, s.Text)
	}
	var v struct {
		Items []mcpvisor.ServerItem `json:"items"`
	}
	if err := json.Unmarshal(s.StructuredContent, &v); err != nil {
		t.Fatalf("%s: list_items structuredContent %s: %v", s.Step, s.StructuredContent, err)
	}
	items := map[string]mcpvisor.ServerItem{}
	for _, it := range v.Items {
		items[it.Name] = it
	}
	return items
}

// serverOutcome decodes the structuredContent of register_mcp, or of
// toggle_item enabling a server.
type serverOutcome struct {
	Name  string         `json:"name"`
	State mcpvisor.State `json:"state"`
	Tools []string       `json:"tools"`
	Error string         `json:"error"`
}

func outcomeOf(t *testing.T, step string, r hostToolsResult) serverOutcome {
	t.Helper()
	if r.IsError {
		t.Fatalf("%s: tool error: %s", step, r.Text)
	}
	var o serverOutcome
	if err := json.Unmarshal(r.StructuredContent, &o); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", step, r.StructuredContent, err)
	}
	return o
}

// checkServerProcess is the script's onStep: at the step "pid" it checks,
// where /proc shows a process's environment, that the server process whose
// pid the call returned runs with EX_TOKEN set to the secret, then lets
// the script go on. pids collects the pids seen.
func checkServerProcess(t *testing.T, secret string, pids *[]int) func(hostToolsStep, io.Writer) {
	return func(s hostToolsStep, stdin io.Writer) {
		if s.Step != "pid" {
			return
		}
		*pids = append(*pids, checkServerProcessEnv(t, s, secret))
		if _, err := io.WriteString(stdin, "checked\n"); err != nil {
			t.Fatal(err)
		}
	}
}

func checkServerProcessEnv(t *testing.T, s hostToolsStep, secret string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s.Text))
	if s.IsError || err != nil || pid <= 0 {
		t.Fatalf("%s: the pid tool answered %+v", s.Step, s.hostToolsResult)
	}
	if runtime.GOOS != "linux" {
		return pid // the t0000 tool shows the environment arrived (MCPTEST_ARGS)
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatalf("%s: the server's environment: %v", s.Step, err)
	}
	if !slices.Contains(strings.Split(string(env), "\x00"), "EX_TOKEN="+secret) {
		t.Fatalf("%s: the server process %d runs without EX_TOKEN set to the registered secret", s.Step, pid)
	}
	return pid
}

// checkClientSession checks the steps every mode prints: the session
// opened, config activated with list_changed, and closed cleanly; and that
// nothing the client was sent (results, tool lists) holds the secret.
func checkClientSession(t *testing.T, steps map[string]hostToolsStep, secret string) {
	t.Helper()
	for _, s := range steps {
		if bytes.Contains(s.Raw, []byte(secret)) {
			t.Fatalf("the client was sent the secret: %s", s.Raw)
		}
	}
	init := step(t, steps, "initialize")
	if init.Server == nil || init.Server.Name != "mcpvisor" || !init.ToolsListChanged {
		t.Fatalf("initialize: %s", init.Raw)
	}
	if names := step(t, steps, "list-before").names(); !slices.Equal(names, []string{mcpvisor.ToolActivate}) {
		t.Fatalf("tools before activation: %v, want only %s", names, mcpvisor.ToolActivate)
	}
	act := step(t, steps, "activate-config")
	if act.Call == nil || act.Call.IsError || !strings.Contains(act.Call.Text, "Active groups: config") {
		t.Fatalf("activate_tools config: %s", act.Raw)
	}
	if act.ListChanged < 1 {
		t.Fatal("no notifications/tools/list_changed after activating config")
	}
	want := []string{mcpvisor.ToolActivate, mcpvisor.ToolRegister, mcpvisor.ToolDelete, mcpvisor.ToolToggle, mcpvisor.ToolList}
	if diff := cmp.Diff(want, act.names()); diff != "" {
		t.Fatalf("tools after activating config (-want +got):\n%s", diff)
	}
	for name, hint := range map[string]struct{ readOnly, destructive bool }{
		mcpvisor.ToolActivate: {false, false},
		mcpvisor.ToolRegister: {false, false},
		mcpvisor.ToolDelete:   {false, true},
		mcpvisor.ToolToggle:   {false, false},
		mcpvisor.ToolList:     {true, false},
	} {
		a := act.tool(t, name).Annotations
		if a == nil || a.ReadOnlyHint == nil || a.DestructiveHint == nil {
			t.Fatalf("%s: annotations %+v, want readOnlyHint and destructiveHint set", name, a)
		}
		if *a.ReadOnlyHint != hint.readOnly || *a.DestructiveHint != hint.destructive {
			t.Fatalf("%s: readOnlyHint %v, destructiveHint %v; want %v, %v", name, *a.ReadOnlyHint, *a.DestructiveHint, hint.readOnly, hint.destructive)
		}
	}

	if errs := step(t, steps, "errors").Errors; len(errs) != 0 {
		t.Fatalf("the SDK reported errors during the session: %q", errs)
	}
	term := step(t, steps, "terminate")
	if term.SessionID == "" || term.SessionIDAfter != nil {
		t.Fatalf("terminateSession: %s", term.Raw)
	}
	if len(term.Streams) != 1 || term.Streams[0].Status != http.StatusOK || term.Streams[0].ContentType != "text/event-stream" || term.Streams[0].Error != nil {
		t.Fatalf("GET streams %s, want one SSE stream, ended without error", term.Raw)
	}
	if errs := step(t, steps, "closed").Errors; len(errs) != 0 {
		t.Fatalf("the SDK reported errors while closing: %q", errs)
	}
}

// readJournal opens the journal of a closed host on dir and returns its
// history, and the whole of it (history, events, registry) as JSON.
func readJournal(t *testing.T, dir string, logger *slog.Logger) ([]mcpvisor.HistoryRecord, []byte) {
	t.Helper()
	j, err := mcpvisor.OpenJournal(dir, mcpvisor.JournalOptions{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := j.Close(); err != nil {
			t.Errorf("journal Close: %v", err)
		}
	}()
	history, err := j.History(mcpvisor.HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	events, err := j.Events(mcpvisor.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := j.Servers()
	if err != nil {
		t.Fatal(err)
	}
	all, err := json.Marshal(map[string]any{"history": history, "events": events, "servers": rows})
	if err != nil {
		t.Fatal(err)
	}
	return history, all
}

func randomToken(t *testing.T) string {
	t.Helper()
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TestHostToolsE2EThroughSDKClient is issue 8's model-free end-to-end
// test: the official TypeScript SDK client, through the gateway over
// Streamable HTTP, activates config, registers an example server with a
// secret in its environment, sees list_changed, calls its tool, disables
// it and sees its tools vanish; after a host restart it finds the server
// as left, enables it (its secret restored), deletes it, and after another
// restart it is still gone. The secret never shows in list_items, the
// host's logs, or any file under the data dir but secrets.json (and not
// there once the server is deleted). The first host holds register_mcp
// and toggle_item in its approval inbox; the second decides with an
// ApprovalFunc, which denies the first delete_mcp.
func TestHostToolsE2EThroughSDKClient(t *testing.T) {
	node, sdk := peers.SDKClient(t)
	dir := t.TempDir()
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	const server = "ex"
	secret := "e2e-secret-" + randomToken(t)
	description := "Example server " + randomToken(t)
	friendly := "Example " + randomToken(t)
	// MCPTEST_ARGS is read by mcptest as flags: with it the server lists
	// t0000, which shows its environment came through (after a restart:
	// from the secret store).
	register, err := json.Marshal(map[string]any{
		"name": server, "transport": "stdio", "command": bin.mcptest, "args": []string{"-name", server},
		"env":         map[string]string{"EX_TOKEN": secret, "MCPTEST_ARGS": "-tools 1"},
		"description": description, "friendly_name": friendly,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := func(tool string) string { return "mcp__" + server + "__" + tool }
	plan := func(h *hostToolsHost, mode string) hostToolsPlan {
		return hostToolsPlan{SDK: sdk, URL: h.srv.URL + "/mcp", Mode: mode, Server: server,
			EchoText: "hello " + mode, TimeoutMS: (2 * waitFor).Milliseconds()}
	}

	// --- First life: register, call, disable (approval inbox). ---------
	h1 := openHostToolsHost(t, dir, logger, func(o *mcpvisor.Options) { o.ApprovalInbox = true })
	inbox := startInboxApprover(h1.h)
	p := plan(h1, "register")
	p.Register = register
	var pids []int
	steps := runHostToolsClient(t, node, p, checkServerProcess(t, secret, &pids))
	approvals := inbox.stop(t)
	checkClientSession(t, steps, secret)

	reg := step(t, steps, "register")
	regOut := outcomeOf(t, "register", reg.hostToolsResult)
	if regOut.Name != server || regOut.State != mcpvisor.StateReady || !slices.Contains(regOut.Tools, ns("echo")) || !slices.Contains(regOut.Tools, ns("t0000")) {
		t.Fatalf("register_mcp: %s, want %s ready with %s and %s", reg.Raw, server, ns("echo"), ns("t0000"))
	}
	act := step(t, steps, "activate-server")
	if act.Call == nil || act.Call.IsError || act.ListChanged < 1 {
		t.Fatalf("activate_tools %s: %s, want a list_changed", server, act.Raw)
	}
	for _, want := range []string{ns("echo"), ns("t0000"), mcpvisor.ToolList} {
		if !slices.Contains(act.names(), want) {
			t.Fatalf("tools after activating %s lack %s: %v", server, want, act.names())
		}
	}
	if e := step(t, steps, "echo"); e.IsError || !strings.Contains(e.Text, `"text":"hello register"`) {
		t.Fatalf("echo: %s, want the arguments echoed", e.Raw)
	}
	if len(pids) != 1 {
		t.Fatalf("server pids %v, want the one the pid step reported", pids)
	}

	li := step(t, steps, "list-items")
	if !bytes.Contains(li.Raw, []byte(description)) {
		t.Fatalf("list_items: %s, want the server's description", li.Raw) // else the check for the secret could miss it
	}
	items := serverItems(t, li)
	want := mcpvisor.ServerItem{Name: server, FriendlyName: friendly, Description: description, Transport: "stdio",
		Enabled: true, State: mcpvisor.StateReady, Tools: len(regOut.Tools)}
	if diff := cmp.Diff(want, items[server]); diff != "" {
		t.Fatalf("list_items: %s (-want +got):\n%s", server, diff)
	}
	if _, ok := items["a"]; !ok || len(items) != 2 {
		t.Fatalf("list_items lists %v, want a and %s", items, server)
	}

	dis := step(t, steps, "disable")
	if dis.Call == nil || dis.Call.IsError || !strings.Contains(string(dis.Call.StructuredContent), `"state":"disabled"`) {
		t.Fatalf("toggle_item off: %s", dis.Raw)
	}
	if dis.ListChanged < 1 {
		t.Fatal("no notifications/tools/list_changed after disabling the server")
	}
	for _, name := range dis.names() {
		if strings.HasPrefix(name, ns("")) {
			t.Fatalf("tool %s still listed after disabling %s: %v", name, server, dis.names())
		}
	}
	if !slices.Contains(dis.names(), mcpvisor.ToolList) {
		t.Fatalf("tools after disabling %s: %v, want the config group's still", server, dis.names())
	}
	if it := serverItems(t, step(t, steps, "list-items-disabled"))[server]; it.Enabled || it.State != mcpvisor.StateDisabled {
		t.Fatalf("list_items after disabling: %+v", it)
	}

	// The inbox held exactly the calls that change the registry; whoever
	// approved register_mcp had its arguments in full and its command line
	// as it runs, and its summary names the environment variables without
	// their values.
	if got := approvalTools(approvals); !slices.Equal(got, []string{mcpvisor.ToolRegister, mcpvisor.ToolToggle}) {
		t.Fatalf("the approval inbox held %v, want register_mcp then toggle_item", got)
	}
	ra := approvals[0]
	if ra.ID == "" || ra.Server != server || !ra.Deadline.After(ra.Created) || ra.Scope.Session == "" {
		t.Fatalf("register_mcp approval: %v (server %q, session %q, deadline %v)", ra, ra.Server, ra.Scope.Session, ra.Deadline)
	}
	var gotArgs, wantArgs any
	if json.Unmarshal(ra.Arguments, &gotArgs) != nil || json.Unmarshal(register, &wantArgs) != nil || !cmp.Equal(gotArgs, wantArgs) {
		t.Fatalf("register_mcp approval's arguments differ from the call's: the approver decides on the whole call") // not printed: they hold the secret
	}
	if diff := cmp.Diff([]string{bin.mcptest, "-name", server}, ra.Command); diff != "" {
		t.Fatalf("register_mcp approval's command (-want +got):\n%s", diff)
	}
	if !strings.Contains(ra.Summary, "EX_TOKEN") || strings.Contains(ra.Summary, secret) || !strings.Contains(ra.Summary, bin.mcptest) {
		t.Fatalf("register_mcp approval's summary %q: want the command line and EX_TOKEN named, its value not", ra.Summary)
	}
	if ta := approvals[1]; ta.Server != server || ta.Destructive {
		t.Fatalf("toggle_item approval: %v", ta)
	}

	// On disk: the secret in secrets.json only. The registry row, just
	// written to the journal's log, is found there by its description.
	checkSecretOnlyIn(t, dir, secret, "the first host running", "secrets.json")
	if fi, err := os.Stat(filepath.Join(dir, "secrets.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.json: %v, mode %v; want mode 0600", err, fi.Mode())
	}
	if files := filesHolding(t, dir, description); !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, "journal/") }) {
		t.Fatalf("the registry row's description is in %q, in no journal file: this scan would not see a secret there", files)
	}
	rows, err := h1.h.Journal().Servers()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rows, func(r mcpvisor.ServerRecord) bool { return r.Name == server })
	if i < 0 {
		t.Fatalf("the registry has no row for %s: %+v", server, rows)
	}
	if row := rows[i]; row.Enabled || row.Origin != mcpvisor.OriginAPI || !strings.Contains(string(row.Config), "${MCPVISOR_SECRET_") {
		t.Fatalf("the registry's row for %s: origin %s, enabled %v, config %s; want origin api, disabled, its secrets referenced", server, row.Origin, row.Enabled, row.Config)
	}
	h1.close(t)
	checkSecretOnlyIn(t, dir, secret, "the first host closed", "secrets.json")

	// --- Second life: as left; enable, call, delete (ApprovalFunc). ----
	approver := &recordingApprover{}
	h2 := openHostToolsHost(t, dir, logger, func(o *mcpvisor.Options) { o.Approve = approver.approve })
	if st, ok := h2.status(server); !ok || st.Enabled || st.State != mcpvisor.StateDisabled {
		t.Fatalf("after a restart the host has %s as %+v (found %v), want it disabled", server, st, ok)
	}
	steps = runHostToolsClient(t, node, plan(h2, "restart"), checkServerProcess(t, secret, &pids))
	checkClientSession(t, steps, secret)

	li = step(t, steps, "list-items")
	want.Enabled, want.State = false, mcpvisor.StateDisabled
	got := serverItems(t, li)[server]
	got.Tools = want.Tools // a disabled server's count is not at issue
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("list_items after a restart: %s (-want +got):\n%s", server, diff)
	}
	en := step(t, steps, "enable")
	if o := outcomeOf(t, "enable", en.hostToolsResult); o.State != mcpvisor.StateReady || !slices.Contains(o.Tools, ns("t0000")) {
		t.Fatalf("toggle_item on: %s, want %s ready with %s (its environment restored)", en.Raw, server, ns("t0000"))
	}
	act = step(t, steps, "activate-server")
	if act.Call == nil || act.Call.IsError || act.ListChanged < 1 || !slices.Contains(act.names(), ns("echo")) || !slices.Contains(act.names(), ns("t0000")) {
		t.Fatalf("activate_tools %s after enabling: %s", server, act.Raw)
	}
	if e := step(t, steps, "echo"); e.IsError || !strings.Contains(e.Text, `"text":"hello restart"`) {
		t.Fatalf("echo after enabling: %s", e.Raw)
	}
	if len(pids) != 2 || pids[1] == pids[0] {
		t.Fatalf("server pids %v, want a new process after the restart", pids)
	}
	want.Enabled, want.State = true, mcpvisor.StateReady
	if diff := cmp.Diff(want, serverItems(t, step(t, steps, "list-items-enabled"))[server]); diff != "" {
		t.Fatalf("list_items after enabling: %s (-want +got):\n%s", server, diff)
	}

	denied := step(t, steps, "delete-denied")
	if !denied.IsError || !strings.Contains(denied.Text, "not approved") || !strings.Contains(denied.Text, denyReason) {
		t.Fatalf("the denied delete_mcp: %s", denied.Raw)
	}
	if _, ok := serverItems(t, step(t, steps, "list-items-kept"))[server]; !ok {
		t.Fatalf("%s is gone after a denied delete_mcp", server)
	}
	del := step(t, steps, "delete")
	if del.Call == nil || del.Call.IsError || !strings.Contains(string(del.Call.StructuredContent), `"deleted":true`) {
		t.Fatalf("delete_mcp: %s", del.Raw)
	}
	if del.ListChanged < 1 || slices.ContainsFunc(del.names(), func(n string) bool { return strings.HasPrefix(n, ns("")) }) {
		t.Fatalf("after delete_mcp: %s, want a list_changed and no %s tools", del.Raw, server)
	}
	after := serverItems(t, step(t, steps, "list-items-deleted"))
	if _, ok := after[server]; ok || len(after) != 1 {
		t.Fatalf("list_items after delete_mcp: %v, want only a", after)
	}

	wantTools := []string{
		mcpvisor.ToolActivate, mcpvisor.ToolList, mcpvisor.ToolToggle, mcpvisor.ToolActivate, mcpvisor.ToolList,
		mcpvisor.ToolDelete, mcpvisor.ToolList, mcpvisor.ToolDelete, mcpvisor.ToolList,
	}
	reqs := approver.requests()
	if diff := cmp.Diff(wantTools, approvalTools(reqs)); diff != "" {
		t.Fatalf("the ApprovalFunc was asked (-want +got):\n%s", diff)
	}
	for _, r := range reqs {
		if r.Tool == mcpvisor.ToolDelete && (!r.Destructive || r.Server != server || r.ID != "") {
			t.Fatalf("delete_mcp approval %v: want destructive, for %s, not in the inbox", r, server)
		}
	}
	// Deleted: the secret is in no file, secrets.json included.
	checkSecretOnlyIn(t, dir, secret, "the server deleted")
	h2.close(t)

	// --- Third life: still gone. ---------------------------------------
	h3 := openHostToolsHost(t, dir, logger, nil)
	if _, ok := h3.status(server); ok {
		t.Fatalf("after delete_mcp and a restart the host still has %s", server)
	}
	steps = runHostToolsClient(t, node, plan(h3, "gone"), nil)
	checkClientSession(t, steps, secret)
	if items := serverItems(t, step(t, steps, "list-items")); len(items) != 1 || items["a"].Name != "a" {
		t.Fatalf("list_items after delete_mcp and a restart: %v, want only a", items)
	}
	h3.close(t)

	// The journal, read back, holds the host-tool calls with their
	// arguments (so a secret in them would be there), redacted.
	history, journaled := readJournal(t, dir, logger)
	if bytes.Contains(journaled, []byte(secret)) {
		t.Fatalf("the journal holds the secret:\n%s", journaled)
	}
	var redactedRegister bool
	for _, r := range history {
		if r.Tool == mcpvisor.ToolRegister {
			var args struct {
				Env map[string]string `json:"env"`
			}
			redactedRegister = json.Unmarshal(r.Arguments, &args) == nil && args.Env["EX_TOKEN"] == "(redacted)"
		}
	}
	if !redactedRegister {
		t.Fatalf("the journal's history has no register_mcp call with EX_TOKEN redacted in its arguments: %+v", history)
	}

	checkSecretOnlyIn(t, dir, secret, "every host closed")
	if log := logs.String(); strings.Contains(log, secret) {
		var lines []string
		for line := range strings.Lines(log) {
			if strings.Contains(line, secret) {
				lines = append(lines, line)
			}
		}
		t.Fatalf("the host's log holds the secret:\n%s", strings.Join(lines, ""))
	} else if !strings.Contains(log, "host tool call waits for approval") {
		t.Fatalf("the host's log lacks the approval inbox's records (is it the host's log?):\n%s", log)
	}
}
