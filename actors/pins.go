package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/broadcast"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Tool pinning (toolpin) in the runtime.
//
// Every time a server lists its tools, each tool that passes the server's
// filters is assessed against its pin under the server's policy:
//
//   - off: nothing is hashed, checked or recorded.
//   - warn: a tool seen for the first time is pinned unattended; a
//     definition that differs from its pin is exposed and reported (status
//     and journal) until a person approves it.
//   - hold: a tool is exposed only while its definition is the one a person
//     approved; any other (a new server's tools, a new tool, a changed
//     definition) is withheld from every session until approved, and a call
//     to it fails with ErrToolWithheld.
//
// Under either policy a definition a person rejected stays withheld. Each
// definition the server lists for the first time (a new tool, a change) is
// journaled once (HistoryTool, with the definition), and so is each
// decision. Approving rebuilds the catalog from the server's last listing,
// so the tool appears at once (EventTools; the gateway sends list_changed).

// ErrToolWithheld: the tool's definition is not the approved one, or was
// rejected, and the server's policy withholds it.
var ErrToolWithheld = errors.New("tool withheld pending approval")

// ErrStaleReview: an approval or rejection named a definition (by hash)
// the server no longer lists for that tool.
var ErrStaleReview = errors.New("tool definition is not the one listed")

// ToolReview is one listed tool definition that no person has approved:
// under hold it is withheld until one does. Its JSON is the shape every
// surface shows.
type ToolReview struct {
	Server string `json:"server"`
	Tool   string `json:"tool"` // the server's own name
	Name   string `json:"name"` // mcp__<server>__<tool>
	Hash   string `json:"hash"` // what an approval names
	// State is new (no definition of the tool approved) or changed.
	State toolpin.State `json:"state"`
	// Held: withheld from every session (hold policy, or Rejected).
	Held bool `json:"held"`
	// Rejected: a person rejected this very definition; it is not offered
	// for approval again.
	Rejected bool `json:"rejected,omitempty"`
	// Approved is the hash of the definition approved before, for a
	// changed tool; Changes and Diff say what changed from it.
	Approved   string             `json:"approved,omitempty"`
	Changes    toolpin.Changes    `json:"changes,omitempty"`
	Diff       string             `json:"diff,omitempty"`
	Findings   []toolpin.Finding  `json:"findings,omitempty"`
	Definition toolpin.Definition `json:"definition"`
	Since      time.Time          `json:"since"` // when the server first listed this definition
}

// pinBook holds every pin in memory, journaled through Journal when there
// is one. All methods are safe for concurrent use.
type pinBook struct {
	policy  toolpin.Policy // the host-wide default
	journal *Journal
	log     *slog.Logger
	changed broadcast.Signal // a review appeared, changed or went
	// onChange, when set, learns of each pin changed here (not merged).
	onChange atomic.Pointer[func(persistence.PinRecord)]

	mu       sync.Mutex
	pins     map[pinID]persistence.PinRecord
	since    map[pinID]time.Time          // when Seen was first listed, this life
	findings map[string][]toolpin.Finding // by hash: Check is not cheap
}

type pinID struct{ server, tool string }

// maxFindingsCache bounds the findings cache; past it the cache starts
// over (a server that changes its definitions endlessly costs CPU, not
// memory).
const maxFindingsCache = 16384

func newPinBook(policy toolpin.Policy, j *Journal, log *slog.Logger) *pinBook {
	b := &pinBook{policy: policy, journal: j, log: log, pins: map[pinID]persistence.PinRecord{},
		since: map[pinID]time.Time{}, findings: map[string][]toolpin.Finding{}}
	if j != nil {
		recs, err := j.Store().Pins()
		if err != nil {
			log.Error("tool pins unreadable: every tool is unapproved until approved again", "err", err)
		}
		for _, r := range recs {
			b.pins[pinID{r.Server, r.Tool}] = r
		}
	}
	return b
}

func (b *pinBook) get(server, tool string) persistence.PinRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pins[pinID{server, tool}]
}

func (b *pinBook) check(hash string, def toolpin.Definition) []toolpin.Finding {
	b.mu.Lock()
	fs, ok := b.findings[hash]
	b.mu.Unlock()
	if ok {
		return fs
	}
	fs = toolpin.Check(def)
	b.mu.Lock()
	if len(b.findings) >= maxFindingsCache {
		clear(b.findings)
	}
	b.findings[hash] = fs
	b.mu.Unlock()
	return fs
}

// ForgetPins drops a deleted server's pins from memory; the journal's go
// with its DeleteServer. Unregister does it; a host that deletes a
// server's row before registering it calls it itself.
func (r *Runtime) ForgetPins(server string) { r.pins.forget(server) }

func (b *pinBook) forget(server string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.pins {
		if id.server == server {
			delete(b.pins, id)
			delete(b.since, id)
		}
	}
}

// pinReview is one listing's verdicts, built in the server's actor.
type pinReview struct {
	rt      *Runtime
	server  string
	policy  toolpin.Policy
	reviews []ToolReview
	held    map[string]string // the server's tool name → why it is withheld
	ops     []persistence.Op  // pins seen and history, journaled once the listing is in
	changed []persistence.PinRecord
}

// reviewPins starts the review of one listing of spec's server; nil when
// its policy is off.
func (r *Runtime) reviewPins(spec *ServerSpec) *pinReview {
	p := spec.ToolPolicy.Or(r.pins.policy).Effective()
	if p == toolpin.PolicyOff || spec.Hidden {
		return nil
	}
	return &pinReview{rt: r, server: spec.Name, policy: p}
}

// admit assesses one listed tool and reports whether it may be exposed.
func (pr *pinReview) admit(t *protocol.Tool) bool {
	b := pr.rt.pins
	def := toolpin.FromTool(*t)
	id := pinID{pr.server, t.Name}
	now := time.Now()

	hash := toolpin.Hash(def)
	b.mu.Lock()
	rec := b.pins[id]
	rec.Server, rec.Tool = pr.server, t.Name
	upgraded := false
	if rec.HashVersion < toolpin.HashVersion && (rec.Approved != "" || rec.Rejected != "" || rec.Seen != "") {
		rec, upgraded = upgradePin(rec, def, hash), true
	}
	pinned := rec.Approved
	if rec.Unattended && pr.policy == toolpin.PolicyHold {
		pinned = ""
	}
	b.mu.Unlock()

	findings := b.check(hash, def)
	a := toolpin.Assessment{Hash: hash, Findings: findings, State: toolpin.StateNew}
	switch {
	case pinned == hash:
		a.State = toolpin.StateUnchanged
	case pinned != "":
		a.State = toolpin.StateChanged
	}
	var changes toolpin.Changes // from the approved definition
	if a.State == toolpin.StateChanged {
		changes = diffFrom(rec.Definition, def)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if rec.Seen != hash {
		// First listed: journal it once, with what it changed.
		h := persistence.HistoryRecord{Time: now, Kind: persistence.HistoryTool, Server: pr.server,
			Tool: ToolName(pr.server, t.Name), Transition: string(a.State), Hash: hash, Definition: toolpin.Canonical(def)}
		if a.State == toolpin.StateUnchanged {
			h.Transition = "restored" // back to the approved definition
		}
		if a.State == toolpin.StateChanged {
			h.Detail = bound(changes.String())
		}
		if len(findings) > 0 {
			h.Detail = strings.TrimSpace(h.Detail + "\n" + bound(findingsText(findings)))
		}
		rec.Seen, rec.HashVersion = hash, toolpin.HashVersion
		b.since[id] = now
		if pr.policy == toolpin.PolicyWarn && rec.Approved == "" {
			rec.Approved, rec.Definition, rec.At, rec.Unattended = hash, toolpin.Canonical(def), now, true
			a.State = toolpin.StateUnchanged
		}
		b.pins[id] = rec
		pr.ops = append(pr.ops, persistence.PutPin(rec), persistence.AppendHistory(h))
		pr.changed = append(pr.changed, rec)
		if a.State == toolpin.StateChanged || len(findings) > 0 {
			pr.rt.logger.Warn("tool definition "+string(h.Transition), "server", pr.server, "tool", t.Name,
				"policy", string(pr.policy), "findings", len(findings))
		}
	} else if upgraded {
		b.pins[id] = rec
		pr.ops = append(pr.ops, persistence.PutPin(rec))
		pr.changed = append(pr.changed, rec)
	}
	if upgraded {
		pr.rt.logger.Info("tool pin carried over to the hash of icons and _meta", "server", pr.server, "tool", t.Name,
			"state", string(a.State), "hashVersion", toolpin.HashVersion)
	}
	since, ok := b.since[id]
	if !ok {
		since = now
		b.since[id] = now
	}

	rejected := rec.Rejected == hash
	held := rejected || pr.policy == toolpin.PolicyHold && a.State != toolpin.StateUnchanged
	unreviewed := a.State != toolpin.StateUnchanged || rec.Unattended && len(findings) > 0
	if held || unreviewed {
		rv := ToolReview{Server: pr.server, Tool: t.Name, Name: ToolName(pr.server, t.Name), Hash: hash,
			State: a.State, Held: held, Rejected: rejected, Findings: findings, Definition: def, Since: since}
		if rv.State == toolpin.StateUnchanged {
			rv.State = toolpin.StateNew // unattended under warn: never approved by a person
		}
		if a.State == toolpin.StateChanged {
			rv.Approved = pinned
			rv.Changes = changes
			rv.Diff = changes.String()
		}
		pr.reviews = append(pr.reviews, rv)
	}
	if !held {
		return true
	}
	if pr.held == nil {
		pr.held = map[string]string{}
	}
	switch {
	case rejected:
		pr.held[t.Name] = "its definition was rejected"
	case a.State == toolpin.StateChanged:
		pr.held[t.Name] = "its definition changed since it was approved" + changedParts(changes)
	default:
		pr.held[t.Name] = "its definition has not been approved"
	}
	return false
}

// upgradePin carries a pin recorded under an older toolpin.HashVersion
// (before icons and _meta were pinned) over to this one. Each of its
// hashes that is the legacy hash of the definition listed now becomes that
// definition's hash, so a tool approved or rejected before the upgrade
// keeps its standing when listed as it was then, whatever icons and _meta
// it lists: version 1 exposed those unpinned, and this first listing is
// what they are pinned to. A hash that matches nothing stays: the tool
// reads as changed, its icons and _meta shown as added. Done once per
// pin: the record then carries the current version, and its legacy hashes
// are never compared again, so a later change of icons or _meta alone
// cannot pass as the pin of version 1.
func upgradePin(rec persistence.PinRecord, def toolpin.Definition, hash string) persistence.PinRecord {
	legacy := toolpin.LegacyHash(def)
	if rec.Approved == legacy {
		rec.Approved, rec.Definition = hash, toolpin.Canonical(def)
	}
	if rec.Rejected == legacy {
		rec.Rejected = hash
	}
	if rec.Seen == legacy {
		rec.Seen = hash
	}
	rec.HashVersion = toolpin.HashVersion
	return rec
}

// changedParts names the parts of a definition a change touched, for the
// reason a call to a withheld tool gets: " (description, icons/0/src)".
func changedParts(cs toolpin.Changes) string {
	var parts []string
	for _, c := range cs {
		p := c.Field + c.Path
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	switch {
	case len(parts) == 0:
		return ""
	case len(parts) > 6:
		parts = append(parts[:6], fmt.Sprintf("%d more", len(parts)-6))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// finish journals what the listing recorded. Watchers of the reviews are
// told once the catalog holding them is published (publishCatalog).
func (pr *pinReview) finish() {
	for _, rec := range pr.changed {
		pr.rt.pins.changedHere(rec)
	}
	if len(pr.ops) > 0 && pr.rt.journal != nil {
		pr.rt.journal.WriteAsync(pr.ops, func(err error) {
			if err != nil {
				pr.rt.logger.Error("journal: tool pins not recorded", "server", pr.server, "err", err)
			}
		})
	}
}

// diffFrom is the diff from a pinned definition's canonical JSON to def;
// nil when nothing is pinned.
func diffFrom(canonical []byte, def toolpin.Definition) toolpin.Changes {
	if len(canonical) == 0 {
		return nil
	}
	var old toolpin.Definition
	if err := json.Unmarshal(canonical, &old); err != nil {
		return nil
	}
	return toolpin.Diff(old, def)
}

func findingsText(fs []toolpin.Finding) string {
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// maxReviewDetail bounds the text a history record keeps of a diff.
const maxReviewDetail = 16 << 10

func bound(s string) string {
	if len(s) <= maxReviewDetail {
		return s
	}
	return strings.ToValidUTF8(s[:maxReviewDetail], "") + "…"
}

// ToolReviews returns the tool definitions awaiting a person's review on
// every server, by server then tool: those withheld under hold, changed
// under warn, or rejected.
func (r *Runtime) ToolReviews() []ToolReview {
	var out []ToolReview
	for _, e := range r.snap.Load().byName {
		if cat := e.catalog.Load(); cat != nil {
			out = append(out, cat.reviews...)
		}
	}
	slices.SortFunc(out, func(a, b ToolReview) int {
		return strings.Compare(a.Server+"\x00"+a.Tool, b.Server+"\x00"+b.Tool)
	})
	return out
}

// ToolReviewsChanged returns a channel closed at the next change to
// ToolReviews.
func (r *Runtime) ToolReviewsChanged() <-chan struct{} { return r.pins.changed.C() }

// DecideTool approves (allow) or rejects the definition hash of a server's
// tool, as listed now, on behalf of by. The decision is durable before it
// returns (when the runtime has a journal) and takes effect at once: the
// server's catalog is rebuilt from its last listing. A hash the server
// does not list now for that tool is ErrStaleReview: the person saw
// something else.
func (r *Runtime) DecideTool(ctx context.Context, server, tool, hash string, allow bool, by string) error {
	e := r.snap.Load().byName[server]
	if e == nil {
		return errUnknownServer(server)
	}
	cat := e.catalog.Load()
	var rv *ToolReview
	if cat != nil {
		for i := range cat.reviews {
			if cat.reviews[i].Tool == tool {
				rv = &cat.reviews[i]
			}
		}
	}
	if rv == nil {
		return fmt.Errorf("%w: server %q lists no unreviewed tool %q", ErrStaleReview, server, tool)
	}
	if hash != rv.Hash {
		return fmt.Errorf("%w: server %q now lists tool %q as %s, not %s", ErrStaleReview, server, tool, rv.Hash, hash)
	}
	b := r.pins
	id := pinID{server, tool}
	now := time.Now()
	b.mu.Lock()
	rec := b.pins[id]
	b.mu.Unlock()
	rec.Server, rec.Tool = server, tool
	h := persistence.HistoryRecord{Time: now, Kind: persistence.HistoryTool, Server: server,
		Tool: ToolName(server, tool), Hash: hash, By: by, Transition: "rejected"}
	if allow {
		h.Transition = "approved"
		rec.Approved, rec.Definition, rec.At, rec.By, rec.Unattended = hash, toolpin.Canonical(rv.Definition), now, by, false
		rec.HashVersion = toolpin.HashVersion
		if rec.Rejected == hash {
			rec.Rejected = ""
		}
	} else {
		rec.Rejected = hash
	}
	if r.journal != nil {
		if err := r.journal.Write(ctx, persistence.PutPin(rec), persistence.AppendHistory(h)); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	b.mu.Lock()
	b.pins[id] = rec
	b.mu.Unlock()
	b.changedHere(rec)
	r.logger.Info("tool definition "+h.Transition, "server", server, "tool", tool, "hash", hash, "by", by)
	// Wait for the catalog: a caller that approves and then calls finds
	// the tool.
	done := make(chan struct{})
	r.send(e.pid, &repinMsg{done: done})
	select {
	case <-done:
	case <-ctx.Done():
	case <-e.stopped:
	case <-r.done:
	}
	return nil
}

// changedHere tells OnPinChange's function of a pin changed here.
func (b *pinBook) changedHere(rec persistence.PinRecord) {
	if fn := b.onChange.Load(); fn != nil {
		(*fn)(rec)
	}
}

// OnPinChange has fn learn of each pin this runtime changes (a definition
// first listed, a decision); not of those MergePin brings in. fn must not
// block.
func (r *Runtime) OnPinChange(fn func(persistence.PinRecord)) { r.pins.onChange.Store(&fn) }

// MergePin records a pin changed elsewhere (another member of a cluster)
// as this runtime's own: journaled, and the server's catalog rebuilt by
// it if the server runs here.
func (r *Runtime) MergePin(ctx context.Context, rec persistence.PinRecord) error {
	if r.journal != nil {
		if err := r.journal.Write(ctx, persistence.PutPin(rec)); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	b := r.pins
	b.mu.Lock()
	b.pins[pinID{rec.Server, rec.Tool}] = rec
	b.mu.Unlock()
	if e := r.snap.Load().byName[rec.Server]; e != nil {
		r.send(e.pid, &repinMsg{done: make(chan struct{}, 1)})
	}
	return nil
}

// repinMsg rebuilds a server's catalog from its last listing after a
// decision.
type repinMsg struct{ done chan struct{} }

func (a *serverActor) onRepin(m *repinMsg) {
	defer close(m.done)
	if a.listedAll == nil || a.owner != "" {
		return // never listed, or runs on another member of the cluster
	}
	a.publishCatalog(a.buildCatalog(a.listedAll))
}

// withheld returns the error for a call to a tool the catalog withholds.
func (c *catalog) withheld(server, tool string) error {
	if c == nil {
		return nil
	}
	why, ok := c.held[tool]
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: tool %q of server %q: %s; a person must approve it (mcpvisor tools approve %s %s)",
		ErrToolWithheld, tool, server, why, server, tool)
}
