package cluster

import (
	"sync"

	"github.com/mcpvisor/mcpvisor/internal/member"
)

// Wire is what a member published by gossip (under its key) and told the
// others, as the bytes it handed its transport.
type Wire struct {
	mu   sync.Mutex
	sent []Sent
	node member.Node // the member's, to tell through
}

// Sent is one message a member handed its transport.
type Sent struct {
	Kind string // "publish <key>" or "tell <addr>"
	Body []byte
}

// Tap returns o whose member hands w a copy of everything it publishes
// and tells.
func Tap(o Options, w *Wire) Options {
	o.wrap = func(n member.Node) member.Node {
		w.mu.Lock()
		w.node = n
		w.mu.Unlock()
		return tappedNode{Node: n, w: w}
	}
	return o
}

// Sent lists the messages so far.
func (w *Wire) Sent() []Sent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Sent(nil), w.sent...)
}

func (w *Wire) add(kind string, b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent = append(w.sent, Sent{Kind: kind, Body: append([]byte(nil), b...)})
}

type tappedNode struct {
	member.Node
	w *Wire
}

func (n tappedNode) Publish(key string, state []byte) {
	n.w.add("publish "+key, state)
	n.Node.Publish(key, state)
}

func (n tappedNode) Tell(addr string, body []byte) {
	n.w.add("tell "+addr, body)
	n.Node.Tell(addr, body)
}

// Tell sends body to the member at addr through the tapped member, as
// its replica would (not recorded): what any process holding a member's
// transport could send.
func (w *Wire) Tell(addr string, body []byte) {
	w.mu.Lock()
	n := w.node
	w.mu.Unlock()
	n.Tell(addr, body)
}
