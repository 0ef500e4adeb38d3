package peers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"peers-test","version":"0"}}}`

// response is the part of an initialize or tools/list answer the tests read.
type response struct {
	ID     int `json:"id"`
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
		Capabilities    map[string]json.RawMessage
		Tools           []struct{ Name string }
	}
	Error *struct{ Message string }
}

func TestRoot(t *testing.T) {
	root, err := peers.Root()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(peers.Version, "20") {
		t.Fatalf("Version %q", peers.Version)
	}
	t.Logf("root %s; installed: %v", root, peers.Installed())
}

// TestEverythingStdio talks to the stdio server: initialize, then
// tools/list, and every line on stdout is JSON-RPC.
func TestEverythingStdio(t *testing.T) {
	node, args := peers.Everything(t)
	cmd := exec.Command(node, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the server exits at EOF on stdin
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("server-everything did not exit at EOF on stdin")
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	}()

	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	// read returns the response with the given id, failing on any stdout
	// line that is not a JSON object.
	read := func(id int) response {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed before the response to %d", id)
				}
				var r response
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("non-JSON line on stdout: %q", line)
				}
				if r.ID == id {
					return r
				}
			case <-timeout:
				t.Fatalf("no response to %d", id)
			}
		}
	}
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	send(initialize)
	r := read(1)
	if r.Error != nil || r.Result.ServerInfo.Name != "mcp-servers/everything" {
		t.Fatalf("initialize: %+v", r)
	}
	if _, ok := r.Result.Capabilities["tasks"]; !ok {
		t.Errorf("no tasks capability: %s", r.Result.Capabilities)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	r = read(2)
	var names []string
	for _, tool := range r.Result.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(" "+strings.Join(names, " ")+" ", " echo ") {
		t.Errorf("tools/list has no echo: %v", names)
	}
}

// TestSDKClient imports the SDK's client the way a script outside the cache
// must, by file URL, and reads the protocol revision it speaks.
func TestSDKClient(t *testing.T) {
	node, sdk := peers.SDKClient(t)
	if !filepath.IsAbs(node) || !filepath.IsAbs(sdk) {
		t.Fatalf("paths not absolute: %q %q", node, sdk)
	}
	const script = `
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const esm = (p) => import(pathToFileURL(join(process.argv[1], 'dist', 'esm', p)).href);
const { Client } = await esm('client/index.js');
const { LATEST_PROTOCOL_VERSION } = await esm('types.js');
console.log(typeof Client, LATEST_PROTOCOL_VERSION);
`
	cmd := exec.Command(node, "--input-type=module", "-e", script, sdk)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "function 2025-11-25" {
		t.Fatalf("the SDK says %q, want a Client class speaking 2025-11-25", got)
	}
}

// TestClientV2 imports the v2 client by file URL, as ClientV2 says, and
// has it speak 2026-07-28 (versionNegotiation pinned) to gosdkpeer, a
// modern-only server: server/discover, then a call.
func TestClientV2(t *testing.T) {
	node, client := peers.ClientV2(t)
	if !filepath.IsAbs(node) || !filepath.IsAbs(client) {
		t.Fatalf("paths not absolute: %q %q", node, client)
	}
	url := peers.GoSDKHTTP(t, "modern")
	const script = `
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const [dir, url] = process.argv.slice(1);
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(dir, 'dist', 'index.mjs')).href);
const { StdioClientTransport } = await import(pathToFileURL(join(dir, 'dist', 'stdio.mjs')).href);
const client = new Client({ name: 'peers-test', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const res = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
console.log(typeof StdioClientTransport, client.getProtocolEra(), client.getNegotiatedProtocolVersion(), res.content[0].text);
await client.close();
`
	cmd := exec.Command(node, "--input-type=module", "-e", script, client, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "function modern 2026-07-28 2+3=5" {
		t.Fatalf("the v2 client says %q, want the modern era at 2026-07-28 and 2+3=5", got)
	}
}

// TestRunSteps runs a step script that waits on the test once.
func TestRunSteps(t *testing.T) {
	node, _ := peers.SDKClient(t)
	script := filepath.Join(t.TempDir(), "steps.mjs")
	if err := os.WriteFile(script, []byte(`
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
out({ step: 'waiting', arg: process.argv[2] });
process.stdin.once('data', (d) => {
	out({ step: 'got', line: String(d).trim() });
	out({ step: 'done' });
	process.exit(0);
});
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []string
	steps := peers.RunSteps(t, time.Minute, node, script, []string{"the arg"}, func(s peers.Step, stdin io.Writer) {
		seen = append(seen, s.Name)
		if s.Name == "waiting" {
			var w struct{ Arg string }
			s.Decode(t, &w)
			if _, err := io.WriteString(stdin, "hello "+w.Arg+"\n"); err != nil {
				t.Fatal(err)
			}
		}
	})
	var got struct{ Line string }
	steps["got"].Decode(t, &got)
	if got.Line != "hello the arg" || strings.Join(seen, " ") != "waiting got done" || len(steps) != 3 {
		t.Fatalf("steps %v (seen %v), got %+v", steps, seen, got)
	}
}

// TestEverythingHTTP posts initialize to the Streamable HTTP server and
// reads the answer, sent as one SSE event.
func TestEverythingHTTP(t *testing.T) {
	url := peers.EverythingHTTP(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("url %q", url)
	}
	req, err := http.NewRequest("POST", url, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s: %s", resp.Status, body)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Error("no Mcp-Session-Id")
	}
	msg := body
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for _, line := range strings.Split(string(body), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				msg = []byte(data)
			}
		}
	}
	var r response
	if err := json.Unmarshal(msg, &r); err != nil {
		t.Fatalf("initialize answer %q: %v", body, err)
	}
	if r.ID != 1 || r.Error != nil || r.Result.ServerInfo.Name != "mcp-servers/everything" || r.Result.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize: %s", body)
	}

	// A second server on its own port, so tests may run several.
	if other := peers.EverythingHTTP(t); other == url {
		t.Fatalf("two servers on %s", url)
	}
}

// scripts/peers.sh pins the versions that the package's constants name.
func TestPinnedInStep(t *testing.T) {
	root, err := peers.Root()
	if err != nil {
		t.Fatal(err)
	}
	for script, pins := range map[string][]string{
		"peers.sh":     {"OIDC_VERSION=" + peers.OIDCProviderVersion + " ", "CLAUDE_VERSION=" + peers.ClaudeCodeVersion + " ", "EXT_TASKS_VERSION=" + peers.ExtTasksVersion + " "},
		"inspector.sh": {"VERSION=" + peers.InspectorVersion + " "},
	} {
		b, err := os.ReadFile(filepath.Join(root, "scripts", script))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range pins {
			if !strings.Contains(string(b), want) {
				t.Errorf("scripts/%s does not pin %q", script, want)
			}
		}
	}
}

// The bed starts, its provider advertises DPoP (as most do), and its MCP
// server refuses a DPoP authorization as a Bearer-only server does, and
// names the provider in its metadata.
func TestOIDCBed(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{AccessTokenTTL: 5 * time.Second})
	var as struct {
		Issuer   string   `json:"issuer"`
		DPoPAlgs []string `json:"dpop_signing_alg_values_supported"`
		Device   string   `json:"device_authorization_endpoint"`
	}
	getJSON(t, bed.Issuer+"/.well-known/openid-configuration", &as)
	if as.Issuer != bed.Issuer || len(as.DPoPAlgs) == 0 {
		t.Errorf("provider metadata: issuer %q, DPoP algorithms %v", as.Issuer, as.DPoPAlgs)
	}
	if as.Device != "" {
		t.Errorf("provider metadata offers the device flow (%s) without OIDCBedOptions.Device", as.Device)
	}
	var prm struct {
		Resource string   `json:"resource"`
		AS       []string `json:"authorization_servers"`
	}
	getJSON(t, strings.Replace(bed.MCPURL, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1), &prm)
	if prm.Resource != bed.MCPURL || len(prm.AS) != 1 || prm.AS[0] != bed.Issuer {
		t.Errorf("resource metadata = %+v", prm)
	}
	req, _ := http.NewRequest(http.MethodPost, bed.MCPURL, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "DPoP abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "expected 'Bearer TOKEN'") {
		t.Errorf("a DPoP authorization got HTTP %d, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// With Device, the provider offers the device authorization grant: its
// metadata names the endpoint and the grant, and its user code page is a
// form with an xsrf field.
func TestOIDCBedDevice(t *testing.T) {
	bed := peers.StartOIDCBed(t, peers.OIDCBedOptions{Device: true})
	var as struct {
		Device     string   `json:"device_authorization_endpoint"`
		GrantTypes []string `json:"grant_types_supported"`
	}
	getJSON(t, bed.Issuer+"/.well-known/openid-configuration", &as)
	if as.Device != bed.Issuer+"/device/auth" || !slices.Contains(as.GrantTypes, "urn:ietf:params:oauth:grant-type:device_code") {
		t.Errorf("provider metadata: device_authorization_endpoint %q, grant_types_supported %q", as.Device, as.GrantTypes)
	}
	resp, err := http.Get(bed.Issuer + "/device")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `name="xsrf"`) || !strings.Contains(string(body), `name="user_code"`) {
		t.Errorf("GET /device: HTTP %d, want the user code form:\n%s", resp.StatusCode, body)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
