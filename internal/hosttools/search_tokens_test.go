package hosttools

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/toolcorpus"
	"github.com/mcpvisor/mcpvisor/internal/toolsearch"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// What a model reads of the tools with and without search_tools, counted
// with a real BPE tokenizer (cl100k_base) over the real-tool corpus
// (testdata/toolcorpus) and its queries:
//
//   - without search: every tool's definition in the tool list (name,
//     title, description, inputSchema as a tools/list entry);
//   - with search, per query: the session's host tools (activate_tools
//     and search_tools as listed), one search_tools answer as the model is
//     handed it (compact structuredContent, as the root's Result.Wire gives it), and the definitions of the tools it then
//     activates (the right ones among the hits, else the first hit).
//
// TestSearchTokensOnCorpus holds the cost with search to a budget;
// BenchmarkSearchTokensOnCorpus also counts every definition (2.4 million
// tokens: minutes under -race) and reports the saving.

// searchTokenBudget bounds what a model reads per query with search:
// 1,471 cl100k_base tokens measured on 7,822 tools and 75 queries (435 of
// them the host tools, 567 a 10-hit answer), against 2.4 million for every
// definition. Twice the measure leaves room for new queries and tools and
// still fails an answer or host-tool listing that grows out of proportion.
const searchTokenBudget = 3000

type searchTokens struct {
	tools, queries int
	perQuery       int // with search: host tools, the answer, the activated definitions
	hostTools      int
	answer         int // the mean search_tools answer
	all            int // every definition; 0 unless asked for
}

// countSearchTokens indexes the corpus as the host does and counts what a
// model reads per query with search, and, when every is set, what it reads
// of every definition without.
func countSearchTokens(tb testing.TB, every bool) (searchTokens, *toolsearch.Index, map[string]searchHit, []toolcorpus.Query) {
	tb.Helper()
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		tb.Fatal(err)
	}
	tokens := func(b []byte) int { return len(enc.Encode(string(b), nil, nil)) }

	servers, queries, err := toolcorpus.Load("../../testdata/toolcorpus")
	if err != nil {
		tb.Fatal(err)
	}
	x := toolsearch.New()
	defs := map[string][]byte{}
	meta := map[string]searchHit{}
	for _, s := range servers {
		var docs []toolsearch.Document
		for _, tool := range s.Tools {
			id := actors.ToolName(s.Server, tool.Name)
			docs = append(docs, toolsearch.Document{ID: id, Server: s.Server, Name: tool.Name, Title: tool.Title,
				Description: tool.Description, InputSchema: tool.InputSchema})
			defs[id], _ = json.Marshal(map[string]any{"name": id, "title": tool.Title,
				"description": tool.Description, "inputSchema": tool.InputSchema})
			meta[id] = searchHit{Name: id, Server: s.Server, Title: tool.Title, Description: oneLine(tool.Description, searchDescRunes)}
		}
		x.Replace(s.Server, docs)
	}

	got := searchTokens{tools: len(defs), queries: len(queries)}
	if every {
		for _, d := range defs {
			got.all += tokens(d)
		}
	}
	// A host with no servers: activate_tools' description names none.
	rt := actors.New(actors.Options{LogDir: tb.TempDir()})
	tb.Cleanup(func() { rt.Close(context.Background()) })
	ts := &Toolset{rt: rt}
	var listed []actors.Tool
	for _, tool := range ts.All() {
		if tool.Name == "activate_tools" || tool.Name == "search_tools" {
			listed = append(listed, tool)
		}
	}
	hostDefs, _ := json.Marshal(listed)
	got.hostTools = tokens(hostDefs)
	with, answers := 0, 0
	for _, q := range queries {
		var hits []searchHit
		var activate []string
		for _, hit := range x.Search(q.Query, searchDefaultLimit) {
			hits = append(hits, meta[hit.ID])
			if slices.Contains(q.Expect, hit.ID) && len(activate) < 5 {
				activate = append(activate, hit.ID)
			}
		}
		if len(activate) == 0 && len(hits) > 0 {
			activate = []string{hits[0].Name}
		}
		answer := tokens(wire(tb, searchOutcome(q.Query, hits)))
		answers += answer
		with += got.hostTools + answer
		for _, id := range activate {
			with += tokens(defs[id])
		}
	}
	got.perQuery = with / len(queries)
	got.answer = answers / len(queries)
	return got, x, meta, queries
}

// TestSearchTokensOnCorpus fails if what a model reads per query with
// search outgrows searchTokenBudget.
func TestSearchTokensOnCorpus(t *testing.T) {
	got, _, _, _ := countSearchTokens(t, false)
	t.Logf("cl100k_base tokens over %d tools, %d queries: with search, per query %d "+
		"(host tools %d, a %d-hit answer %d on average, then the activated definitions)",
		got.tools, got.queries, got.perQuery, got.hostTools, searchDefaultLimit, got.answer)
	if got.perQuery > searchTokenBudget {
		t.Errorf("search costs %d tokens per query: over the budget of %d", got.perQuery, searchTokenBudget)
	}
}

// BenchmarkSearchTokensOnCorpus times one search_tools answer over the
// corpus (the search and the answer's wire form, no tokenizer) and reports
// the token figures: all-tokens for every definition, per-query-tokens
// with search, saving-% the share search saves. It fails if search stops
// saving at least 90%.
//
//	go test -run '^$' -bench SearchTokensOnCorpus .
func BenchmarkSearchTokensOnCorpus(b *testing.B) {
	got, x, meta, queries := countSearchTokens(b, true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := queries[i%len(queries)].Query
		var hits []searchHit
		for _, hit := range x.Search(q, searchDefaultLimit) {
			hits = append(hits, meta[hit.ID])
		}
		_ = wire(b, searchOutcome(q, hits))
	}
	b.StopTimer()
	b.ReportMetric(float64(got.all), "all-tokens")
	b.ReportMetric(float64(got.perQuery), "per-query-tokens")
	b.ReportMetric(float64(got.answer), "answer-tokens")
	b.ReportMetric(100-100*float64(got.perQuery)/float64(got.all), "saving-%")
	if got.perQuery*10 > got.all {
		b.Errorf("search costs %d tokens per query against %d for every definition: less than a 90%% saving", got.perQuery, got.all)
	}
}

// wire is a JSON result as a model is handed it: its structuredContent,
// compact.
func wire(t testing.TB, raw json.RawMessage) []byte {
	t.Helper()
	var ctr protocol.CallToolResult
	if err := json.Unmarshal(raw, &ctr); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, ctr.StructuredContent); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
