package hosttools

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/toolsearch"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// The tools' names. The root package exports the same as ToolActivate and
// its siblings.
const (
	Activate = "activate_tools"
	Search   = "search_tools"
	Register = "register_mcp"
	Delete   = "delete_mcp"
	Toggle   = "toggle_item"
	List     = "list_items"
)

// ConfigGroup is the group of the tools that manage servers.
const ConfigGroup = config.ReservedName

// DefaultSearchToolsOver is the catalog size past which search_tools is
// listed, when Options.SearchToolsOver is 0.
const DefaultSearchToolsOver = 40

// tool is one of the host's tools: its definition and what runs it.
type tool struct {
	name        string
	title       string
	config      bool // in ConfigGroup
	readOnly    bool
	destructive bool
	idempotent  bool
	openWorld   bool
	schema      string
	desc        func(ts *Toolset) string
	// prepare decodes and checks the arguments and describes the call for
	// approval; its run does the work once it is allowed.
	prepare func(ts *Toolset, args json.RawMessage) (prepared, error)
}

// mutates reports whether the tool changes the registry: those calls wait
// in the approval inbox.
func (t *tool) mutates() bool { return t.config && !t.readOnly }

// tools is set in init: its entries refer, through their descriptions,
// back to it.
var tools []*tool

func init() { tools = definitions() }

func lookup(name string) *tool {
	for _, t := range tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// Is reports whether name is one of the host's own tools.
func Is(name string) bool { return lookup(name) != nil }

// InConfigGroup reports whether name is one of ConfigGroup's tools, which
// are granted as that group only.
func InConfigGroup(name string) bool {
	t := lookup(name)
	return t != nil && t.config
}

func (t *tool) definition(ts *Toolset) actors.Tool {
	group := ""
	if t.config {
		group = ConfigGroup
	}
	return actors.Tool{
		Name: t.name, Server: group, Tool: t.name, Title: t.title, Description: t.desc(ts),
		InputSchema: []byte(t.schema), Destructive: t.destructive, Available: true,
		Annotations: &protocol.ToolAnnotations{
			Title: t.title, ReadOnlyHint: &t.readOnly, DestructiveHint: &t.destructive,
			IdempotentHint: &t.idempotent, OpenWorldHint: &t.openWorld,
		},
	}
}

// Options configure a Toolset. Runtime and Host are required.
type Options struct {
	Runtime *actors.Runtime
	Host    Host
	// Embedder, when set, adds semantic recall to search_tools: the tools
	// are embedded in the background as servers list them (cached by
	// their text), and a search fuses the words' ranking with the
	// meaning's (toolsearch.Fuse). A search whose query cannot be embedded
	// within SearchEmbedTimeout ranks by words alone.
	Embedder toolsearch.Embedder
	// EmbedderWeight is what the meaning's ranking counts against the
	// words' in the fusion (toolsearch.Fuse): 0 means 1, alike.
	EmbedderWeight float64
	// Logger says what goes wrong in the background (the embedding).
	// nil: slog.Default().
	Logger *slog.Logger
	// SearchToolsOver: search_tools is listed once the enabled servers
	// list more tools than this; 0 means DefaultSearchToolsOver, below
	// zero always.
	SearchToolsOver int
	// Approve, when set, decides every call before it runs.
	Approve Approver
	// Inbox, when set and Approve is not, decides the calls that change
	// the servers (register_mcp, delete_mcp, toggle_item).
	Inbox Approver
	// CallTimeout bounds a call's run (not its approval) when Call.Timeout
	// is 0; 0 means actors.DefaultCallTimeout.
	CallTimeout time.Duration
}

// Toolset serves the host's tools for one host. Its methods are safe for
// concurrent use.
type Toolset struct {
	opts   Options
	rt     *actors.Runtime
	host   Host
	defs   atomic.Pointer[listing]
	search index // search_tools' index, synced with the catalogs when searched

	// The background embedding of the tools (Options.Embedder): one fill
	// at a time, ended and joined by Close. fillMu orders a fill's start
	// before Close's stop, so none starts once Close waits.
	fillMu     sync.Mutex
	fillCtx    context.Context
	stopFill   context.CancelFunc
	filling    atomic.Bool
	fillWG     sync.WaitGroup
	fillErrors atomic.Int64
}

// New returns the host tools of one host.
func New(opts Options) *Toolset {
	if opts.Runtime == nil || opts.Host == nil {
		panic("hosttools: Options.Runtime and Options.Host are required")
	}
	ts := &Toolset{opts: opts, rt: opts.Runtime, host: opts.Host}
	ts.fillCtx, ts.stopFill = context.WithCancel(context.Background())
	if opts.Embedder != nil {
		ts.search.vectors = toolsearch.NewVectors(opts.Embedder)
	}
	return ts
}

// Close ends the embedding under way, if any, and waits for it. It is
// idempotent.
func (ts *Toolset) Close() {
	ts.fillMu.Lock()
	ts.stopFill()
	ts.fillMu.Unlock()
	ts.fillWG.Wait()
}

// listing holds the tools' definitions until the servers' status next
// changes (activate_tools' description names the enabled servers, and a
// server's status counts its tools), so a session's tool list, read at
// every model round, builds none.
type listing struct {
	valid    <-chan struct{} // closed once the definitions are stale
	tools    []actors.Tool   // all, in tools' order
	noSearch []actors.Tool   // all but search_tools
	search   bool            // SearchListed: the catalog is large
}

func (ts *Toolset) listing() *listing {
	if c := ts.defs.Load(); c != nil {
		select {
		case <-c.valid:
		default:
			return c
		}
	}
	c := &listing{valid: ts.rt.StatusChanged()} // taken before Status is read
	for _, t := range tools {
		def := t.definition(ts)
		c.tools = append(c.tools, def)
		if t.name != Search {
			c.noSearch = append(c.noSearch, def)
		}
	}
	c.search = ts.catalogIsLarge()
	ts.defs.Store(c)
	return c
}

// All lists every tool's definition: activate_tools, search_tools, then
// the config group's. The slice is shared: read it, never write it.
func (ts *Toolset) All() []actors.Tool { return ts.listing().tools }

// Listed lists the tools a scope sees: activate_tools, search_tools when
// the catalog is large (SearchListed), and the config group's when config
// (granted or always on). The slice is shared: read it, never write it.
func (ts *Toolset) Listed(config bool) []actors.Tool {
	c := ts.listing()
	switch {
	case config && c.search:
		return c.tools
	case config:
		return c.noSearch
	case c.search:
		return c.tools[:2] // activate_tools, search_tools
	}
	return c.tools[:1]
}

// SearchListed reports whether sessions are shown search_tools: the
// catalog is large (Options.SearchToolsOver).
func (ts *Toolset) SearchListed() bool { return ts.listing().search }

// catalogIsLarge reports whether the enabled servers list more tools than
// Options.SearchToolsOver.
func (ts *Toolset) catalogIsLarge() bool {
	over := ts.opts.SearchToolsOver
	switch {
	case over < 0:
		return true
	case over == 0:
		over = DefaultSearchToolsOver
	}
	n := 0
	for _, st := range ts.rt.Status() {
		switch st.State {
		case actors.StateFailed, actors.StateStopped, actors.StateDisabled:
			continue
		}
		if st.Enabled {
			n += st.Tools
		}
	}
	return n > over
}
