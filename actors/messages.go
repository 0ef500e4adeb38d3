package actors

import (
	"encoding/json"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Messages a server actor receives. Every message from a connection's
// goroutines carries the generation of the connection that sent it, so that
// news from a previous incarnation is recognised and ignored.

// callMsg asks the server to run one tools/call. reply is buffered (1) and
// receives exactly one answer: nobody ever blocks on it. id is set when the
// call is added to a connection's pendingTable.
type callMsg struct {
	tool  string
	args  json.RawMessage
	meta  json.RawMessage
	reply chan callReply
	id    int64
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

// stopServerMsg stops the server for good (unregister, host close). Pending
// calls fail with err. The actor stops itself once the process is gone.
type stopServerMsg struct {
	err error
}

// connClosed reports that a connection's process has been stopped and its
// goroutines have exited.
type connClosed struct{ gen uint64 }
