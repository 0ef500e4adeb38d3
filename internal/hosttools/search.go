package hosttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/toolsearch"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// search_tools: BM25 over the tools of every enabled server
// (internal/toolsearch), so a model facing thousands of tools can find
// one and activate just it.

const (
	searchDefaultLimit = 10
	searchMaxLimit     = 50
	searchDescRunes    = 160 // a result's description, cut to one line
)

func searchDescription(*Toolset) string {
	return "Search the tools of every MCP server, active or not, by what they do: returns the best matches with their server and whether they are active. " +
		"Activate one with activate_tools({\"groups\": [\"<its full name>\"]}), or its server's name for all of that server's tools."
}

// index is the host's search index. Each search first brings it up to
// date: a server whose catalog version changed is re-indexed alone, one
// no longer listed is dropped.
type index struct {
	mu       sync.Mutex // syncs
	idx      *toolsearch.Index
	vectors  *toolsearch.Vectors // nil without an Embedder
	versions map[string]actors.CatalogVersion
}

// SearchEmbedTimeout bounds the embedding of a search's query.
const SearchEmbedTimeout = 2 * time.Second

// sync updates the index from the runtime's catalogs and returns it with
// the servers now listed.
func (ti *index) sync(rt *actors.Runtime) (*toolsearch.Index, map[string]actors.CatalogVersion) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	if ti.idx == nil {
		ti.idx = toolsearch.New()
		ti.versions = map[string]actors.CatalogVersion{}
	}
	now := rt.ListedCatalogs()
	for server := range ti.versions {
		if _, ok := now[server]; !ok {
			ti.idx.Remove(server)
			if ti.vectors != nil {
				ti.vectors.Remove(server)
			}
			delete(ti.versions, server)
		}
	}
	for server, v := range now {
		if ti.versions[server] == v {
			continue
		}
		tools := v.Tools()
		docs := make([]toolsearch.Document, 0, len(tools))
		for _, t := range tools {
			docs = append(docs, toolsearch.Document{ID: actors.ToolName(server, t.Tool), Server: server, Name: t.Tool,
				Title: toolTitle(t), Description: t.Description, InputSchema: t.InputSchema})
		}
		ti.idx.Replace(server, docs)
		if ti.vectors != nil {
			ti.vectors.Replace(server, docs)
		}
		ti.versions[server] = v
	}
	return ti.idx, now
}

func toolTitle(t actors.Tool) string {
	if t.Title == "" && t.Annotations != nil {
		return t.Annotations.Title
	}
	return t.Title
}

// searchHit is one tool search_tools found.
type searchHit struct {
	Name        string  `json:"name"` // as the scope would call it once active
	Server      string  `json:"server"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"` // one line, cut
	Active      bool    `json:"active"`
	Score       float64 `json:"score"`
	// Matched and Synonyms say why it was found: the query's words it
	// has, and the vocabulary's words for others (toolsearch.Hit).
	Matched  []string `json:"matched,omitempty"`
	Synonyms []string `json:"synonyms,omitempty"`
	// Semantic: the embedder found it near the query in meaning.
	Semantic bool `json:"semantic,omitempty"`
}

// fill embeds, on a goroutine of its own, the tools v has not embedded
// yet; one fill runs at a time, and Close ends it. A failure is counted
// and retried at the next search.
func (ts *Toolset) fill(v *toolsearch.Vectors) {
	if v.Pending() == 0 || !ts.filling.CompareAndSwap(false, true) {
		return
	}
	ts.fillMu.Lock()
	defer ts.fillMu.Unlock()
	if ts.fillCtx.Err() != nil {
		ts.filling.Store(false)
		return // closed
	}
	ts.fillWG.Add(1)
	go func() {
		defer ts.fillWG.Done()
		defer ts.filling.Store(false)
		if err := v.Fill(ts.fillCtx); err != nil && ts.fillCtx.Err() == nil {
			ts.fillErrors.Add(1)
			ts.logger().Warn("search_tools: embedding the tools failed; searches rank by words until it succeeds", "err", err)
		}
	}()
}

// searchTools ranks the tools scope may activate (every enabled server's,
// hidden instances aside) for query. It never waits on a server.
func (ts *Toolset) searchTools(scope persistence.Scope, query string, limit int) []searchHit {
	idx, listed := ts.search.sync(ts.rt)
	// Ask for more than limit: a hit may be a tool no longer exposed (a
	// bare name another server took), dropped below.
	hits := idx.Search(query, limit*2+10)
	if v := ts.search.vectors; v != nil {
		ts.fill(v)
		ctx, cancel := context.WithTimeout(ts.fillCtx, SearchEmbedTimeout)
		near, err := v.Nearest(ctx, query, limit*2+10)
		cancel()
		if err == nil {
			hits = toolsearch.Fuse(limit*2+10, ts.opts.EmbedderWeight, hits, near)
		}
	}
	servers := map[string]bool{}
	for _, hit := range hits {
		if server, _, ok := actors.SplitToolName(hit.ID); ok {
			servers[server] = true
		}
	}
	exposed := map[string]*actors.Tool{}
	tools := ts.rt.ToolsOf(nil, func(s string) bool { return servers[s] })
	for i := range tools {
		exposed[actors.ToolName(tools[i].Server, tools[i].Tool)] = &tools[i]
	}
	out := make([]searchHit, 0, limit)
	for _, hit := range hits {
		t := exposed[hit.ID]
		if t == nil {
			continue
		}
		if _, ok := listed[t.Server]; !ok {
			continue
		}
		active := scope.Session == "" || ts.host.Active(scope, t.Server, hit.ID)
		out = append(out, searchHit{Name: t.Name, Server: t.Server, Title: toolTitle(*t),
			Description: oneLine(t.Description, searchDescRunes), Active: active, Score: hit.Score,
			Matched: hit.Matched, Synonyms: hit.Synonyms, Semantic: hit.Semantic})
		if len(out) == limit {
			break
		}
	}
	return out
}

// oneLine is s on one line, cut to n runes with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

func prepareSearch(ts *Toolset, args json.RawMessage) (prepared, error) {
	var a struct {
		Query string `json:"query"`
		Limit *int   `json:"limit"`
	}
	if err := decodeArgs(args, &a, `"query", "limit"`); err != nil {
		return prepared{}, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return prepared{}, errors.New(`field "query": say what the tool should do`)
	}
	limit := searchDefaultLimit
	if a.Limit != nil {
		limit = *a.Limit
	}
	if limit < 1 || limit > searchMaxLimit {
		return prepared{}, fmt.Errorf(`field "limit": %d is not between 1 and %d`, limit, searchMaxLimit)
	}
	return prepared{
		summary: fmt.Sprintf("Search tools for %q", a.Query),
		run: func(_ context.Context, scope persistence.Scope) (json.RawMessage, error) {
			return searchOutcome(a.Query, ts.searchTools(scope, a.Query, limit)), nil
		},
	}, nil
}

func searchOutcome(query string, hits []searchHit) json.RawMessage {
	v := map[string]any{"query": query, "tools": hits}
	if len(hits) == 0 {
		return structured(fmt.Sprintf("No tool matches %q. Try other words, or the servers' names in the catalog.", query), v, false)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Tools for %q, best first:\n", query)
	for i, hit := range hits {
		fmt.Fprintf(&b, "%d. %s (server %s)", i+1, hit.Name, hit.Server)
		if hit.Title != "" {
			fmt.Fprintf(&b, " — %s", hit.Title)
		}
		if hit.Description != "" {
			fmt.Fprintf(&b, ": %s", hit.Description)
		}
		if hit.Active {
			b.WriteString(" [active]")
		}
		if why := matchedText(hit); why != "" {
			fmt.Fprintf(&b, " (%s)", why)
		}
		b.WriteByte('\n')
	}
	b.WriteString(`To call one that is not active, activate it first: activate_tools({"groups": ["<name>"]}).`)
	return structured(b.String(), v, false)
}

// matchedText says why hit was found: "matched: issue, repo; synonyms:
// ticket".
func matchedText(hit searchHit) string {
	var parts []string
	if len(hit.Matched) > 0 {
		parts = append(parts, "matched: "+strings.Join(hit.Matched, ", "))
	}
	if len(hit.Synonyms) > 0 {
		parts = append(parts, "synonyms: "+strings.Join(hit.Synonyms, ", "))
	}
	if hit.Semantic {
		parts = append(parts, "near in meaning")
	}
	return strings.Join(parts, "; ")
}

func (ts *Toolset) logger() *slog.Logger {
	if ts.opts.Logger != nil {
		return ts.opts.Logger
	}
	return slog.Default()
}
