package replica

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestForwardedWire(t *testing.T) {
	for _, f := range []forwarded{
		{},
		{Op: opRestart, Server: "s1"},
		{Server: "s1", Tool: "mcp__s1__echo", Params: json.RawMessage(`{"n":1}`), Meta: json.RawMessage(`{"progressToken":"t"}`),
			TimeoutMs: 30000, Task: json.RawMessage(`{"ttl":60000}`), Input: `"inputResponses":{}`, Session: "sess", Stack: "st",
			Client: "c", Progress: true, ProgressToken: "tok", ResetTimeoutOnProgress: true, MaxTotalTimeoutMs: -1, Legacy: true},
		{Server: "s2", Method: "resources/read", Params: json.RawMessage(`{"uri":"file:///a"}`)},
	} {
		b := f.encode()
		got, err := decodeForwarded(b)
		if err != nil {
			t.Fatalf("decode %+v: %v", f, err)
		}
		if diff := cmp.Diff(f, got); diff != "" {
			t.Errorf("round trip (-sent +read):\n%s", diff)
		}
		// Every shorter body is refused, and so is one with more after it.
		for i := range b {
			if _, err := decodeForwarded(b[:i]); err == nil {
				t.Errorf("%+v cut at %d of %d bytes decoded", f, i, len(b))
			}
		}
		if _, err := decodeForwarded(append(b, 0)); err == nil {
			t.Errorf("%+v with a byte more decoded", f)
		}
	}
	// A JSON body still reads.
	got, err := decodeForwarded([]byte(`{"server":"s1","tool":"t","params":{"n":1},"progress":true}`))
	if err != nil || got.Server != "s1" || string(got.Params) != `{"n":1}` || !got.Progress {
		t.Errorf("JSON body read as %+v, %v", got, err)
	}
}

// TestForwardedWireRefusesWhatIsNotJSON: the arguments, _meta and task
// go into the frame written to the server as they are, so a member that
// sends something else than a JSON value there (a second message after
// the arguments, say) is refused.
func TestForwardedWireRefusesWhatIsNotJSON(t *testing.T) {
	for _, f := range []forwarded{
		{Server: "s1", Tool: "t", Params: json.RawMessage(`{"n":1}}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/call"`)},
		{Server: "s1", Tool: "t", Params: json.RawMessage(`{"n":1}`), Meta: json.RawMessage(`{`)},
		{Server: "s1", Tool: "t", Task: json.RawMessage(`1 2`)},
	} {
		if got, err := decodeForwarded(f.encode()); err == nil {
			t.Errorf("%+v decoded as %+v", f, got)
		}
	}
}

func FuzzForwardedWire(f *testing.F) {
	full := forwarded{Server: "s1", Tool: "t", Params: json.RawMessage(`{"n":1}`), Meta: json.RawMessage(`{}`), TimeoutMs: 5, Progress: true}
	f.Add(full.encode())
	f.Add([]byte(`{"server":"s1"}`))
	f.Add([]byte{wireVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeForwarded(b)
		if err != nil || len(b) == 0 || b[0] != wireVersion {
			return
		}
		again, err := decodeForwarded(got.encode())
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", got, err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("re-encoded differs:\n%s", diff)
		}
	})
}
