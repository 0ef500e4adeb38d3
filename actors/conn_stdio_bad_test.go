package actors

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// badServerEnv makes the test binary, run as a child, a stdio MCP server
// that answers tools/call with the frame its "frame" argument names (see
// badFrames); with the value "init-truncated" it answers initialize with a
// frame cut short.
const badServerEnv = "MCPVISOR_TEST_BAD_FRAME_SERVER"

func init() {
	// Before TestMain: the child is a server, not a test run.
	if mode := os.Getenv(badServerEnv); mode != "" {
		os.Exit(badFrameServer(mode, os.Stdin, os.Stdout))
	}
}

// badFrames are what the child writes in answer to tools/call id.
func badFrames(kind, id string) []string {
	ok := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"ok"}]}}`
	nest := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	switch kind {
	case "invalid-utf8":
		return []string{`{"jsonrpc":"2.0","id":` + id + ",\"result\":\xff\xfe}"}
	case "deep":
		return []string{`{"jsonrpc":"2.0","id":` + id + `,"result":` + nest + `}`}
	case "deep-id-last":
		return []string{`{"result":` + nest + `,"jsonrpc":"2.0","id":` + id + `}`}
	case "truncated":
		return []string{`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"cut he`}
	case "no-id":
		// Nothing to recover an id from: skipped, and the answer follows.
		return []string{`{"result":{"content":[{"type":"text","text":"cut he`, ok}
	case "utf8-in-string":
		// Accepted, as encoding/json accepts it: U+FFFD when decoded.
		return []string{`{"jsonrpc":"2.0","id":` + id + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}}"}
	}
	return []string{ok}
}

// badFrameServer speaks just enough MCP over stdio to become ready.
func badFrameServer(mode string, in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		msg, err := protocol.Classify(sc.Bytes())
		if err != nil || msg.Kind != protocol.KindRequest {
			continue
		}
		id := string(msg.ID)
		var frames []string
		switch msg.Method {
		case protocol.MethodInitialize:
			result := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bad","version":"1"}}`
			if mode == "init-truncated" {
				result = result[:40]
			}
			frames = []string{`{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`}
			if mode == "init-truncated" {
				frames[0] = frames[0][:len(frames[0])-1]
			}
		case "tools/list":
			frames = []string{`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"frame","inputSchema":{"type":"object"}}]}}`}
		case "tools/call":
			var p struct {
				Arguments struct {
					Frame string `json:"frame"`
				} `json:"arguments"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			frames = badFrames(p.Arguments.Frame, id)
		default:
			frames = []string{`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`}
		}
		for _, f := range frames {
			w.WriteString(f)
			w.WriteByte('\n')
		}
		if w.Flush() != nil {
			return 1
		}
	}
	return 0
}

// startBadServer runs the test binary as a bad-frame server under a new
// Runtime, closed when the test ends.
func startBadServer(t *testing.T, mode string, onEvent func(Event)) *Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt := New(Options{OnEvent: onEvent})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	spec := ServerSpec{
		Name: "bad", Command: exe, Args: []string{"-test.run=^$"}, Enabled: true,
		Env: append(os.Environ(), badServerEnv+"="+mode),
	}
	if err := rt.Register(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	return rt
}

// A response that names a call's id but cannot be read fails that call at
// once, saying what was wrong, rather than leaving it to time out (120 s
// by default) as "call timed out" (issue 22, finding 2). A frame with no id
// to recover is skipped and counted; the server stays usable throughout.
func TestStdioUnreadableResponseFailsCall(t *testing.T) {
	rt := startBadServer(t, "call", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.WaitReady(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	call := func(frame string) (json.RawMessage, error, time.Duration) {
		// Far less than the call timeout: a call that waits for it fails
		// the test.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		res, err := rt.Call(ctx, "mcp__bad__frame", json.RawMessage(`{"frame":"`+frame+`"}`), nil, nil)
		return res, err, time.Since(start)
	}
	for _, tt := range []struct {
		frame string
		want  string
	}{
		// (The offsets depend on the id's digits; protocol's tests check them.)
		{"invalid-utf8", "malformed json: invalid utf-8 at offset "},
		{"deep", "malformed json: nested deeper than 10000 levels at offset "},
		{"deep-id-last", "malformed json: nested deeper than 10000 levels at offset "},
		{"truncated", "malformed json: truncated: the frame ends inside a value after "},
	} {
		t.Run(tt.frame, func(t *testing.T) {
			_, err, took := call(tt.frame)
			if !errors.Is(err, protocol.ErrInvalidMessage) || !strings.Contains(err.Error(), `server "bad": tools/call "frame": unreadable response`) ||
				!strings.Contains(err.Error(), tt.want) {
				t.Fatalf("call = %v, want the server, the call and %q", err, tt.want)
			}
			t.Logf("failed in %v: %v", took.Round(time.Millisecond), err)
			if res, err, _ := call("ok"); err != nil || !strings.Contains(string(res), `"ok"`) {
				t.Fatalf("the next call = %s, %v; want ok", res, err)
			}
		})
	}
	st, _ := rt.ServerStatus("bad")
	if st.BannerLines != 0 {
		t.Errorf("BannerLines = %d after frames that each failed their call, want 0", st.BannerLines)
	}

	t.Run("no-id", func(t *testing.T) {
		before, _ := rt.ServerStatus("bad")
		res, err, _ := call("no-id")
		if err != nil || !strings.Contains(string(res), `"ok"`) {
			t.Fatalf("call = %s, %v; want the answer after the skipped frame", res, err)
		}
		waitStatus(t, rt, "bad", func(st ServerStatus) bool { return st.BannerLines == before.BannerLines+1 })
	})
	t.Run("utf8-in-string", func(t *testing.T) {
		if res, err, _ := call("utf8-in-string"); err != nil || !strings.Contains(string(res), "a\xffb") {
			t.Fatalf("call = %q, %v; want the result as sent", res, err)
		}
	})
}

// An initialize answered with a frame cut short fails the handshake at
// once, with the reason, instead of waiting out StartupTimeout.
func TestStdioUnreadableInitializeFailsHandshake(t *testing.T) {
	rt := startBadServer(t, "init-truncated", nil)
	st := waitStatus(t, rt, "bad", func(st ServerStatus) bool { return st.LastError != "" })
	if !strings.Contains(st.LastError, "initialize") || !strings.Contains(st.LastError, "unreadable response") ||
		!strings.Contains(st.LastError, "truncated") {
		t.Fatalf("LastError = %q, want initialize's unreadable, truncated response", st.LastError)
	}
}

// waitStatus waits until cond holds for server name's status, and returns
// that status. It fails the test after 20 s, far less than the timeouts
// (120 s) the tests here must not wait out.
func waitStatus(t *testing.T, rt *Runtime, name string, cond func(ServerStatus) bool) ServerStatus {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		changed := rt.StatusChanged()
		st, _ := rt.ServerStatus(name)
		if cond(st) {
			return st
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("status of %s = %+v, never what was waited for", name, st)
		}
	}
}
