package actors

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Era detection (2026-07-28, basic/versioning): every incarnation of a server
// is probed with server/discover before anything else. A DiscoverResult that
// lists a modern revision we speak, or a recognised modern error, means
// modern: no initialize, no session, the _meta below on every request. Any
// other error means legacy: the initialize handshake follows, as for every
// server before 2026-07-28. The fallback is never keyed to one error code.
//
// Silence decides nothing. A legacy server may ignore a request that
// precedes initialize, so after discoverTimeout without an answer
// initialize is sent too, server/discover still in flight, and the first
// answer decides: a result to initialize means legacy (a late answer to
// server/discover is dropped); an answer to server/discover decides as
// above (the answer to initialize is then dropped, or, when it refused
// initialize meanwhile, as a modern-only server does, its error is held
// until server/discover's answer says which era it belongs to). A modern
// server busy starting (npx fetching its package, a slow import) is thus
// modern however late its first answer, within the startup timeout.
//
// A spec may pin the revision (ServerSpec.ProtocolVersion): a legacy one
// skips the probe and is asked for in initialize; a modern one is probed
// for and nothing else, with no fallback to initialize, and no
// discoverTimeout either (the startup timeout bounds the wait). A server
// that does not speak the pinned revision fails.
//
// The verdict "legacy" is cached per HTTP endpoint (Runtime.legacyOrigins:
// scheme, host and path, since one origin may serve a legacy endpoint beside
// a modern one), so a restart of a legacy remote server goes straight to
// initialize; when that initialize fails the entry is dropped and the next
// start probes again. A stdio incarnation is a new process and is always
// probed.

// discoverTimeout is how long server/discover goes unanswered before
// initialize is sent beside it: a legacy server may ignore a request that
// precedes initialize.
const discoverTimeout = 3 * time.Second

// maxDiscoverProbes bounds the discover requests of one incarnation: a
// server answering UnsupportedProtocolVersion is asked again once, with a
// version from its list.
const maxDiscoverProbes = 2

// modernEra is what requests to a modern server carry. It never changes for
// a connection once set, and is shared by the actor and the fast path.
type modernEra struct {
	version string
	meta    json.RawMessage // the _meta object of every request
	http    bool            // the transport mirrors names and params into headers
}

// probe sends server/discover at version.
func (a *serverActor) probe(version string) {
	a.inc.probes++
	era := a.newEra(version)
	params := append(append([]byte(`{"_meta":`), era.meta...), '}')
	id, err := a.inc.conn.pending().add(&pendingReq{kind: reqDiscover})
	if err == nil {
		a.inc.probeID = id
		out := requestOut(id, protocol.MethodServerDiscover, protocol.AppendRequest(nil, id, protocol.MethodServerDiscover, params))
		out.modern = version
		err = a.inc.conn.send(out)
	}
	if err != nil {
		a.fail(fmt.Errorf("server/discover: %w", err))
		return
	}
	stopTimer(&a.inc.probeTmr)
	if a.spec.ProtocolVersion == "" {
		a.inc.probeTmr = a.after(min(discoverTimeout, a.spec.StartupTimeout), &discoverTimedOut{gen: a.inc.gen, id: id})
	}
}

// pinnedModern reports whether a pinned revision is a modern one.
func pinnedModern(version string) bool {
	return slices.Contains(protocol.ModernVersions, version)
}

func (a *serverActor) newEra(version string) *modernEra {
	return &modernEra{
		version: version,
		meta:    protocol.ModernMeta(version, modernCaps(a.rt.caps), a.rt.info, a.spec.LogLevel),
		http:    a.spec.Transport == TransportHTTP,
	}
}

// modernCaps are the capabilities every modern request declares: the
// host's, and the tasks extension (SEP-2663), since the task poller drives
// any task a server makes of a tools/call to its end (and a server refuses
// tasks/get to a client that does not declare it). The legacy handshake
// declares no extension: it is not defined before 2026-07-28.
func modernCaps(caps protocol.ClientCapabilities) protocol.ClientCapabilities {
	ext := make(map[string]json.RawMessage, len(caps.Extensions)+1)
	maps.Copy(ext, caps.Extensions)
	if _, ok := ext[protocol.TasksExtension]; !ok {
		ext[protocol.TasksExtension] = json.RawMessage(`{}`)
	}
	caps.Extensions = ext
	return caps
}

// discoverTimedOut fires when server/discover went unanswered.
type discoverTimedOut struct {
	gen uint64
	id  int64
}

func (a *serverActor) onDiscoverTimeout(m *discoverTimedOut) {
	if m.gen != a.inc.gen || a.state != StateInitializing || a.inc.conn == nil || a.inc.probeID != m.id || a.inc.initID != 0 {
		return
	}
	a.logLifecycle("no answer to server/discover within %s: initialize too, and the first answer decides the era", discoverTimeout)
	a.initialize()
}

// onInitializedFirst handles the answer to an initialize sent while
// server/discover is still in flight. It reports whether the handshake
// goes on with msg: a result means a legacy server, which ignored
// server/discover; an error is held for server/discover's answer to
// decide (a modern-only server refuses initialize).
func (a *serverActor) onInitializedFirst(msg *protocol.Message) bool {
	if msg.Error != nil {
		a.inc.initRefused = msg
		return false
	}
	a.inc.conn.pending().take(a.inc.probeID)
	stopTimer(&a.inc.probeTmr)
	a.inc.probeID = 0
	a.logLifecycle("initialize answered before server/discover: a legacy server")
	a.markLegacy()
	return true
}

// abandonInitialize drops an initialize sent beside server/discover once
// server/discover has found the server modern: its answer is not awaited.
func (a *serverActor) abandonInitialize() {
	if a.inc.initID != 0 {
		a.inc.conn.pending().take(a.inc.initID)
		a.inc.initID, a.inc.initRefused = 0, nil
	}
}

// onDiscovered handles the answer to server/discover.
func (a *serverActor) onDiscovered(msg *protocol.Message) {
	stopTimer(&a.inc.probeTmr)
	a.inc.probeID = 0
	if a.spec.ProtocolVersion != "" {
		a.onDiscoveredPinned(msg)
		return
	}
	if msg.Error != nil {
		if !protocol.IsModernError(msg.Error) {
			a.logLifecycle("server/discover refused (%v): a legacy server", msg.Error)
			a.goLegacy()
			return
		}
		if msg.Error.Code == protocol.CodeUnsupportedProtocolVersion {
			var data protocol.UnsupportedVersionData
			_ = json.Unmarshal(msg.Error.Data, &data)
			v, modern := protocol.ChooseVersion(data.Supported)
			switch {
			case modern && a.inc.probes < maxDiscoverProbes:
				a.logLifecycle("server/discover: the server asks for protocol %s", v)
				a.probe(v)
				return
			case v != "" && !modern:
				// A dual-era server that does not serve our modern
				// revision: its legacy one is spoken through initialize.
				a.logLifecycle("server/discover: the server speaks %v; using the legacy handshake", data.Supported)
				a.initialize()
				return
			}
			err := fmt.Errorf("server/discover: %w: the server speaks %v, we speak %v and %v",
				protocol.ErrUnsupportedVersion, data.Supported, protocol.ModernVersions, protocol.SupportedVersions)
			a.logLifecycle("%v", err)
			a.fail(permanent(err))
			return
		}
		a.logLifecycle("server/discover failed: %v", msg.Error)
		a.fail(fmt.Errorf("server/discover: %w", modernError(msg.Error)))
		return
	}
	var res protocol.DiscoverResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		a.logLifecycle("server/discover: malformed result (%v): a legacy server", err)
		a.goLegacy()
		return
	}
	v, modern := protocol.ChooseVersion(res.SupportedVersions)
	if !modern {
		// A server may answer discover and still negotiate only legacy.
		a.logLifecycle("server/discover lists %v: using the legacy handshake", res.SupportedVersions)
		a.initialize()
		return
	}
	a.goModern(v, &res)
}

// onDiscoveredPinned handles the answer to server/discover at a pinned
// modern revision: that revision, or a failure that says why not.
func (a *serverActor) onDiscoveredPinned(msg *protocol.Message) {
	pin := a.spec.ProtocolVersion
	noFallback := fmt.Sprintf("protocolVersion %s is pinned, so there is no fallback to initialize", pin)
	if msg.Error != nil {
		var err error
		switch {
		case msg.Error.Code == protocol.CodeUnsupportedProtocolVersion:
			var data protocol.UnsupportedVersionData
			_ = json.Unmarshal(msg.Error.Data, &data)
			err = permanent(fmt.Errorf("server/discover: %w: the server speaks %v, not the pinned protocolVersion %s",
				protocol.ErrUnsupportedVersion, data.Supported, pin))
		case protocol.IsModernError(msg.Error):
			err = fmt.Errorf("server/discover: %w", modernError(msg.Error))
		default:
			err = fmt.Errorf("server/discover: %w (%s)", msg.Error, noFallback)
			if msg.Error.Code == protocol.CodeMethodNotFound {
				err = permanent(err) // how a legacy server answers; other errors may pass
			}
		}
		a.logLifecycle("%v", err)
		a.fail(err)
		return
	}
	var res protocol.DiscoverResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		err = fmt.Errorf("server/discover: malformed result: %v (%s)", err, noFallback)
		a.logLifecycle("%v", err)
		a.fail(err)
		return
	}
	if !slices.Contains(res.SupportedVersions, pin) {
		err := fmt.Errorf("server/discover: %w: the server speaks %v, not the pinned protocolVersion %s",
			protocol.ErrUnsupportedVersion, res.SupportedVersions, pin)
		a.logLifecycle("%v", err)
		a.fail(permanent(err))
		return
	}
	a.goModern(pin, &res)
}

// goModern speaks version, from the server's DiscoverResult, and lists
// the tools.
func (a *serverActor) goModern(v string, res *protocol.DiscoverResult) {
	a.abandonInitialize()
	a.era = a.newEra(v)
	a.init = protocol.InitializeResult{
		ProtocolVersion: v,
		Capabilities:    res.Capabilities,
		ServerInfo:      res.Info(),
		Instructions:    res.Instructions,
		Meta:            res.Meta,
	}
	if c, ok := a.inc.conn.(interface{ setModern(*modernEra) }); ok {
		c.setModern(a.era)
	}
	a.entry.dual.Store(speaksLegacy(res.SupportedVersions))
	a.logLifecycle("server/discover: protocol %s (server supports %v)", v, res.SupportedVersions)
	if a.spec.LogLevel != "" && res.Capabilities.LoggingDeclared() {
		a.logLifecycle("log level %s is sent with every request", a.spec.LogLevel)
	}
	a.listTools()
}

// goLegacy records the legacy verdict and starts the initialize handshake.
func (a *serverActor) goLegacy() {
	a.markLegacy()
	a.initialize()
}

// markLegacy records the legacy verdict of an HTTP endpoint.
func (a *serverActor) markLegacy() {
	if o := a.origin(); o != "" {
		a.rt.legacyOrigins.Store(o, true)
	}
}

// origin is the cache key of an HTTP server's era: its endpoint without
// query (which may hold credentials) or fragment.
func (a *serverActor) origin() string {
	if a.spec.Transport == TransportStdio {
		return ""
	}
	u, err := url.Parse(a.spec.URL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// knownLegacy reports whether this server's endpoint answered as legacy
// before.
func (a *serverActor) knownLegacy() bool {
	if a.spec.Transport == TransportSSE {
		return true // the HTTP+SSE transport exists only in the legacy era
	}
	o := a.origin()
	if o == "" {
		return false
	}
	_, ok := a.rt.legacyOrigins.Load(o)
	return ok
}

// forgetLegacy drops a cached legacy verdict whose handshake failed: the
// next start probes again.
func (a *serverActor) forgetLegacy() {
	if o := a.origin(); o != "" {
		a.rt.legacyOrigins.Delete(o)
	}
}

// withEraMeta returns a request's params with the modern _meta joined in:
// the request's own _meta members (a progress token) are kept.
func withEraMeta(params json.RawMessage, era *modernEra) (json.RawMessage, error) {
	if era == nil {
		return params, nil
	}
	if len(params) == 0 {
		return append(append([]byte(`{"_meta":`), era.meta...), '}'), nil
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	meta, err := protocol.JoinMeta(era.meta, p.Meta)
	if err != nil {
		return nil, err
	}
	return protocol.MergeMeta(params, "_meta", meta)
}

// modernError wraps a 2026-07-28 error in its sentinel, keeping the
// server's message; other errors are returned as they are.
func modernError(e *protocol.Error) error {
	switch e.Code {
	case protocol.CodeHeaderMismatch:
		return &codedError{kind: ErrHeaderMismatch, err: e}
	case protocol.CodeMissingClientCapability:
		return &codedError{kind: ErrMissingClientCapability, err: e}
	case protocol.CodeUnsupportedProtocolVersion:
		return &codedError{kind: protocol.ErrUnsupportedVersion, err: e}
	}
	return e
}

// codedError is a server's JSON-RPC error under a sentinel: errors.Is
// matches the sentinel, errors.As still finds the *protocol.Error.
type codedError struct {
	kind error
	err  *protocol.Error
}

func (e *codedError) Error() string   { return e.kind.Error() + ": " + e.err.Error() }
func (e *codedError) Unwrap() []error { return []error{e.kind, e.err} }
