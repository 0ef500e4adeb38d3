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

// TestSearchTokensOnCorpus counts, with a real BPE tokenizer (cl100k_base),
// what a model reads of the tools with and without search_tools, over the
// real-tool corpus (testdata/toolcorpus) and its queries:
//
//   - without search: every tool's definition in the tool list (name,
//     title, description, inputSchema as a tools/list entry);
//   - with search, per query: the session's host tools (activate_tools
//     and search_tools as listed), one search_tools answer as the model is
//     handed it (compact structuredContent, as the root's Result.Wire gives it), and the definitions of the tools it then
//     activates (the right ones among the hits, else the first hit).
//
// It logs the figures and fails only if search stops saving at least 90%.
func TestSearchTokensOnCorpus(t *testing.T) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	tokens := func(b []byte) int { return len(enc.Encode(string(b), nil, nil)) }

	servers, queries, err := toolcorpus.Load("../../testdata/toolcorpus")
	if err != nil {
		t.Fatal(err)
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

	all := 0
	for _, d := range defs {
		all += tokens(d)
	}
	// A host with no servers: activate_tools' description names none.
	rt := actors.New(actors.Options{LogDir: t.TempDir()})
	t.Cleanup(func() { rt.Close(context.Background()) })
	ts := &Toolset{rt: rt}
	var listed []actors.Tool
	for _, tool := range ts.All() {
		if tool.Name == "activate_tools" || tool.Name == "search_tools" {
			listed = append(listed, tool)
		}
	}
	hostDefs, _ := json.Marshal(listed)
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
		answer := tokens(wire(t, searchOutcome(q.Query, hits)))
		answers += answer
		with += tokens(hostDefs) + answer
		for _, id := range activate {
			with += tokens(defs[id])
		}
	}
	perQuery := with / len(queries)
	t.Logf("cl100k_base tokens over %d tools, %d queries: every definition %d; with search, per query %d "+
		"(host tools %d, a %d-hit answer %d on average, then the activated definitions): %.2f%% of all",
		len(defs), len(queries), all, perQuery, tokens(hostDefs), searchDefaultLimit, answers/len(queries),
		100*float64(perQuery)/float64(all))
	if perQuery*10 > all {
		t.Errorf("search costs %d tokens per query against %d for every definition: less than a 90%% saving", perQuery, all)
	}
}

// wire is a JSON result as a model is handed it: its structuredContent,
// compact.
func wire(t *testing.T, raw json.RawMessage) []byte {
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
