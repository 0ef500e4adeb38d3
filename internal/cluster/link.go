package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// Forwarded requests, their answers, notes, questions and tells travel on
// a link: one gRPC stream per pair of members, opened by the member that
// first sends, on the same server (and so the same port, mutual TLS and
// certificates) as protoactor's remote, with its frames multiplexed by
// request id. A request and its answer cross the stream once each way.
// Through protoactor's remote, a request went through its endpoint
// manager and an endpoint writer actor (batched, each message's type name
// serialized with it), into the receiver's node actor's mailbox, and the
// answer came back on the other member's connection the same way: about
// 300 µs and 180 allocations per hop on loopback.

// linkMethod is the link's gRPC method; the member's server takes it
// through its unknown-service handler (accept), so protoactor's remote
// needs no change.
const linkMethod = "/mcpvisor.cluster.Link/Stream"

var linkStream = grpc.StreamDesc{StreamName: "Stream", ServerStreams: true, ClientStreams: true}

// helloTimeout bounds the opening of a link: the stream and the hellos.
const helloTimeout = 5 * time.Second

// Flow-control windows of the links' connections, static both ways: with
// gRPC's default, dynamic windows, the receiving end of each message sent
// a ping to estimate the bandwidth (and the other end answered it), two
// frames more per request and per answer.
const (
	streamWindow = 4 << 20
	connWindow   = 16 << 20
)

// linkCodec carries a link's messages as the bytes they are, with no
// protobuf around them (one copy and a few allocations less each way).
// The opener asks for it by content-subtype; a stream that does not
// fails its first read.
type linkCodec struct{}

const linkCodecName = "mcpvisor-link"

func init() { encoding.RegisterCodecV2(linkCodec{}) }

func (linkCodec) Name() string { return linkCodecName }

func (linkCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("cluster: a link carries bytes, not %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (linkCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("cluster: a link carries bytes, not %T", v)
	}
	*b = data.Materialize()
	return nil
}

// frameKind is what a frame on a link is.
type frameKind byte

const (
	frameRequest frameKind = iota + 1 // a request for the receiver's handler (or its Reverse.Ask, with forID)
	frameAnswer                       // the answer to the receiver's request id
	frameNote                         // a note for the caller of the receiver's request id
	frameCancel                       // stop the sender's request id
	frameTell                         // a one-way message for Config.OnTell
	frameHello                        // the first frame each way: the sender's member id and address
	frameBye                          // the sender leaves: the opener closes the link
)

// frame is one message on a link. Ids are the sender's (a request, a
// cancel) or the receiver's (an answer, a note, forID): each member
// numbers its own requests, so a link carries two sequences.
type frame struct {
	kind  frameKind
	id    uint64
	forID uint64       // a request asked on behalf of the receiver's request forID (Caller.Ask)
	err   *RemoteError // an answer's failure
	body  []byte
}

// encode lays f out as kind, id (uvarint), then by kind: a request's
// forID (uvarint); an answer's failure flag, and for a failure its kind
// (uvarint length, bytes); then the body or the failure's message.
func (f *frame) encode() []byte {
	size := 1 + 2*binary.MaxVarintLen64 + 1 + len(f.body)
	if f.err != nil {
		size += binary.MaxVarintLen64 + len(f.err.Kind) + len(f.err.Message)
	}
	b := make([]byte, 0, size)
	b = append(b, byte(f.kind))
	b = binary.AppendUvarint(b, f.id)
	switch f.kind {
	case frameRequest:
		b = binary.AppendUvarint(b, f.forID)
	case frameAnswer:
		if f.err != nil {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(f.err.Kind)))
			b = append(b, f.err.Kind...)
			return append(b, f.err.Message...)
		}
		b = append(b, 0)
	}
	return append(b, f.body...)
}

var errBadFrame = errors.New("cluster: a malformed frame on a link")

func decodeFrame(b []byte) (frame, error) {
	var f frame
	if len(b) == 0 {
		return f, errBadFrame
	}
	f.kind, b = frameKind(b[0]), b[1:]
	if f.kind < frameRequest || f.kind > frameBye {
		return f, errBadFrame
	}
	var n int
	if f.id, n = binary.Uvarint(b); n <= 0 {
		return f, errBadFrame
	}
	b = b[n:]
	switch f.kind {
	case frameRequest:
		if f.forID, n = binary.Uvarint(b); n <= 0 {
			return f, errBadFrame
		}
		b = b[n:]
	case frameAnswer:
		if len(b) == 0 {
			return f, errBadFrame
		}
		failed := b[0] == 1
		b = b[1:]
		if failed {
			k, n := binary.Uvarint(b)
			if n <= 0 || k > uint64(len(b)-n) {
				return f, errBadFrame
			}
			b = b[n:]
			f.err = &RemoteError{Kind: string(b[:k]), Message: string(b[k:])}
			return f, nil
		}
	}
	f.body = b
	return f, nil
}

// msgStream is either end of a link's gRPC stream.
type msgStream interface {
	SendMsg(m any) error
	RecvMsg(m any) error
}

// link is this member's end of the stream with one other member.
type link struct {
	id, addr string // the other member's id and address
	opened   bool   // this member opened it (the stream's client)
	s        msgStream
	close    func() // an opener's: ends the stream and its connection

	wmu sync.Mutex // one frame written at a time

	mu      sync.Mutex
	ended   bool
	inbound map[uint64]context.CancelFunc // the other member's requests running here, by its id
}

// write sends f. A failure ends the link (its reader sees it too), and
// the requests waiting on it fail then.
func (l *link) write(f *frame) error {
	b := f.encode()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.s.SendMsg(b)
}

// dialing is a link being opened; the tells sent meanwhile wait in it,
// in order.
type dialing struct {
	done    chan struct{}
	l       *link
	err     error
	pending [][]byte
}

// linkTo is the link to the member at addr, opened when there is none:
// ctx bounds the wait for it, not the opening.
func (n *Node) linkTo(ctx context.Context, addr string) (*link, error) {
	n.lmu.Lock()
	if l := n.links[addr]; l != nil {
		n.lmu.Unlock()
		return l, nil
	}
	d, err := n.dialLocked(addr)
	n.lmu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case <-d.done:
		return d.l, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dialLocked returns the opening of the link to addr, starting it when
// none is under way; under n.lmu.
func (n *Node) dialLocked(addr string) (*dialing, error) {
	if n.linksClosed {
		return nil, fmt.Errorf("%w: this member left the cluster", ErrUnreachable)
	}
	if d := n.dialings[addr]; d != nil {
		return d, nil
	}
	d := &dialing{done: make(chan struct{})}
	n.dialings[addr] = d
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		l, err := n.open(addr)
		if err != nil {
			err = fmt.Errorf("%w: the connection to member %s failed: %w", ErrUnreachable, addr, err)
			n.log.Debug("cluster: opening a link failed", "addr", addr, "err", err)
		}
		// The tells sent while it opened go first, in order; more may
		// arrive while they are written.
		for err == nil {
			n.lmu.Lock()
			pending := d.pending
			d.pending = nil
			if len(pending) == 0 {
				if n.linksClosed {
					err = fmt.Errorf("%w: this member left the cluster", ErrUnreachable)
					n.lmu.Unlock()
					break
				}
				n.links[addr] = l
				delete(n.dialings, addr)
				n.wg.Add(1)
				n.lmu.Unlock()
				d.l = l
				close(d.done)
				go func() {
					defer n.wg.Done()
					n.read(l)
				}()
				return
			}
			n.lmu.Unlock()
			for _, body := range pending {
				_ = l.write(&frame{kind: frameTell, body: body})
			}
		}
		if l != nil {
			l.close()
		}
		n.lmu.Lock()
		delete(n.dialings, addr)
		n.lmu.Unlock()
		d.err = err
		close(d.done)
	}()
	return d, nil
}

// open opens a link to the member at addr: a stream over the cluster's
// mutual TLS, then the hellos, which must name the member the topology
// has at addr (and its certificate's name).
func (n *Node) open(addr string) (*link, error) {
	creds := insecure.NewCredentials()
	if n.cfg.TLS != nil {
		creds = credentials.NewTLS(n.cfg.TLS.ClientConfig())
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithStaticStreamWindowSize(streamWindow), grpc.WithStaticConnWindowSize(connWindow))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{addr: addr, opened: true, inbound: map[uint64]context.CancelFunc{}, close: func() {
		cancel()
		_ = cc.Close()
	}}
	fail := func(err error) (*link, error) {
		l.close()
		return nil, err
	}
	timer := time.AfterFunc(helloTimeout, cancel)
	cs, err := cc.NewStream(ctx, &linkStream, linkMethod, grpc.CallContentSubtype(linkCodecName))
	if err != nil {
		return fail(err)
	}
	l.s = cs
	if err := l.write(&frame{kind: frameHello, body: []byte(n.system.ID + "\n" + n.Self())}); err != nil {
		return fail(err)
	}
	hello, err := recvFrame(cs)
	if err != nil {
		return fail(err)
	}
	if !timer.Stop() {
		return fail(context.DeadlineExceeded)
	}
	if hello.kind != frameHello {
		return fail(fmt.Errorf("cluster: member %s opened with a %d frame", addr, hello.kind))
	}
	id, _, _ := strings.Cut(string(hello.body), "\n")
	if err := n.claims(cs.Context(), id); err != nil {
		return fail(err)
	}
	n.mu.Lock()
	at, ok := n.byID[id]
	n.mu.Unlock()
	if !ok || at != addr {
		return fail(fmt.Errorf("cluster: %s at %s is not a member there", id, addr))
	}
	l.id = id
	return l, nil
}

func recvFrame(s msgStream) (frame, error) {
	var b []byte
	if err := s.RecvMsg(&b); err != nil {
		return frame{}, err
	}
	return decodeFrame(b)
}

// accept takes a link another member opens, on the member's gRPC server
// (its unknown-service handler): refused unless the opener's hello names
// a member of the topology at the address it gives, with a certificate
// of that member's name.
func (n *Node) accept(_ any, ss grpc.ServerStream) error {
	if m, _ := grpc.MethodFromServerStream(ss); m != linkMethod {
		return status.Errorf(codes.Unimplemented, "unknown method %s", m)
	}
	hello, err := recvFrame(ss)
	if err != nil {
		return err
	}
	id, addr, _ := strings.Cut(string(hello.body), "\n")
	err = n.claims(ss.Context(), id)
	if err == nil && hello.kind != frameHello {
		err = errors.New("cluster: a link that did not open with a hello")
	}
	if err == nil {
		n.mu.Lock()
		at, ok := n.byID[id]
		n.mu.Unlock()
		if !ok || at != addr {
			err = fmt.Errorf("cluster: %s at %s is not a member", id, addr)
		}
	}
	if err != nil {
		n.log.Warn("cluster: refused a link", "member", id, "addr", addr, "err", err)
		return status.Error(codes.PermissionDenied, err.Error())
	}
	l := &link{id: id, addr: addr, s: ss, inbound: map[uint64]context.CancelFunc{}}
	n.lmu.Lock()
	if n.linksClosed {
		n.lmu.Unlock()
		return status.Error(codes.Unavailable, "cluster: this member is leaving")
	}
	n.accepted[l] = struct{}{}
	n.wg.Add(1)
	n.lmu.Unlock()
	defer n.wg.Done()
	if err := l.write(&frame{kind: frameHello, body: []byte(n.system.ID + "\n" + n.Self())}); err != nil {
		n.ended(l)
		return err
	}
	n.read(l)
	return nil
}

// read takes l's frames until its stream ends. A frame from a member
// that is no longer in the topology is dropped.
func (n *Node) read(l *link) {
	defer n.ended(l)
	var b []byte // allocated once for the link, not for each frame: RecvMsg sets it to a new message's bytes
	for {
		err := l.s.RecvMsg(&b)
		var f frame
		if err == nil {
			f, err = decodeFrame(b)
		}
		if errors.Is(err, errBadFrame) {
			continue
		}
		if err != nil {
			return
		}
		n.mu.Lock()
		at, ok := n.byID[l.id]
		n.mu.Unlock()
		if !ok || at != l.addr {
			continue
		}
		if f.kind == frameBye {
			if l.opened {
				l.close()
			}
			continue
		}
		n.receive(l, f)
	}
}

// ended forgets l once its stream has ended: the requests waiting on it
// fail (no answer is coming), those it brought are cancelled.
func (n *Node) ended(l *link) {
	n.lmu.Lock()
	if n.links[l.addr] == l {
		delete(n.links, l.addr)
	}
	delete(n.accepted, l)
	n.lmu.Unlock()
	l.mu.Lock()
	l.ended = true
	for _, cancel := range l.inbound {
		cancel()
	}
	l.mu.Unlock()
	if l.opened {
		l.close()
	}
	n.failOutbound(func(o *outbound) bool { return o.link == l }, connectionLost{})
}

// closeLinks ends every link as the member leaves: the requests they
// brought are cancelled, the links it opened closed at once, and those
// the others opened by asking them to (a bye), so that its server's
// graceful stop does not wait for them.
func (n *Node) closeLinks() {
	n.lmu.Lock()
	n.linksClosed = true
	var opened, accepted []*link
	for _, l := range n.links {
		opened = append(opened, l)
	}
	for l := range n.accepted {
		accepted = append(accepted, l)
	}
	n.lmu.Unlock()
	for _, l := range append(opened, accepted...) {
		l.mu.Lock()
		for _, cancel := range l.inbound {
			cancel()
		}
		l.mu.Unlock()
	}
	for _, l := range opened {
		l.close()
	}
	for _, l := range accepted {
		_ = l.write(&frame{kind: frameBye})
	}
}

// leaving is whether the member has begun to leave.
func (n *Node) leaving() bool {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	return n.linksClosed
}

// closeLinksTo ends the links this member opened to the members at the
// addresses that left.
func (n *Node) closeLinksTo(left []string) {
	n.lmu.Lock()
	var gone []*link
	for _, addr := range left {
		if l := n.links[addr]; l != nil {
			gone = append(gone, l)
		}
	}
	n.lmu.Unlock()
	for _, l := range gone {
		l.close()
	}
}
