package mcpvisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/broadcast"
	"github.com/mcpvisor/mcpvisor/internal/member"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// StateElsewhere is a server placed on another member of the cluster
// (cluster mode) whose status that member has not published yet; once it
// has, the server shows that member's state, and ServerStatus.Node names
// the member.
const StateElsewhere = actors.StateElsewhere

// Cluster makes a Host one member of a cluster of hosts that behave as
// one (Options.Cluster): each server runs on one member at a time, and a
// call on any member reaches it. Package cluster implements it
// (cluster.Options, with the memberships it and its subpackages offer); a
// program that does not import that package links none of the cluster
// machinery. docs/design.md ("Cluster") says what is and is not shared.
type Cluster interface {
	// NewMember makes this host's member of the cluster, which reaches the
	// host through hooks. The host calls it when it opens, and again each
	// time its member lost its place and joins as a new one.
	NewMember(hooks member.Hooks) (member.Node, error)
}

// hostCluster is a Host's membership.
type hostCluster struct {
	h    *Host
	cfg  Cluster
	node atomic.Pointer[member.Node] // replaced when the member joins again (onLost)
	lost atomic.Bool                 // between losing its place and joining again: nothing runs here

	// The goroutines the membership starts (go): Host.Close waits for them
	// (stop) before it stops the member, so that none joins one after.
	goMu    sync.Mutex
	stopped bool
	wg      sync.WaitGroup

	mu       sync.Mutex
	views    map[string]memberView               // the last state each other member published
	catalogs map[string]map[string]serverCatalog // each other member's servers' last catalogs
	registry map[string]registryEntry            // run-time registry changes (cluster_registry.go)
	grants   map[string]grantEntry               // each scope's grants after its last change
	pins     map[string]pinEntry                 // each tool's pin after its last change
	placedBy []string                            // the membership the servers were last placed by
	relays   map[string]context.CancelFunc       // tasks whose progress is relayed to their caller, by server and id
	clock    int64                               // the registry's hybrid clock: the last version made or seen
	wake     chan struct{}                       // a change to publish
	merges   chan sharedView                     // shared state from the others, merged in order (mergeLoop)

	shared atomic.Bool // the shared state changed since it was last published

	reviewsChanged broadcast.Signal // this member's tool reviews or another's changed
}

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
	Tools   []actors.Tool `json:"tools,omitempty"`
	Reviews []ToolReview  `json:"reviews,omitempty"`
}

// sharedView is the last change a member knows to each part of the
// shared state (cluster_registry.go).
type sharedView struct {
	Registry map[string]registryEntry `json:"registry,omitempty"`
	Grants   map[string]grantEntry    `json:"grants,omitempty"`
	Pins     map[string]pinEntry      `json:"pins,omitempty"`
}

type remoteServer struct {
	Status  ServerStatus `json:"status"`
	Catalog string       `json:"catalog,omitempty"` // the hash of the serverCatalog published with it
}

// startCluster makes h a member. The servers are registered after it, so
// each starts where the cluster places it; none starts before the first
// membership is known.
func (h *Host) startCluster(cfg Cluster) error {
	hc := &hostCluster{h: h, cfg: cfg, views: map[string]memberView{}, catalogs: map[string]map[string]serverCatalog{}, registry: map[string]registryEntry{}, grants: map[string]grantEntry{}, pins: map[string]pinEntry{}, relays: map[string]context.CancelFunc{}, merges: make(chan sharedView, 64), wake: make(chan struct{}, 1)}
	node, err := hc.newNode()
	if err != nil {
		return err
	}
	hc.node.Store(&node)
	hc.shared.Store(true)
	h.cluster = hc
	return nil
}

// newNode makes a member with a provider of its own.
func (hc *hostCluster) newNode() (member.Node, error) {
	return hc.cfg.NewMember(member.Hooks{Handler: hc.serve, OnPlacement: hc.place, OnState: hc.onState,
		OnLost: hc.onLost, OnTell: hc.onTell, Logger: hc.h.opts.Logger})
}

// join starts the membership, once the servers are registered.
func (hc *hostCluster) join() error {
	hc.h.rt.OnPinChange(hc.recordPin) // before any server runs: none does before the membership
	if err := hc.n().Join(); err != nil {
		return err
	}
	hc.spawn(hc.publishLoop)
	hc.spawn(hc.watchReviews)
	hc.spawn(hc.mergeLoop)
	hc.relayEvents()
	return nil
}

// spawn runs f in a goroutine Host.Close waits for; not once Close has
// begun to (f would outlive it), and then it reports false.
func (hc *hostCluster) spawn(f func()) bool {
	hc.goMu.Lock()
	defer hc.goMu.Unlock()
	if hc.stopped {
		return false
	}
	hc.wg.Add(1)
	go func() {
		defer hc.wg.Done()
		f()
	}()
	return true
}

// n is the member this host is now.
func (hc *hostCluster) n() member.Node {
	if p := hc.node.Load(); p != nil {
		return *p
	}
	return nil
}

// onLost: the provider no longer holds this member (its etcd lease lapsed:
// cut off from etcd for longer than the lease). The others have placed its
// servers on themselves by now, and protoactor blocks a member that left
// for good, so this one fences itself, stopping every server it runs, and
// joins again as a new member, trying every second until it can.
func (hc *hostCluster) onLost() {
	if !hc.lost.CompareAndSwap(false, true) {
		return
	}
	hc.spawn(func() {
		log := hc.h.opts.Logger
		log.Warn("cluster: this member lost its place in the cluster; stopping its servers and joining again")
		hc.place() // every server unplaced here: none runs twice
		hc.n().Stop()
		for hc.h.bg.Err() == nil {
			node, err := hc.newNode()
			if err == nil {
				// Close stops the member it finds here once this
				// goroutine has returned: stored before it joins, it
				// cannot be missed.
				hc.node.Store(&node)
				hc.lost.Store(false)
				hc.shared.Store(true) // a new member's: published afresh
				if err = node.Join(); err == nil {
					log.Info("cluster: joined again", "member", node.Self())
					return
				}
				hc.lost.Store(true)
			}
			log.Warn("cluster: joining again", "error", err)
			select {
			case <-time.After(time.Second):
			case <-hc.h.bg.Done():
			}
		}
	})
}

// unplaced is where a server is while no member can run it (before the
// first membership is known, or none has its node label): not here.
const unplaced = "(no member for it)"

// placement is the runtime's Placement: "" for a server placed here.
func (hc *hostCluster) placement(name, label string) string {
	n := hc.n()
	if n == nil || hc.lost.Load() {
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
func (hc *hostCluster) place() {
	ctx, cancel := context.WithTimeout(hc.h.bg, 30*time.Second)
	defer cancel()
	n := hc.n()
	members := n.Members()
	for _, st := range hc.h.rt.Status() {
		owner := hc.placement(st.Name, hc.h.rt.NodeLabel(st.Name))
		if owner == "" && st.Node != "" {
			if m := hc.notAgreed(st.Name, members); m != "" {
				owner = handingOver + m
			}
		}
		if err := hc.h.rt.Place(ctx, st.Name, owner); err != nil {
			hc.h.opts.Logger.Warn("cluster: placing a server", "server", st.Name, "error", err)
			continue
		}
		if owner != "" {
			hc.showView(st.Name, owner)
		}
	}
	if slices.Equal(members, n.Members()) {
		hc.mu.Lock()
		hc.placedBy = members
		hc.mu.Unlock()
		hc.wakePublish()
	}
}

// handingOver prefixes the member a server placed here waits for.
const handingOver = "(waiting for) "

// notAgreed is the first other member of members that has not yet
// published that it placed the servers by members, or that still runs
// server; "" if none.
func (hc *hostCluster) notAgreed(server string, members []string) string {
	self := hc.n().Self()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for _, m := range members {
		if m == self {
			continue
		}
		v, ok := hc.views[m]
		if !ok || !slices.Equal(v.Members, members) {
			return m
		}
		for _, rs := range v.Servers {
			if rs.Status.Name == server && rs.Status.State != StateElsewhere && rs.Status.State != StateStopped && rs.Status.State != StateDisabled {
				return m
			}
		}
	}
	return ""
}

// showView shows server as its member last published it.
func (hc *hostCluster) showView(server, owner string) {
	hc.mu.Lock()
	v, ok := hc.views[owner]
	hc.mu.Unlock()
	if !ok {
		return
	}
	for _, rs := range v.Servers {
		if rs.Status.Name == server {
			hc.h.rt.SetRemoteView(server, owner, rs.Status, hc.catalog(owner, server).Tools)
		}
	}
}

// catalog is the last catalog member published of server.
func (hc *hostCluster) catalog(member, server string) serverCatalog {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.catalogs[member][server]
}

// onState takes a member's published state under key (nil: it left).
func (hc *hostCluster) onState(member, key string, state []byte) {
	if state == nil {
		hc.mu.Lock()
		delete(hc.views, member)
		delete(hc.catalogs, member)
		hc.mu.Unlock()
		return
	}
	if server, ok := strings.CutPrefix(key, keyCatalog); ok {
		hc.onCatalog(member, server, state)
		return
	}
	if key == keyShared {
		var sv sharedView
		if json.Unmarshal(state, &sv) == nil {
			select {
			case hc.merges <- sv:
			case <-hc.h.bg.Done():
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

	hc.mu.Lock()
	old := hc.views[member]
	hc.views[member] = v
	hc.mu.Unlock()
	if !slices.EqualFunc(old.Servers, v.Servers, func(a, b remoteServer) bool { return a.Status.Name == b.Status.Name }) {
		hc.reviewsChanged.Notify() // the servers whose reviews it lists changed
	}
	shown := map[string]bool{}
	for _, rs := range v.Servers {
		shown[rs.Status.Name] = true
		if hc.placement(rs.Status.Name, hc.h.rt.NodeLabel(rs.Status.Name)) == member {
			// Its catalog, if it changed, comes under its own key, before
			// or after this.
			hc.h.rt.SetRemoteView(rs.Status.Name, member, rs.Status, hc.catalog(member, rs.Status.Name).Tools)
		}
	}
	// A server placed on member that it no longer shows (it stopped
	// running it: fenced, or not yet started) is not running there.
	handover := false
	for _, st := range hc.h.rt.Status() {
		if st.Node == member && !shown[st.Name] && st.State != StateElsewhere {
			hc.h.rt.SetRemoteView(st.Name, member, ServerStatus{State: StateElsewhere}, nil)
		}
		handover = handover || strings.HasPrefix(st.Node, handingOver)
	}
	if handover {
		hc.place() // a member may have stopped what moves here
	}
}

// onCatalog takes a server's catalog as member published it.
func (hc *hostCluster) onCatalog(member, server string, state []byte) {
	var c serverCatalog
	if json.Unmarshal(state, &c) != nil {
		return
	}
	hc.mu.Lock()
	if hc.catalogs[member] == nil {
		hc.catalogs[member] = map[string]serverCatalog{}
	}
	old := hc.catalogs[member][server]
	hc.catalogs[member][server] = c
	hc.mu.Unlock()
	if !reflect.DeepEqual(old.Reviews, c.Reviews) {
		hc.reviewsChanged.Notify()
	}
	if hc.placement(server, hc.h.rt.NodeLabel(server)) == member {
		hc.showView(server, member)
	}
}

// publishLoop publishes this member's servers at every change of their
// status, at most every 50 ms, and the catalog of each when it changed.
func (hc *hostCluster) publishLoop() {
	var last []byte
	var published map[string]string // server → the hash of the catalog last published
	var node member.Node
	for {
		if n := hc.n(); n != node {
			// A new member (joined again): it publishes everything.
			node, last, published = n, nil, map[string]string{}
		}
		changed := hc.h.rt.StatusChanged()
		hc.mu.Lock()
		v := memberView{Members: hc.placedBy}
		hc.mu.Unlock()
		reviews := map[string][]ToolReview{}
		for _, rv := range hc.h.rt.ToolReviews() {
			reviews[rv.Server] = append(reviews[rv.Server], rv)
		}
		for _, st := range hc.h.rt.Status() {
			if st.Node == "" && st.State != StateElsewhere {
				b, err := json.Marshal(serverCatalog{Tools: hc.h.rt.Catalog(st.Name), Reviews: reviews[st.Name]})
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
		if sv, ok := hc.sharedSnapshot(); ok {
			if b, err := json.Marshal(sv); err == nil {
				node.Publish(keyShared, b)
			}
		}
		select {
		case <-changed:
		case <-hc.wake:
		case <-hc.h.bg.Done():
			return
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-hc.h.bg.Done():
			return
		}
	}
}

// leave takes the member out of the cluster, once the host's background
// context is done: it waits for the goroutines the membership started
// (a member joining again after it lost its place among them), then stops
// the member, whichever it is by then. The others place its servers.
func (hc *hostCluster) leave() {
	hc.goMu.Lock()
	hc.stopped = true
	hc.goMu.Unlock()
	hc.wg.Wait()
	hc.n().Stop()
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
	// are attributed as if the call were local (askers.pick), and whether
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
}

// owner is the member a server runs on when not here ("": here, or not
// in a cluster).
func (h *Host) remoteOwner(server string) string {
	if h.cluster == nil || server == "" {
		return ""
	}
	if owner := h.cluster.placement(server, h.rt.NodeLabel(server)); owner != unplaced {
		return owner
	}
	return ""
}

// forward sends a call or request for server to the member it runs on and
// returns the server's raw result. A call or request to a server answers
// here what the server asks while it runs (cluster_flows.go), and hands
// its progress to onProgress when set.
func (hc *hostCluster) forward(ctx context.Context, owner string, f forwarded, onProgress func(Progress)) (json.RawMessage, error) {
	var rev *member.Reverse
	if f.Op == "" {
		rev = hc.reverse(ctx, &f, onProgress)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	raw, err := hc.n().Forward(ctx, owner, body, rev)
	if err != nil {
		return nil, fromRemote(err, f.Server, owner)
	}
	return raw, nil
}

// serve runs a request another member forwarded: only for a server placed
// here, so that a member with an older membership cannot make a server
// run on two members.
func (hc *hostCluster) serve(ctx context.Context, body []byte) ([]byte, error) {
	var f forwarded
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, err
	}
	if f.Op == opRestart {
		if err := hc.notHere(f.Server); err != nil {
			return nil, err
		}
		if err := hc.h.rt.Restart(ctx, f.Server); err != nil {
			return nil, remoteErr{kind: errorKind(err), err: err}
		}
		return []byte("{}"), nil
	}
	if f.Op == opDecide {
		var d decision
		if err := json.Unmarshal(f.Params, &d); err != nil {
			return nil, err
		}
		if err := hc.notHere(d.Server); err != nil {
			return nil, err
		}
		if err := hc.h.rt.DecideTool(ctx, d.Server, d.Tool, d.Hash, d.Allow, d.By); err != nil {
			return nil, remoteErr{kind: errorKind(err), err: err}
		}
		// The pin it made goes back with the answer: the member that
		// asked has it when the decision returns, not a gossip round later.
		hc.mu.Lock()
		e, ok := hc.pins[pinKey(d.Server, d.Tool)]
		hc.mu.Unlock()
		if !ok {
			return []byte("{}"), nil
		}
		return json.Marshal(map[string]pinEntry{pinKey(d.Server, d.Tool): e})
	}
	if f.Op != "" {
		return hc.serveJournal(f.Op, f.Params)
	}
	if err := hc.notHere(f.Server); err != nil {
		return nil, err
	}
	opts := &actors.CallOptions{Timeout: time.Duration(f.TimeoutMs) * time.Millisecond, Task: f.Task, Input: json.RawMessage(f.Input),
		ResetTimeoutOnProgress: f.ResetTimeoutOnProgress, MaxTotalTimeout: time.Duration(f.MaxTotalTimeoutMs) * time.Millisecond}
	caller := member.CallerOf(ctx)
	var relay *actors.ProgressSub
	if caller != nil {
		defer hc.h.askers.remove(hc.askCaller(ctx, caller, &f, opts))
		if f.Method == "" && f.Progress && f.ProgressToken != "" {
			// A token that outlives the call, should the call start a task.
			if sub, err := hc.h.rt.WatchProgress(f.Server); err == nil {
				opts.Progress, relay = sub, sub
			}
		}
	}
	var raw json.RawMessage
	var err error
	if f.Method == "" {
		raw, err = hc.h.rt.Call(ctx, f.Tool, f.Params, f.Meta, opts)
	} else {
		raw, err = hc.h.rt.Request(ctx, f.Server, f.Method, f.Params, opts)
		hc.taskPolled(f.Server, f.Method, f.Params)
	}
	if relay != nil {
		hc.relayTaskProgress(caller.Addr(), &f, relay, raw, err)
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
func (hc *hostCluster) notHere(server string) error {
	if owner := hc.placement(server, hc.h.rt.NodeLabel(server)); owner != "" {
		return remoteErr{kind: "unavailable", err: fmt.Errorf("%w: server %q is not placed on %s (on %s)", ErrUnavailable, server, hc.n().Self(), owner)}
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
	{"unavailable", ErrUnavailable}, {"timeout", ErrTimeout}, {"cancelled", ErrCancelled},
	{"unknown_tool", ErrUnknownTool}, {"unknown_server", ErrUnknownServer}, {"withheld", ErrToolWithheld},
	{"connection_lost", ErrConnectionLost}, {"not_reading", ErrNotReading}, {"needs_auth", ErrNeedsAuth},
	{"frame_too_large", ErrFrameTooLarge}, {"unknown_event", ErrUnknownEvent}, {"stale_review", ErrStaleReview},
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
// its sentinel restored; an unreachable member is ErrUnavailable (the
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
		return fmt.Errorf("%w: server %q: %w", ErrUnavailable, server, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrCancelled, err)
	}
	return err
}
