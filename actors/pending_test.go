package actors

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

func classify(t *testing.T, frame []byte) protocol.Message {
	t.Helper()
	msg, err := protocol.Classify(frame)
	if err != nil {
		t.Fatalf("Classify(%s): %v", frame, err)
	}
	return msg
}

// The router hands a call's response straight to its caller, the actor's
// own responses and anything unknown to the actor, and events to the sink.
func TestRouterRoute(t *testing.T) {
	tests := []struct {
		name      string
		frame     func(call, init int64) []byte
		sinkTakes bool
		wantReply string // "" : the caller gets nothing
		wantActor string // the type delivered to the actor, "" for none
	}{
		{
			name: "call result to its caller",
			frame: func(call, _ int64) []byte {
				return protocol.AppendResult(nil, jsonID(call), json.RawMessage(`{"ok":1}`))
			},
			wantReply: `{"ok":1}`,
		},
		{
			name: "call error to its caller",
			frame: func(call, _ int64) []byte {
				return protocol.AppendError(nil, jsonID(call), protocol.CodeInvalidParams, "bad", nil)
			},
			wantReply: "error",
		},
		{
			name:      "the actor's own request",
			frame:     func(_, init int64) []byte { return protocol.AppendResult(nil, jsonID(init), json.RawMessage(`{}`)) },
			wantActor: "responseMsg",
		},
		{
			name:      "unknown id",
			frame:     func(int64, int64) []byte { return protocol.AppendResult(nil, jsonID(99), json.RawMessage(`{}`)) },
			wantActor: "inboundMsg",
		},
		{
			name:      "event taken by the sink",
			frame:     func(int64, int64) []byte { return protocol.AppendNotification(nil, "notifications/custom", nil) },
			sinkTakes: true,
		},
		{
			name: "notification left to the actor",
			frame: func(int64, int64) []byte {
				return protocol.AppendNotification(nil, protocol.MethodToolsListChanged, nil)
			},
			wantActor: "inboundMsg",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var delivered []any
			var sunk []string
			spec := ServerSpec{Name: "s"}.WithDefaults()
			r := newRouter(1, &spec, func(m any) { delivered = append(delivered, m) }, func(m *protocol.Message) bool {
				sunk = append(sunk, m.Method)
				return tt.sinkTakes
			})
			call := &callMsg{tool: "t", reply: make(chan callReply, 1)}
			callID, err := r.pending.add(&pendingReq{kind: reqCall, call: call})
			if err != nil {
				t.Fatal(err)
			}
			initID, _ := r.pending.add(&pendingReq{kind: reqInitialize})
			frame := tt.frame(callID, initID)
			if !r.route(classify(t, frame), len(frame), nil) {
				t.Fatal("route reported stopping")
			}

			select {
			case rep := <-call.reply:
				switch {
				case tt.wantReply == "":
					t.Errorf("the caller got %s, %v", rep.result, rep.err)
				case tt.wantReply == "error":
					var perr *protocol.Error
					if !errors.As(rep.err, &perr) || perr.Code != protocol.CodeInvalidParams {
						t.Errorf("reply error %v, want the server's -32602", rep.err)
					}
				case string(rep.result) != tt.wantReply:
					t.Errorf("reply %s, want %s", rep.result, tt.wantReply)
				}
			default:
				if tt.wantReply != "" {
					t.Error("the caller got nothing")
				}
			}
			var got string
			switch len(delivered) {
			case 0:
			case 1:
				switch delivered[0].(type) {
				case *responseMsg:
					got = "responseMsg"
				case *inboundMsg:
					got = "inboundMsg"
				default:
					got = "other"
				}
			default:
				t.Fatalf("%d messages delivered to the actor", len(delivered))
			}
			if got != tt.wantActor {
				t.Errorf("actor got %q, want %q", got, tt.wantActor)
			}
			if tt.sinkTakes && len(sunk) != 1 {
				t.Errorf("sink saw %v", sunk)
			}
		})
	}
}

func jsonID(n int64) json.RawMessage { return json.RawMessage(strconv.FormatInt(n, 10)) }

// Closing the table fails what is in flight and refuses what comes after;
// takeCall removes a call only while it is that call's entry.
func TestPendingTableClose(t *testing.T) {
	tab := newPendingTable()
	a := &callMsg{reply: make(chan callReply, 1)}
	b := &callMsg{reply: make(chan callReply, 1)}
	if _, err := tab.add(&pendingReq{kind: reqCall, call: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.add(&pendingReq{kind: reqCall, call: b}); err != nil {
		t.Fatal(err)
	}
	if a.id == b.id || a.id == 0 {
		t.Fatalf("ids %d and %d", a.id, b.id)
	}
	if !tab.takeCall(a) || tab.takeCall(a) {
		t.Error("takeCall should succeed once")
	}
	stale := &callMsg{id: b.id}
	if tab.takeCall(stale) {
		t.Error("takeCall removed another call's entry with the same id")
	}
	lost := errors.New("gone")
	if got := tab.close(lost); len(got) != 1 || got[0].call != b {
		t.Errorf("close returned %v, want b's entry", got)
	}
	if _, err := tab.add(&pendingReq{kind: reqCall, call: &callMsg{}}); !errors.Is(err, lost) {
		t.Errorf("add after close: %v, want the close reason", err)
	}
	if tab.size() != 0 {
		t.Errorf("size after close = %d", tab.size())
	}
}
