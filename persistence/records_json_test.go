package persistence

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The records' JSON is the API's: camelCase, Seq as "id", no version, and
// a raw JSON value that is not valid JSON as null, so one bad record
// cannot fail a listing.
func TestRecordJSON(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		rec  any
		want string
	}{
		{"pending event", EventRecord{V: 1, Seq: 7, Server: "s", Method: "m", Params: RawJSON(`{"a":1}`), Received: t0, Status: EventPending},
			`{"id":7,"server":"s","method":"m","params":{"a":1},"received":"2026-01-02T03:04:05Z","status":"pending"}`},
		{"processed event without params", EventRecord{V: 1, Seq: 8, Server: "s", Method: "m", Received: t0, Status: EventProcessed, ProcessedAt: t0},
			`{"id":8,"server":"s","method":"m","received":"2026-01-02T03:04:05Z","status":"processed","processedAt":"2026-01-02T03:04:05Z"}`},
		{"event with invalid params", EventRecord{Seq: 9, Params: RawJSON(`{"a":`), Received: t0},
			`{"id":9,"server":"","method":"","params":null,"received":"2026-01-02T03:04:05Z","status":""}`},
		{"call", HistoryRecord{V: 1, Seq: 3, Time: t0, Kind: HistoryCall, Server: "s", Scope: Scope{Session: "chat"}, Tool: "mcp__s__t",
			Duration: 1500 * time.Microsecond, Outcome: "ok", ResultSize: 12, Arguments: RawJSON(`{"x":1}`), Result: RawJSON("not json")},
			`{"id":3,"time":"2026-01-02T03:04:05Z","kind":"call","server":"s","scope":{"session":"chat"},"tool":"mcp__s__t",` +
				`"durationNs":1500000,"outcome":"ok","resultSize":12,"arguments":{"x":1},"result":null}`},
		{"transition", HistoryRecord{Seq: 4, Time: t0, Kind: HistoryLifecycle, Server: "s", Transition: "exited", PID: 42, Stderr: []string{"bye"}},
			`{"id":4,"time":"2026-01-02T03:04:05Z","kind":"lifecycle","server":"s","transition":"exited","pid":42,"stderr":["bye"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("json.Marshal =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestEventRecordJSONRoundTrip(t *testing.T) {
	in := EventRecord{Seq: 7, Server: "s", Method: "m", Params: RawJSON(`{"a":[1,2]}`),
		Received: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Status: EventPending}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out EventRecord
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
	if b, err := json.Marshal(RawJSON("{")); err != nil || string(b) != "null" {
		t.Errorf("json.Marshal of invalid JSON = %s (%v), want null", b, err)
	}
	var null EventRecord
	if err := json.Unmarshal([]byte(`{"id":1,"params":null}`), &null); err != nil || null.Params != nil {
		t.Errorf("params null: %q (%v), want nil", null.Params, err)
	}
}
