package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipeServer runs s.Serve over in-memory pipes; lines returns what it writes.
func pipeServer(t *testing.T, s *Server) (send func(string), lines *bufio.Scanner, stop func()) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := s.Serve(context.Background(), inR, outW)
		outW.Close()
		done <- err
	}()
	send = func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	stop = func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let pending writes finish
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after EOF")
		}
	}
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	return send, sc, stop
}

func TestWireEdgeCases(t *testing.T) {
	s := New(Options{MaxLineBytes: 200, PageSize: 1})
	block := make(chan struct{})
	s.AddTool(Tool{Name: "wait", Handler: func(ctx context.Context, _ *ToolCall) (*CallToolResult, error) {
		select {
		case <-block:
			return TextResult("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	s.AddTool(Tool{Name: "other", Handler: func(context.Context, *ToolCall) (*CallToolResult, error) { return nil, nil }})
	send, out, stop := pipeServer(t, s)
	defer stop()

	expect := func(want string) {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("no output line, want %s (%v)", want, out.Err())
		}
		if got := out.Text(); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	send(`{"jsonrpc":"2.0","id":"x","method":"ping","params":{"pad":"` + strings.Repeat("p", 300) + `"}}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	expect(`{"jsonrpc":"2.0","id":1,"result":{}}`) // the over-long line was skipped
	send(`not json`)
	expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC message object (batches are not supported)"}}`)
	send(`{"jsonrpc":"1.0","id":3,"method":"ping"}`)
	expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: jsonrpc must be \"2.0\""}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/unknown"}`)
	send(`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"loud"}}`)
	expect(`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params: unknown log level \"loud\""}}`)

	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait"}}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	expect(`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: id 5 is already in use"}}`)
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"other","arguments":[1]}}`)
	expect(`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: arguments must be an object"}}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"other"}}`)
	expect(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	close(block)
	expect(`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"done"}]}}`)

	send(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	expect(`{"jsonrpc":"2.0","id":8,"result":{"tools":[{"name":"wait","inputSchema":{"type":"object"}}],"nextCursor":"` + encodeCursor(1) + `"}}`)
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"` + encodeCursor(1) + `"}}`)
	expect(`{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"other","inputSchema":{"type":"object"}}]}}`)
	send(`{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":"` + encodeCursor(3) + `"}}`)
	expect(`{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Invalid params: invalid cursor \"` + encodeCursor(3) + `\""}}`)
}

func TestServerToClientCall(t *testing.T) {
	s := New(Options{})
	s.AddTool(Tool{Name: "ask", Handler: func(ctx context.Context, call *ToolCall) (*CallToolResult, error) {
		res, err := call.Server.CallWithID(ctx, 1, "roots/list", nil) // same id as the client's call
		if err != nil {
			return nil, err
		}
		return TextResult(string(res)), nil
	}})
	send, out, stop := pipeServer(t, s)
	defer stop()
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`)
	if !out.Scan() {
		t.Fatal(out.Err())
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(out.Bytes(), &req); err != nil || string(req.ID) != "1" || req.Method != "roots/list" {
		t.Fatalf("server request = %s (%v)", out.Text(), err)
	}
	send(`{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`)
	if !out.Scan() {
		t.Fatal(out.Err())
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"roots\":[]}"}]}}`; out.Text() != want {
		t.Errorf("got  %s\nwant %s", out.Text(), want)
	}
}
