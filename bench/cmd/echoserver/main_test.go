package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// reply is any answer of the server, decoded.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// converse feeds lines to serve and returns the replies and serve's error.
func converse(t *testing.T, m mode, lines ...string) ([]reply, error) {
	t.Helper()
	var out bytes.Buffer
	err := serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, m)
	var rs []reply
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var r reply
		if jerr := json.Unmarshal([]byte(line), &r); jerr != nil {
			t.Fatalf("reply is not JSON: %v: %s", jerr, line)
		}
		rs = append(rs, r)
	}
	return rs, err
}

const (
	initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	listTools   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

func call(id, args string) string { return callTool(id, "echo", args) }

func callTool(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// callText decodes a tools/call result's one text block.
func callText(t *testing.T, r reply) string {
	t.Helper()
	var res struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("not one text block: %s (%v)", r.Result, err)
	}
	return res.Content[0].Text
}

func TestHandshakeAndEcho(t *testing.T) {
	args := `{"s":"quote \" backslash \\ tab \t nl \n ctl \u0001 é 日本","n":[1,2.5,null,true]}`
	rs, err := converse(t, mode{}, initialize, initialized, listTools, call("3", args), call(`"str-id"`, `{}`),
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 6 {
		t.Fatalf("got %d replies, want 6 (the notification is not answered): %+v", len(rs), rs)
	}
	var init struct {
		ProtocolVersion string
		Capabilities    struct{ Tools *struct{} }
		ServerInfo      struct{ Name string }
	}
	if err := json.Unmarshal(rs[0].Result, &init); err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != "2025-06-18" || init.Capabilities.Tools == nil || init.ServerInfo.Name != "echoserver" {
		t.Errorf("initialize result: %s", rs[0].Result)
	}
	var list struct {
		Tools []struct {
			Name        string
			InputSchema map[string]any
		}
	}
	if err := json.Unmarshal(rs[1].Result, &list); err != nil || len(list.Tools) != 2 ||
		list.Tools[0].Name != "echo" || list.Tools[0].InputSchema["type"] != "object" ||
		list.Tools[1].Name != "flood" || list.Tools[1].InputSchema["type"] != "object" {
		t.Errorf("tools/list result: %s (%v), want echo and flood", rs[1].Result, err)
	}
	if got := callText(t, rs[2]); got != args {
		t.Errorf("echo text\n got %s\nwant %s", got, args)
	}
	if string(rs[2].ID) != "3" || string(rs[3].ID) != `"str-id"` {
		t.Errorf("ids not echoed: %s, %s", rs[2].ID, rs[3].ID)
	}
	if got := callText(t, rs[4]); got != "{}" {
		t.Errorf("call without arguments: text %q, want {}", got)
	}
	if string(rs[5].Result) != "{}" {
		t.Errorf("ping: %s", rs[5].Result)
	}
}

func TestVersionNegotiation(t *testing.T) {
	for _, tc := range []struct{ offered, want string }{
		{"2025-11-25", "2025-11-25"},
		{"2024-11-05", "2024-11-05"},
		{"2099-01-01", "2025-11-25"},
	} {
		rs, _ := converse(t, mode{}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+tc.offered+`"}}`)
		var res struct{ ProtocolVersion string }
		if len(rs) != 1 || json.Unmarshal(rs[0].Result, &res) != nil || res.ProtocolVersion != tc.want {
			t.Errorf("offered %s: got %+v, want %s", tc.offered, rs, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	rs, err := converse(t, mode{}, `not json`, `{"jsonrpc":"2.0","id":7,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope"}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id   string
		code int
	}{{"null", -32700}, {"7", -32601}, {"8", -32602}}
	if len(rs) != len(want) {
		t.Fatalf("got %d replies: %+v", len(rs), rs)
	}
	for i, w := range want {
		if string(rs[i].ID) != w.id || rs[i].Error == nil || rs[i].Error.Code != w.code {
			t.Errorf("reply %d: id %s error %+v, want id %s code %d", i, rs[i].ID, rs[i].Error, w.id, w.code)
		}
	}
}

func TestHang(t *testing.T) {
	rs, err := converse(t, mode{hang: true}, initialize, listTools, call("3", `{}`), `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || string(rs[2].ID) != "4" {
		t.Fatalf("want initialize, tools/list and ping answered, the call not: %+v", rs)
	}
}

func TestDeafStopsReadingAfterToolsList(t *testing.T) {
	in := strings.NewReader(strings.Join([]string{initialize, listTools, call("3", `{}`)}, "\n") + "\n")
	var out bytes.Buffer
	err := serve(in, &out, mode{deaf: true})
	if !errors.Is(err, errDeaf) {
		t.Fatalf("serve returned %v, want errDeaf", err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d replies, want 2 (initialize, tools/list): %s", n, out.String())
	}
}

// A line longer than the read buffer is answered whole.
func TestLongLine(t *testing.T) {
	args := `{"pad":"` + strings.Repeat("x", 3<<20) + `"}`
	rs, err := converse(t, mode{}, call("1", args), call("2", `{"after":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || callText(t, rs[0]) != args || callText(t, rs[1]) != `{"after":true}` {
		t.Fatalf("long line not echoed whole, or the next line lost (%d replies)", len(rs))
	}
}

// countingWriter counts the writes that reach the pipe.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// Requests that arrive together are answered with one write: the server
// flushes only when no more input is buffered.
func TestPipelinedRequestsShareOneWrite(t *testing.T) {
	var lines []string
	for i := range 100 {
		lines = append(lines, call(strings.Repeat("1", 1+i%5), `{"n":1}`))
	}
	var out countingWriter
	if err := serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, mode{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 100 {
		t.Fatalf("%d replies, want 100", n)
	}
	if out.writes != 1 {
		t.Errorf("%d writes for 100 buffered requests, want 1", out.writes)
	}
}

// flood sends its n notifications, numbered in order, before its answer,
// in buffer-sized writes; the next request is answered after them.
func TestFlood(t *testing.T) {
	const n = 5000
	var out countingWriter
	in := strings.Join([]string{initialize, listTools, callTool("3", "flood", `{"n":5000}`), call("4", `{}`)}, "\n") + "\n"
	if err := serve(strings.NewReader(in), &out, mode{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2+n+2 {
		t.Fatalf("%d lines, want %d: the handshake, %d notifications, two answers", len(lines), 2+n+2, n)
	}
	for k, line := range lines[2 : 2+n] {
		var note struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  struct{ I int } `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &note); err != nil || note.JSONRPC != "2.0" || note.ID != nil ||
			note.Method != "event/flood" || note.Params.I != k+1 {
			t.Fatalf("notification %d: %s (%v)", k+1, line, err)
		}
	}
	for _, want := range []struct{ line, id, text string }{{lines[2+n], "3", "sent 5000 notifications"}, {lines[3+n], "4", "{}"}} {
		var r reply
		if err := json.Unmarshal([]byte(want.line), &r); err != nil || string(r.ID) != want.id || callText(t, r) != want.text {
			t.Fatalf("answer to call %s: %s (%v), want the text %q", want.id, want.line, err, want.text)
		}
	}
	if max := out.Len()/(64<<10) + 2; out.writes > max {
		t.Errorf("%d writes for %d bytes, want at most %d (64 KiB each)", out.writes, out.Len(), max)
	}
}

func TestFloodArguments(t *testing.T) {
	for _, args := range []string{`{}`, `{"n":-1}`, `{"n":"many"}`, `[]`} {
		rs, err := converse(t, mode{}, callTool("1", "flood", args))
		if err != nil || len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != -32602 {
			t.Errorf("flood %s: %+v (%v), want one invalid-params error", args, rs, err)
		}
	}
	rs, err := converse(t, mode{}, callTool("1", "flood", `{"n":0}`))
	if err != nil || len(rs) != 1 || callText(t, rs[0]) != "sent 0 notifications" {
		t.Errorf("flood of 0: %+v (%v)", rs, err)
	}
}

// Over HTTP a reply is one JSON body, which cannot carry notifications
// before it: flood is neither listed nor answered there.
func TestFloodOnlyOverStdio(t *testing.T) {
	var s session
	if list := s.handle([]byte(listTools), mode{}); bytes.Contains(list, []byte("flood")) || !bytes.Contains(list, []byte(`"echo"`)) {
		t.Errorf("tools/list without stdio: %s", list)
	}
	if r := s.handle([]byte(callTool("1", "flood", `{"n":3}`)), mode{}); !bytes.Contains(r, []byte("-32602")) || s.flood != 0 {
		t.Errorf("flood without stdio: %s (flood %d), want unknown tool", r, s.flood)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `"\`, "\x00\x1f\x7f", "é日本🙂", "\u2028\u2029", "a\nb\r\tc"} {
		var got string
		enc := appendString(nil, []byte(s))
		if err := json.Unmarshal(enc, &got); err != nil || got != s {
			t.Errorf("appendString(%q) = %s, decodes to %q (%v)", s, enc, got, err)
		}
	}
	// Invalid UTF-8 becomes U+FFFD rather than an invalid JSON string.
	var got string
	if err := json.Unmarshal(appendString(nil, []byte{'a', 0xff, 'b'}), &got); err != nil || got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q (%v)", got, err)
	}
}

// modernMeta is the _meta of a modern (2026-07-28) request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

func modernCall(id, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":` + args + `,` + modernMeta + `}}`
}

// The modern era: server/discover, tools/list and tools/call with the _meta,
// resultType on every result, the cache hint on the cacheable ones.
func TestModern(t *testing.T) {
	args := `{"n":1,"s":"é \" \\"}`
	rs, err := converse(t, mode{modern: true},
		`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{`+modernMeta+`}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`,
		modernCall("3", args),
		// escapes in the version are still the version
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("got %d replies, want 4: %+v", len(rs), rs)
	}
	for _, r := range rs {
		var res struct{ ResultType string }
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.ResultType != "complete" {
			t.Errorf("reply %s: %s (error %+v), want resultType complete", r.ID, r.Result, r.Error)
		}
	}
	var disc struct {
		SupportedVersions []string
		Capabilities      struct{ Tools *struct{} }
		Meta              map[string]struct{ Name, Version string } `json:"_meta"`
		TTLMs             *int64                                    `json:"ttlMs"`
		CacheScope        string
	}
	if err := json.Unmarshal(rs[0].Result, &disc); err != nil || string(rs[0].ID) != `"d"` ||
		len(disc.SupportedVersions) != 1 || disc.SupportedVersions[0] != "2026-07-28" || disc.Capabilities.Tools == nil ||
		disc.Meta["io.modelcontextprotocol/serverInfo"].Name != "echoserver" || disc.TTLMs == nil || disc.CacheScope != "public" {
		t.Errorf("server/discover: %s (%v)", rs[0].Result, err)
	}
	var list struct {
		Tools      []struct{ Name string }
		TTLMs      *int64 `json:"ttlMs"`
		CacheScope string
	}
	if err := json.Unmarshal(rs[1].Result, &list); err != nil || len(list.Tools) != 2 || list.Tools[0].Name != "echo" ||
		list.TTLMs == nil || *list.TTLMs < 60000 || list.CacheScope != "public" {
		t.Errorf("tools/list: %s (%v), want echo and flood, a TTL of a minute or more and public", rs[1].Result, err)
	}
	if got := callText(t, rs[2]); got != args {
		t.Errorf("echo text\n got %s\nwant %s", got, args)
	}
	if got := callText(t, rs[3]); got != "{}" {
		t.Errorf("call without arguments: %q", got)
	}
}

// The modern server refuses initialize, a request without the _meta
// protocol version, one naming another version, and ping (removed in
// 2026-07-28); every error names what it supports where the spec says so.
func TestModernRefusals(t *testing.T) {
	rs, err := converse(t, mode{modern: true},
		initialize,
		call("2", `{}`), // legacy frame: no _meta
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":{`+modernMeta+`}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope",`+modernMeta+`}}`,
		`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}`,
		// the version without the capabilities
		`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		code int
		data string
	}{
		{-32022, `{"supported":["2026-07-28"],"requested":"2025-06-18"}`},
		{-32602, ""},
		{-32022, `{"supported":["2026-07-28"],"requested":"2025-11-25"}`},
		{-32602, ""},
		{-32602, ""},
		{-32601, ""},
		{-32602, ""},
		{-32022, `{"supported":["2026-07-28"],"requested":""}`},
		{-32602, ""},
	}
	if len(rs) != len(want) {
		t.Fatalf("got %d replies, want %d: %+v", len(rs), len(want), rs)
	}
	for i, w := range want {
		r := rs[i]
		if id := strconv.Itoa(i + 1); string(r.ID) != id || r.Error == nil || r.Error.Code != w.code || string(r.Error.Data) != w.data {
			t.Errorf("reply %d: id %s error %+v, want id %s code %d data %s", i, r.ID, r.Error, id, w.code, w.data)
			continue
		}
		if r.Error.Data != nil {
			var data struct {
				Supported []string
				Requested string
			}
			if err := json.Unmarshal(r.Error.Data, &data); err != nil {
				t.Errorf("reply %d: data %s: %v", i, r.Error.Data, err)
			}
		}
	}
}

// A modern burst is answered with one write, as a legacy one.
func TestModernPipelinedRequestsShareOneWrite(t *testing.T) {
	var lines []string
	for i := range 100 {
		lines = append(lines, modernCall(strconv.Itoa(i+1), `{"n":1}`))
	}
	var out countingWriter
	if err := serve(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, mode{modern: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), `"resultType":"complete"`); n != 100 {
		t.Fatalf("%d results, want 100: %s", n, out.String())
	}
	if out.writes != 1 {
		t.Errorf("%d writes for 100 buffered requests, want 1", out.writes)
	}
}

// The modern era's checks cost no allocation: a modern call allocates no
// more than the legacy handler decoding the same frame, and at most one
// more than a legacy call (encoding/json's parse stack, one level deeper
// for the _meta).
func TestModernCallAllocations(t *testing.T) {
	legacy, modern := []byte(call("12", `{"n":1}`)), []byte(modernCall("12", `{"n":1}`))
	var s session
	allocs := func(line []byte, m mode) float64 {
		s.handle(line, m) // warm: the reused buffers grow once
		return testing.AllocsPerRun(1000, func() { s.handle(line, m) })
	}
	l, lm, m := allocs(legacy, mode{}), allocs(modern, mode{}), allocs(modern, mode{modern: true})
	if m > lm || m > l+1 {
		t.Errorf("a modern call allocates %.0f times; the same frame in the legacy handler %.0f, a legacy call %.0f", m, lm, l)
	}
	t.Logf("allocations per call: legacy %.0f, modern %.0f (the modern frame in the legacy handler %.0f)", l, m, lm)
}
