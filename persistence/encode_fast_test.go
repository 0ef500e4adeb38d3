package persistence

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The hand-written encoders write what the reflective decoder reads back
// field for field, every optional field set and unset.
func TestFastEncoders(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 11, 12, 13, time.UTC)
	events := []EventRecord{
		{Seq: 1, Server: "s", Method: "event/x", Received: at, Status: EventPending},
		{Seq: 1 << 40, Server: "gmail", Method: "event/new_email", Params: []byte(`{"a":1}`), Received: at,
			Status: EventProcessed, ProcessedAt: at.Add(time.Hour)},
	}
	for _, e := range events {
		roundTrip(t, e)
	}
	history := []HistoryRecord{
		{Seq: 7, Time: at, Kind: HistoryLifecycle},
		{Seq: 8, Time: at, Kind: HistoryLifecycle, Server: "m", Transition: "exited", Detail: "exit status 3", PID: 42,
			Stderr: []string{"a", "b"}},
		{Seq: 9, Time: at, Kind: HistoryCall, Server: "m", Scope: Scope{Session: "s", Stack: "f"}, Tool: "mcp__m__echo",
			Duration: 1500 * time.Microsecond, Waited: 2 * time.Minute, CallID: "k3x9-17", Outcome: "error", Error: "boom", ResultSize: 12,
			Arguments: []byte(`{"x":1}`), Result: []byte(`{"content":[]}`)},
		{Seq: 12, Time: at, Kind: HistoryCall, Server: "m", Method: "resources/read", Tool: "file:///a", Outcome: "ok"},
		{Seq: 10, Time: at, Kind: HistoryGrant, Scope: Scope{Session: "s"}, Group: "config"},
		{Seq: 11, Time: at, Kind: HistoryTool, Server: "m", Tool: "mcp__m__echo", Transition: "changed",
			Detail: "description: - a + b", Hash: "sha256:ab", Definition: []byte(`{"name":"echo"}`), By: "cli"},
	}
	for _, h := range history {
		roundTrip(t, h)
	}
}

// roundTrip encodes r and checks the reflective decoder gives it back.
func roundTrip[T any, P record[T]](t *testing.T, r T) {
	t.Helper()
	b, err := encodeRecord[T, P](&r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecord[T, P]([]byte("x/1"), b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("%T round trip (-want +got):\n%s", r, diff)
	}
}

func BenchmarkEncodeEvent(b *testing.B) {
	e := EventRecord{Seq: 123456, Server: "gmail", Method: "event/new_email",
		Params: []byte(`{"subject":"hello","from":"someone@example.com"}`), Received: time.Now(), Status: EventPending}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeRecord(&e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeEvent(b *testing.B) {
	e := EventRecord{Seq: 123456, Server: "gmail", Method: "event/new_email",
		Params: []byte(`{"subject":"hello","from":"someone@example.com"}`), Received: time.Now(), Status: EventPending}
	raw, err := encodeRecord(&e)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord[EventRecord]([]byte("e/1"), raw); err != nil {
			b.Fatal(err)
		}
	}
}
