package replica

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/broadcast"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Replica is a host's membership of a cluster with the replication on
// top (member.Replica): it places the host's servers, publishes their
// status and catalogs by gossip, keeps the registry, grants and pins the
// same on every member, and forwards calls to the member a server runs
// on.
type Replica struct {
	host    member.Host
	rt      *actors.Runtime // set by Join
	log     *slog.Logger
	newNode func(member.Hooks) (member.Node, error)
	bg      context.Context // cancelled by Leave
	stopBg  context.CancelFunc

	node atomic.Pointer[member.Node] // replaced when the member joins again (onLost)
	lost atomic.Bool                 // between losing its place and joining again: nothing runs here

	// The goroutines the replica starts (spawn): Leave waits for them
	// before it stops the member, so that none joins one after.
	goMu    sync.Mutex
	stopped bool
	wg      sync.WaitGroup

	mu       sync.Mutex
	views    map[string]memberView               // the last state each other member published
	catalogs map[string]map[string]serverCatalog // each other member's servers' last catalogs
	registry map[string]registryEntry            // run-time registry changes (registry.go)
	grants   map[string]grantEntry               // each scope's grants after its last change
	pins     map[string]pinEntry                 // each tool's pin after its last change
	gates    map[string]*gateState               // registrations at this member's approval gate (gate.go)
	retries  map[vouchQuery]int                  // registry changes no member answered for, asked again (vouch.go)
	placedBy []string                            // the membership the servers were last placed by
	relays   map[string]context.CancelFunc       // tasks whose progress is relayed to their caller, by server and id
	clock    int64                               // the registry's hybrid clock: the last version made or seen
	wake     chan struct{}                       // a change to publish
	merges   chan sharedView                     // shared state from the others, merged in order (mergeLoop)
	allowed  chan string                         // registrations allowed at this member's gate, enabled by mergeLoop

	shared atomic.Bool // the shared state changed since it was last published

	reviewsChanged broadcast.Signal // this member's tool reviews or another's changed
}

var _ member.Replica = (*Replica)(nil)

// What each member publishes by gossip, under keys gossiped apart, so
// that what does not change is not sent again: its servers' status as
// they run there (keyServers, at every status change), each server's
// tools and reviews (keyCatalog+name, when they change: definitions are
// large, and a server that restarts in a loop must not resend every
// other's), and the state every member shares (keyShared, when it
// changes).
const (
	keyServers = "servers"
	keyCatalog = "catalog/"
	keyShared  = "shared"
)

// memberView is what a member publishes of its servers.
type memberView struct {
	// Members is the membership the member last placed the servers by.
	Members []string       `json:"members,omitempty"`
	Servers []remoteServer `json:"servers"`
}

// serverCatalog is what a member publishes of a server it runs besides
// its status: its tools and the reviews of their definitions.
type serverCatalog struct {
	Tools   []actors.Tool       `json:"tools,omitempty"`
	Reviews []actors.ToolReview `json:"reviews,omitempty"`
}

// sharedView is the last change a member knows to each part of the
// shared state (registry.go).
type sharedView struct {
	Registry map[string]registryEntry `json:"registry,omitempty"`
	Grants   map[string]grantEntry    `json:"grants,omitempty"`
	Pins     map[string]pinEntry      `json:"pins,omitempty"`
}

type remoteServer struct {
	Status  actors.ServerStatus `json:"status"`
	Catalog string              `json:"catalog,omitempty"` // the hash of the serverCatalog published with it
}

// New makes a host's replica, and its first member with newNode (which
// it calls again each time the member joins again after losing its
// place). The servers are registered after it, so each starts where the
// cluster places it; none starts before the first membership is known.
func New(host member.Host, log *slog.Logger, newNode func(member.Hooks) (member.Node, error)) (*Replica, error) {
	r := &Replica{host: host, log: log, newNode: newNode, views: map[string]memberView{}, catalogs: map[string]map[string]serverCatalog{}, registry: map[string]registryEntry{}, grants: map[string]grantEntry{}, pins: map[string]pinEntry{}, gates: map[string]*gateState{}, retries: map[vouchQuery]int{}, relays: map[string]context.CancelFunc{}, merges: make(chan sharedView, 64), allowed: make(chan string, 16), wake: make(chan struct{}, 1)}
	r.bg, r.stopBg = context.WithCancel(context.Background())
	node, err := r.makeNode()
	if err != nil {
		r.stopBg()
		return nil, err
	}
	r.node.Store(&node)
	r.shared.Store(true)
	return r, nil
}

// makeNode makes a member with a provider of its own.
func (r *Replica) makeNode() (member.Node, error) {
	return r.newNode(member.Hooks{Handler: r.serve, OnPlacement: r.place, OnState: r.onState,
		OnLost: r.onLost, OnTell: r.onTell, Logger: r.log})
}

// Join starts the membership, once the servers are registered on rt.
func (r *Replica) Join(rt *actors.Runtime) error {
	r.rt = rt
	rt.OnPinChange(r.recordPin) // before any server runs: none does before the membership
	if err := r.n().Join(); err != nil {
		return err
	}
	r.spawn(r.publishLoop)
	r.spawn(r.watchReviews)
	r.spawn(r.mergeLoop)
	r.relayEvents()
	return nil
}

// spawn runs f in a goroutine Leave waits for; not once Leave has
// begun to (f would outlive it), and then it reports false.
func (r *Replica) spawn(f func()) bool {
	r.goMu.Lock()
	defer r.goMu.Unlock()
	if r.stopped {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// n is the member this host is now.
func (r *Replica) n() member.Node {
	if p := r.node.Load(); p != nil {
		return *p
	}
	return nil
}

// onLost: the provider no longer holds this member (its etcd lease lapsed:
// cut off from etcd for longer than the lease). The others have placed its
// servers on themselves by now, and protoactor blocks a member that left
// for good, so this one fences itself, stopping every server it runs, and
// joins again as a new member, trying every second until it can.
func (r *Replica) onLost() {
	if !r.lost.CompareAndSwap(false, true) {
		return
	}
	r.spawn(func() {
		log := r.log
		log.Warn("cluster: this member lost its place in the cluster; stopping its servers and joining again")
		r.place() // every server unplaced here: none runs twice
		r.n().Stop()
		for r.bg.Err() == nil {
			node, err := r.makeNode()
			if err == nil {
				// Leave stops the member it finds here once this
				// goroutine has returned: stored before it joins, it
				// cannot be missed.
				r.node.Store(&node)
				r.lost.Store(false)
				r.shared.Store(true) // a new member's: published afresh
				if err = node.Join(); err == nil {
					log.Info("cluster: joined again", "member", node.Self())
					return
				}
				r.lost.Store(true)
			}
			log.Warn("cluster: joining again", "error", err)
			select {
			case <-time.After(time.Second):
			case <-r.bg.Done():
			}
		}
	})
}

// unplaced is where a server is while no member can run it (before the
// first membership is known, or none has its node label): not here.
const unplaced = "(no member for it)"

// Placement is the runtime's: "" for a server placed here.
func (r *Replica) Placement(name, label string) string {
	n := r.n()
	if n == nil || r.lost.Load() {
		return unplaced
	}
	switch owner := n.Owner(name, label); owner {
	case "":
		return unplaced
	case n.Self():
		return ""
	default:
		return owner
	}
}

// place moves every server to where the membership now places it, and
// shows the ones placed elsewhere as their member last published them.
//
// A server placed here that was not (moving here, or placed for the first
// time) starts only once every other member has published that it placed
// the servers by the same membership as this one, and that it does not run
// this server (or has left). Members learn of a new membership at
// different moments (an etcd watch, a poll of Leases or peers): without
// this, a member that has not yet seen a new one keeps, or starts, a server
// the new membership places elsewhere, and the server runs on both until
// it catches up. Calls to it are unavailable meanwhile, for a round or two
// of gossip.
func (r *Replica) place() {
	ctx, cancel := context.WithTimeout(r.bg, 30*time.Second)
	defer cancel()
	n := r.n()
	members := n.Members()
	for _, st := range r.rt.Status() {
		owner := r.Placement(st.Name, r.rt.NodeLabel(st.Name))
		if owner == "" && st.Node != "" {
			if m := r.notAgreed(st.Name, members); m != "" {
				owner = handingOver + m
			}
		}
		if err := r.rt.Place(ctx, st.Name, owner); err != nil {
			r.log.Warn("cluster: placing a server", "server", st.Name, "error", err)
			continue
		}
		if owner != "" {
			r.showView(st.Name, owner)
		}
	}
	if slices.Equal(members, n.Members()) {
		r.mu.Lock()
		r.placedBy = members
		r.mu.Unlock()
		r.wakePublish()
	}
}

// handingOver prefixes the member a server placed here waits for.
const handingOver = "(waiting for) "

// notAgreed is the first other member of members that has not yet
// published that it placed the servers by members, or that still runs
// server; "" if none.
func (r *Replica) notAgreed(server string, members []string) string {
	self := r.n().Self()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range members {
		if m == self {
			continue
		}
		v, ok := r.views[m]
		if !ok || !slices.Equal(v.Members, members) {
			return m
		}
		for _, rs := range v.Servers {
			if rs.Status.Name == server && rs.Status.State != actors.StateElsewhere && rs.Status.State != actors.StateStopped && rs.Status.State != actors.StateDisabled {
				return m
			}
		}
	}
	return ""
}

// showView shows server as its member last published it.
func (r *Replica) showView(server, owner string) {
	r.mu.Lock()
	v, ok := r.views[owner]
	r.mu.Unlock()
	if !ok {
		return
	}
	for _, rs := range v.Servers {
		if rs.Status.Name == server {
			r.rt.SetRemoteView(server, owner, rs.Status, r.catalog(owner, server).Tools)
		}
	}
}

// catalog is the last catalog member published of server.
func (r *Replica) catalog(member, server string) serverCatalog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.catalogs[member][server]
}

// onState takes a member's published state under key (nil: it left).
func (r *Replica) onState(member, key string, state []byte) {
	if state == nil {
		r.mu.Lock()
		delete(r.views, member)
		delete(r.catalogs, member)
		r.mu.Unlock()
		return
	}
	if server, ok := strings.CutPrefix(key, keyCatalog); ok {
		r.onCatalog(member, server, state)
		return
	}
	if key == keyShared {
		var sv sharedView
		if json.Unmarshal(state, &sv) == nil {
			select {
			case r.merges <- sv:
			case <-r.bg.Done():
			}
		}
		return
	}
	if key != keyServers {
		return
	}
	var v memberView
	if json.Unmarshal(state, &v) != nil {
		return
	}

	r.mu.Lock()
	old := r.views[member]
	r.views[member] = v
	r.mu.Unlock()
	if !slices.EqualFunc(old.Servers, v.Servers, func(a, b remoteServer) bool { return a.Status.Name == b.Status.Name }) {
		r.reviewsChanged.Notify() // the servers whose reviews it lists changed
	}
	shown := map[string]bool{}
	for _, rs := range v.Servers {
		shown[rs.Status.Name] = true
		if r.Placement(rs.Status.Name, r.rt.NodeLabel(rs.Status.Name)) == member {
			// Its catalog, if it changed, comes under its own key, before
			// or after this.
			r.rt.SetRemoteView(rs.Status.Name, member, rs.Status, r.catalog(member, rs.Status.Name).Tools)
		}
	}
	// A server placed on member that it no longer shows (it stopped
	// running it: fenced, or not yet started) is not running there.
	handover := false
	for _, st := range r.rt.Status() {
		if st.Node == member && !shown[st.Name] && st.State != actors.StateElsewhere {
			r.rt.SetRemoteView(st.Name, member, actors.ServerStatus{State: actors.StateElsewhere}, nil)
		}
		handover = handover || strings.HasPrefix(st.Node, handingOver)
	}
	if handover {
		r.place() // a member may have stopped what moves here
	}
}

// onCatalog takes a server's catalog as member published it.
func (r *Replica) onCatalog(member, server string, state []byte) {
	var c serverCatalog
	if json.Unmarshal(state, &c) != nil {
		return
	}
	r.mu.Lock()
	if r.catalogs[member] == nil {
		r.catalogs[member] = map[string]serverCatalog{}
	}
	old := r.catalogs[member][server]
	r.catalogs[member][server] = c
	r.mu.Unlock()
	if !reflect.DeepEqual(old.Reviews, c.Reviews) {
		r.reviewsChanged.Notify()
	}
	if r.Placement(server, r.rt.NodeLabel(server)) == member {
		r.showView(server, member)
	}
}

// publishLoop publishes this member's servers at every change of their
// status, at most every 50 ms, and the catalog of each when it changed.
func (r *Replica) publishLoop() {
	var last []byte
	var published map[string]string // server → the hash of the catalog last published
	var node member.Node
	for {
		if n := r.n(); n != node {
			// A new member (joined again): it publishes everything.
			node, last, published = n, nil, map[string]string{}
		}
		changed := r.rt.StatusChanged()
		r.mu.Lock()
		v := memberView{Members: r.placedBy}
		r.mu.Unlock()
		reviews := map[string][]actors.ToolReview{}
		for _, rv := range r.rt.ToolReviews() {
			reviews[rv.Server] = append(reviews[rv.Server], rv)
		}
		for _, st := range r.rt.Status() {
			if st.Node == "" && st.State != actors.StateElsewhere {
				b, err := json.Marshal(serverCatalog{Tools: r.rt.Catalog(st.Name), Reviews: reviews[st.Name]})
				if err != nil {
					continue
				}
				sum := sha256.Sum256(b)
				hash := hex.EncodeToString(sum[:8])
				if published[st.Name] != hash {
					node.Publish(keyCatalog+st.Name, b)
					published[st.Name] = hash
				}
				v.Servers = append(v.Servers, remoteServer{Status: st, Catalog: hash})
			}
		}
		if b, err := json.Marshal(v); err == nil && !bytes.Equal(b, last) {
			node.Publish(keyServers, b)
			last = b
		}
		if sv, ok := r.sharedSnapshot(); ok {
			if b, err := json.Marshal(sv); err == nil {
				node.Publish(keyShared, b)
			}
		}
		select {
		case <-changed:
		case <-r.wake:
		case <-r.bg.Done():
			return
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.bg.Done():
			return
		}
	}
}

// Leave takes the member out of the cluster: it stops the replica's
// goroutines and waits for them (a member joining again after it lost its
// place among them), then stops the member, whichever it is by then. The
// others place its servers.
func (r *Replica) Leave() {
	r.stopBg()
	r.goMu.Lock()
	r.stopped = true
	r.goMu.Unlock()
	r.wg.Wait()
	r.n().Stop()
}

// forwarded is a request one member sends the member a server runs on.
type forwarded struct {
	Op        string          `json:"op,omitempty"` // "": a call or request to Server; opHistory, opAccess
	Server    string          `json:"server,omitempty"`
	Tool      string          `json:"tool,omitempty"`   // a tools/call: the namespaced tool
	Method    string          `json:"method,omitempty"` // any other request
	Params    json.RawMessage `json:"params,omitempty"` // the call's arguments, or the request's params
	Meta      json.RawMessage `json:"meta,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	// A call's task field (the server may run it as a task), and a multi
	// round-trip retry's members of params ("inputResponses":…,
	// "requestState":…), a fragment, not a JSON value: hence a string.
	Task  json.RawMessage `json:"task,omitempty"`
	Input string          `json:"input,omitempty"`
	// The caller's session and client, to which the server's questions
	// are attributed as if the call were local (member.Run), and whether
	// it wants the call's progress (sent back as notes).
	Session  string `json:"session,omitempty"`
	Stack    string `json:"stack,omitempty"`
	Client   string `json:"client,omitempty"`
	Progress bool   `json:"progress,omitempty"`
	// ProgressToken is the caller's token that outlives the call (its
	// task's): the progress of a task the call starts is relayed to it.
	ProgressToken          string `json:"progressToken,omitempty"`
	ResetTimeoutOnProgress bool   `json:"resetTimeoutOnProgress,omitempty"`
	MaxTotalTimeoutMs      int64  `json:"maxTotalTimeoutMs,omitempty"`
	// Legacy: made for a legacy client that can be asked, so a modern
	// server's legacy incarnation serves it (actors.CallOptions.Legacy).
	Legacy bool `json:"legacy,omitempty"`
}

// Owner is the member server runs on when not here ("": here, or placed
// nowhere).
func (r *Replica) Owner(server string) string {
	if server == "" || r.rt == nil {
		return ""
	}
	if owner := r.Placement(server, r.rt.NodeLabel(server)); owner != unplaced {
		return owner
	}
	return ""
}

// Forward sends a call or request for a server to the member it runs on
// and returns the server's raw result. It answers here what the server
// asks while it runs (flows.go), and hands its progress to r.OnProgress
// when set.
func (r *Replica) Forward(ctx context.Context, owner string, req member.Request) (json.RawMessage, error) {
	f := forwarded{Server: req.Server, Tool: req.Tool, Method: req.Method, Params: req.Params, Meta: req.Meta,
		TimeoutMs: req.Timeout.Milliseconds(), Task: req.Task, Input: string(req.Input),
		ResetTimeoutOnProgress: req.ResetTimeoutOnProgress, MaxTotalTimeoutMs: req.MaxTotalTimeout.Milliseconds(), ProgressToken: req.ProgressToken,
		Legacy: req.Legacy}
	return r.forward(ctx, owner, f, req.OnProgress)
}

// Restart is mcpvisor.Host.Restart on the server's member.
func (r *Replica) Restart(ctx context.Context, owner, server string) error {
	_, err := r.forward(ctx, owner, forwarded{Op: opRestart, Server: server}, nil)
	return err
}

// forward sends a forwarded request to owner. A call or request to a
// server answers here what the server asks while it runs.
func (r *Replica) forward(ctx context.Context, owner string, f forwarded, onProgress func(actors.Progress)) (json.RawMessage, error) {
	var rev *member.Reverse
	if f.Op == "" {
		rev = r.reverse(ctx, &f, onProgress)
	}
	raw, err := r.n().Forward(ctx, owner, f.encode(), rev)
	if err != nil {
		return nil, fromRemote(err, f.Server, owner)
	}
	return raw, nil
}

// serve runs a request another member forwarded: only for a server placed
// here, so that a member with an older membership cannot make a server
// run on two members.
func (r *Replica) serve(ctx context.Context, body []byte) ([]byte, error) {
	f, err := decodeForwarded(body)
	if err != nil {
		return nil, err
	}
	if f.Op == opRestart {
		if err := r.notHere(f.Server); err != nil {
			return nil, err
		}
		if err := r.rt.Restart(ctx, f.Server); err != nil {
			return nil, remoteErr{kind: errorKind(err), err: err}
		}
		return []byte("{}"), nil
	}
	if f.Op == opDecide {
		return r.serveDecision(ctx, f.Params)
	}
	if f.Op == opVouch {
		return r.serveVouch(ctx, f.Params)
	}
	if f.Op != "" {
		return r.serveJournal(f.Op, f.Params)
	}
	if err := r.notHere(f.Server); err != nil {
		return nil, err
	}
	opts := &actors.CallOptions{Timeout: time.Duration(f.TimeoutMs) * time.Millisecond, Task: f.Task, Input: json.RawMessage(f.Input),
		ResetTimeoutOnProgress: f.ResetTimeoutOnProgress, MaxTotalTimeout: time.Duration(f.MaxTotalTimeoutMs) * time.Millisecond,
		Legacy: f.Legacy}
	run := member.Run{Server: f.Server, Tool: f.Tool, Method: f.Method, Params: f.Params, Meta: f.Meta, Options: opts}
	caller := member.CallerOf(ctx)
	var relay *actors.ProgressSub
	if caller != nil {
		r.askCaller(caller, &f, &run)
		if f.Method == "" && f.Progress && f.ProgressToken != "" {
			// A token that outlives the call, should the call start a task.
			if sub, err := r.rt.WatchProgress(f.Server); err == nil {
				opts.Progress, relay = sub, sub
			}
		}
	}
	raw, err := r.host.Run(ctx, run)
	if f.Method != "" {
		r.taskPolled(f.Server, f.Method, f.Params)
	}
	if relay != nil {
		r.relayTaskProgress(caller.Addr(), &f, relay, raw, err)
	}
	if err != nil {
		return nil, crossing(err)
	}
	return raw, nil
}

// crossing is err as it crosses to the calling member. A JSON-RPC error
// (the server's own, or a handler's) crosses whole, so that the caller
// reads its code (a task the server no longer knows, a resource not
// found) as if it had asked the server itself.
func crossing(err error) error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		b, _ := json.Marshal(perr)
		return remoteErr{kind: kindRPC, err: errors.New(string(b))}
	}
	return remoteErr{kind: errorKind(err), err: err}
}

// notHere is the error for a request to a server this member's view does
// not place on itself (nil when it does): a request sent on an older view
// is refused rather than run on a member that is stopping the server.
func (r *Replica) notHere(server string) error {
	if owner := r.Placement(server, r.rt.NodeLabel(server)); owner != "" {
		return remoteErr{kind: "unavailable", err: fmt.Errorf("%w: server %q is not placed on %s (on %s)", actors.ErrUnavailable, server, r.n().Self(), owner)}
	}
	return nil
}

// kindRPC marks a server's JSON-RPC error, its message the error as JSON.
const kindRPC = "rpc"

// remoteErr is an error that crosses to the calling member with its kind.
type remoteErr struct {
	kind string
	err  error
}

func (e remoteErr) Error() string     { return e.err.Error() }
func (e remoteErr) ErrorKind() string { return e.kind }

// kinds are the errors that keep their identity across members.
var kinds = []struct {
	kind string
	err  error
}{
	{"unavailable", actors.ErrUnavailable}, {"timeout", actors.ErrTimeout}, {"cancelled", actors.ErrCancelled},
	{"unknown_tool", actors.ErrUnknownTool}, {"unknown_server", actors.ErrUnknownServer}, {"withheld", actors.ErrToolWithheld},
	{"connection_lost", actors.ErrConnectionLost}, {"not_reading", actors.ErrNotReading}, {"needs_auth", oauth.ErrNeedsAuth},
	{"frame_too_large", protocol.ErrFrameTooLarge}, {"unknown_event", persistence.ErrUnknownEvent}, {"stale_review", actors.ErrStaleReview},
}

func errorKind(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return ""
}

// fromRemote is the error a forwarded request got, as this member's own:
// its sentinel restored; an unreachable member is actors.ErrUnavailable (the
// call may or may not have run there).
func fromRemote(err error, server, owner string) error {
	var re *member.RemoteError
	if errors.As(err, &re) {
		if re.Kind == kindRPC {
			var perr protocol.Error
			if json.Unmarshal([]byte(re.Message), &perr) == nil {
				return &perr
			}
		}
		for _, k := range kinds {
			if k.kind == re.Kind {
				return fmt.Errorf("%w (on cluster member %s): %s", k.err, owner, re.Message)
			}
		}
		return fmt.Errorf("server %q on cluster member %s: %s", server, owner, re.Message)
	}
	if errors.Is(err, member.ErrUnreachable) {
		return fmt.Errorf("%w: server %q: %w", actors.ErrUnavailable, server, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", actors.ErrCancelled, err)
	}
	return err
}
