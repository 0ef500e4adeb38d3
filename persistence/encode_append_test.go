package persistence

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// appendHistory writes the very bytes EncodeMsgpack does, across every
// field and every size class of strings, binaries, ints and times.
func TestAppendHistoryMatchesEncoder(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 11, 12, 13, time.UTC)
	long := func(n int) string { return strings.Repeat("x", n) }
	recs := []HistoryRecord{
		{},
		{V: SchemaVersion, Seq: 7, Time: at, Kind: HistoryLifecycle},
		{V: -1, Seq: 1 << 40, Time: time.Unix(0, 0), Kind: HistoryLifecycle, Server: "m", Transition: "exited",
			Detail: long(31), PID: -42, Stderr: []string{"a", long(32), long(255)}},
		{Seq: 200, Time: time.Unix(1<<34, 5), Kind: HistoryCall, Server: long(256), Scope: Scope{Session: "s", Stack: "f"},
			Tool: long(70000), Duration: -1500, Waited: 144 * time.Second, CallID: long(40), Outcome: "error", Error: "boom", ResultSize: 1 << 33,
			Arguments: []byte(`{"x":1}`), Result: bytes.Repeat([]byte("r"), 300)},
		{Seq: 70000, Time: at.Add(-100 * 365 * 24 * time.Hour), Kind: HistoryCall, Method: "resources/read", Tool: "file:///a",
			Outcome: "ok", Duration: -200, ResultSize: 40000, Result: bytes.Repeat([]byte("r"), 70000),
			Stderr: make([]string, 20)},
		{Seq: 1 << 20, Time: at, Kind: HistoryGrant, Scope: Scope{Session: "s"}, Group: "config", PID: -40000, Duration: -1 << 40},
		{Seq: 11, Time: time.Unix(1, 0), Kind: HistoryTool, Server: "m", Tool: "mcp__m__echo", Transition: "changed",
			Detail: "description: - a + b", Hash: "sha256:ab", Definition: []byte(`{"name":"echo"}`), By: "cli", PID: -100},
	}
	for i := range recs {
		var want bytes.Buffer
		if err := recs[i].EncodeMsgpack(msgpack.NewEncoder(&want)); err != nil {
			t.Fatal(err)
		}
		if got := appendHistory([]byte("prefix"), &recs[i]); !bytes.Equal(got[6:], want.Bytes()) || string(got[:6]) != "prefix" {
			t.Errorf("record %d: appendHistory differs from EncodeMsgpack\n got %x\nwant %x", i, got[6:min(len(got), 80)], want.Bytes()[:min(want.Len(), 74)])
		}
	}
}

func BenchmarkAppendHistory(b *testing.B) {
	h := HistoryRecord{V: SchemaVersion, Seq: 123456, Time: time.Now(), Kind: HistoryCall, Server: "github",
		Scope: Scope{Session: "s-7f3a"}, Tool: "mcp__github__search_issues", Duration: 180 * time.Microsecond,
		Outcome: "ok", ResultSize: 1834}
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = appendHistory(buf[:0], &h)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		for b.Loop() {
			buf.Reset()
			if err := h.EncodeMsgpack(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
