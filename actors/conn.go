package actors

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// conn is one incarnation of a server connection, whatever the transport.
// Its goroutines answer callers through the pendingTable and report
// everything else to the owning actor with messages tagged with its
// generation: inboundMsg, responseMsg, badFrame, oversizedFrame,
// readerDone, writeFailed, processExited, connFailed.
type conn interface {
	// send writes or queues one message; it never blocks. The transport
	// reads what it needs from m's fields, never by parsing m.frame.
	send(m outMsg) error
	// pending is the table of requests in flight on this connection.
	pending() *pendingTable
	// release returns the flow-control credit of a handled inbound frame.
	release(n int)
	// abandon tells the transport that the caller of request id gave up.
	abandon(id int64)
	// ready tells the transport the handshake is complete.
	ready()
	// close ends the connection and joins its goroutines; it blocks and is
	// idempotent.
	close(ctx context.Context)
	generation() uint64
	pid() int // the process id, 0 when there is no process
}

// dialFunc starts one incarnation (generation gen) of a process-backed
// server's connection. It runs on a goroutine of its own, not in the actor,
// and may block while it spawns. The Runtime's is dialStdio; tests replace
// it (Options.dial) to script a server without a process.
type dialFunc func(gen uint64, spec *ServerSpec, cio connIO) (conn, error)

// connIO is how a connection reports to its actor. deliver sends a message
// to the actor and never blocks; event takes the server's events on the
// reader's goroutine (see newRouter); stderr takes the child's stderr lines.
type connIO struct {
	deliver func(any)
	event   func(*protocol.Message) bool
	stderr  func([]byte)
}

// outKind says what an outbound message is.
type outKind uint8

const (
	outRequest      outKind = iota // expects a response with id
	outNotification                // no id, no response
	outResponse                    // answers a request the server sent
)

// outMsg is one message for the server, encoded once by whoever sends it
// (a caller on the fast path, or the actor), with what a transport needs to
// know about it: a transport routes on these fields and never parses frame
// again. It is passed by value; frame is the JSON-RPC message without its
// newline, and send may append to it.
type outMsg struct {
	frame  []byte
	kind   outKind
	id     int64  // outRequest: the id the pending table assigned
	method string // outRequest, outNotification
	// modern is the protocol version of a request that carries the modern
	// _meta (2026-07-28): over HTTP it is sent as MCP-Protocol-Version,
	// with Mcp-Method, Mcp-Name (name) and Mcp-Param-* (headers).
	modern  string
	name    string
	headers []protocol.HeaderField
}

func requestOut(id int64, method string, frame []byte) outMsg {
	return outMsg{frame: frame, kind: outRequest, id: id, method: method}
}

func notificationOut(method string, params json.RawMessage) outMsg {
	return outMsg{frame: protocol.AppendNotification(nil, method, params), kind: outNotification, method: method}
}

func responseOut(frame []byte) outMsg { return outMsg{frame: frame, kind: outResponse} }

// rawID is a request's id as JSON, for errors the transport makes up.
func (m *outMsg) rawID() json.RawMessage { return strconv.AppendInt(nil, m.id, 10) }

// flow bounds the bytes read from a server but not yet handled by its actor,
// so a server that floods stdout cannot grow the host's memory without limit.
type flow struct {
	limit int64
	mu    sync.Mutex
	used  int64
	wake  chan struct{} // closed when used drops below limit
}

func newFlow(limit int64) *flow { return &flow{limit: limit} }

// flowMinCharge is the least a message is charged against the limit. A
// message costs more than its frame (its classified form, the actor
// message, the mailbox slot), and counting only frame bytes let a flood of
// 60-byte notifications hold ~160 MB under a 32 MiB limit. With each
// charged at least 8 KiB, at most limit/8 KiB messages wait (4096 with the
// default frame limit): small floods hold a few MB, big frames still pass.
const flowMinCharge = 8 << 10

func flowCharge(n int) int64 { return int64(max(n, flowMinCharge)) }

// acquire takes n bytes, waiting while the limit is exceeded. It returns
// false if stop closed first. A single frame larger than the limit passes
// once nothing else is in flight.
func (f *flow) acquire(n int, stop <-chan struct{}) bool {
	c := flowCharge(n)
	for {
		f.mu.Lock()
		if f.used == 0 || f.used+c <= f.limit {
			f.used += c
			f.mu.Unlock()
			return true
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-stop:
			return false
		}
	}
}

// release returns n bytes.
func (f *flow) release(n int) {
	f.mu.Lock()
	f.used -= flowCharge(n)
	if f.wake != nil && f.used < f.limit {
		close(f.wake)
		f.wake = nil
	}
	f.mu.Unlock()
}
