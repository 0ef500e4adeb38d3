package actors

import (
	"encoding/json"
	"fmt"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Messages a server actor receives. Every message from a connection's
// goroutines carries the generation of the connection that sent it, so that
// news from a previous incarnation is recognised and ignored.

// callMsg asks the server to run one tools/call. reply is buffered (1) and
// receives exactly one answer: nobody ever blocks on it. id is set when the
// call is added to a connection's pendingTable.
//
// A tools/call has tool, args and meta; any other request (or a
// task-augmented tools/call) has method and its whole params.
type callMsg struct {
	tool   string
	args   json.RawMessage
	meta   json.RawMessage
	method string          // "": tools/call of tool
	params json.RawMessage // with method
	task   json.RawMessage // the task field, if the tool runs as a task (applyTask)
	reply  chan callReply
	id     int64
	timing *CallTiming // a traced call's, else nil
	// frame is the request as sent; its buffer is written again by the
	// next call a recycled message carries (no connection keeps a frame
	// once it is sent: stdio copies what it cannot write at once).
	frame []byte
	// leading is the reader m's caller leads on, and kick takes it out of
	// its Read when the caller's context ends: made once per message, so
	// a recycled one leads with no allocation of its own.
	leading *stdoutReader
	kick    func()

	pending pendingReq // its entry in the pending table, in one allocation
}

// kickFunc is m.kick, made on first use.
func (m *callMsg) kickFunc() func() {
	if m.kick == nil {
		m.kick = func() { m.leading.kick(m) }
	}
	return m.kick
}

// frameBuf is an empty buffer for the request's frame, of at least size
// bytes: the one a recycled message kept, if large enough.
func (m *callMsg) frameBuf(size int) []byte {
	if cap(m.frame) >= size {
		return m.frame[:0]
	}
	return make([]byte, 0, size)
}

// applyTask turns a tools/call into a task-augmented one when the caller
// offered a task field, the server declared tasks for tools/call and the
// tool's taskSupport is optional or required: decided when the call is
// sent, from the catalog and capabilities of the connection it goes to.
func (m *callMsg) applyTask(t *Tool, serverTasks bool) error {
	if len(m.task) == 0 || m.method != "" || t == nil || !serverTasks ||
		(t.TaskSupport != protocol.TaskSupportOptional && t.TaskSupport != protocol.TaskSupportRequired) {
		return nil
	}
	params, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Task      json.RawMessage `json:"task"`
		Meta      json.RawMessage `json:"_meta,omitempty"`
	}{m.tool, m.args, m.task, m.meta})
	if err != nil {
		return fmt.Errorf("tools/call %q: %w", m.tool, err)
	}
	m.method, m.params = protocol.MethodToolsCall, params
	return nil
}

// addInput makes the tools/call a multi round-trip retry: its params carry
// input (inputResponses, requestState) beside name, arguments and _meta,
// byte for byte. A retry is never task-augmented by the host.
func (m *callMsg) addInput(input json.RawMessage) error {
	params, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Meta      json.RawMessage `json:"_meta,omitempty"`
	}{m.tool, m.args, m.meta})
	if err != nil {
		return fmt.Errorf("tools/call %q: %w", m.tool, err)
	}
	params = append(append(append(params[:len(params)-1], ','), input...), '}')
	m.method, m.params, m.task = protocol.MethodToolsCall, params, nil
	return nil
}

// addMeta sets one member of the request's _meta (the progress token).
func (m *callMsg) addMeta(key string, value json.RawMessage) error {
	if m.method == "" {
		meta, err := protocol.MergeMeta(m.meta, key, value)
		if err != nil {
			return fmt.Errorf("_meta: %w", err)
		}
		m.meta = meta
		return nil
	}
	var params struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(m.params, &params); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	meta, err := protocol.MergeMeta(params.Meta, key, value)
	if err == nil {
		m.params, err = protocol.MergeMeta(m.params, "_meta", meta)
	}
	if err != nil {
		return fmt.Errorf("_meta: %w", err)
	}
	return nil
}

// what names the request in errors.
func (m *callMsg) what() string {
	if m.method == "" || m.method == protocol.MethodToolsCall && m.tool != "" {
		return fmt.Sprintf("tools/call %q", m.tool)
	}
	return m.method
}

type callReply struct {
	result json.RawMessage
	err    error
}

// cancelMsg tells the actor the caller abandoned call.
type cancelMsg struct {
	call   *callMsg
	reason string
}

// connStarted reports the outcome of spawning a connection.
type connStarted struct {
	gen  uint64
	conn conn
	err  error
}

// inboundMsg is one classified frame read from the server.
type inboundMsg struct {
	gen  uint64
	msg  protocol.Message
	size int
}

// badFrame is a line on stdout that is not JSON-RPC (a banner, a stray print).
type badFrame struct {
	gen  uint64
	line []byte // a prefix, for the log; its length is held by the flow
	err  error
}

// oversizedFrame reports a frame rejected for its size while it was read.
// A call it answered has been failed already; req is set when it answered
// one of the actor's own requests.
type oversizedFrame struct {
	gen   uint64
	req   *pendingReq
	err   error
	size  int64
	limit int
}

// connUnhealthy reports a server misbehaving in a way only a restart
// mends, though its process runs on: it does not read its stdin, or it
// writes a line without end. err says which, for status and the log.
type connUnhealthy struct {
	gen uint64
	err error
}

// readerDone reports that stdout ended (EOF or error).
type readerDone struct {
	gen uint64
	err error
}

// writeFailed reports that writing to stdin failed.
type writeFailed struct {
	gen uint64
	err error
}

// processExited reports that the child was reaped.
type processExited struct {
	gen  uint64
	exit supervision.ExitInfo
}

// connGrace fires when stdout or stdin failed but the child has not exited
// yet: the actor stops waiting for an exit status.
type connGrace struct{ gen uint64 }

// startupTimeout fires when the handshake took longer than StartupTimeout.
type startupTimeout struct{ gen uint64 }

// retryTick fires at the end of a backoff.
type retryTick struct{ gen uint64 }

// setEnabledMsg turns the server on or off. done is closed once the change
// has taken effect (for a disable: the process is gone).
type setEnabledMsg struct {
	enabled bool
	done    chan struct{}
}

// restartMsg stops the server's process and starts it again at once, as
// an operator asks: its restart count and backoff start afresh. done gets
// nil once it is starting, or why it cannot restart (disabled, stopped).
type restartMsg struct {
	done chan error
}

// stopServerMsg stops the server for good (unregister, host close). Pending
// calls fail with err. The actor stops itself once the process is gone.
type stopServerMsg struct {
	err error
}

// connClosed reports that a connection's process has been stopped and its
// goroutines have exited.
type connClosed struct{ gen uint64 }

// authChanged: the server's Authorizer obtained a token or ended a sign-in.
// done, when set, is closed once the server has acted on it.
type authChanged struct{ done chan struct{} }
