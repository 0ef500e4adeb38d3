package mcpvisor_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/modelapi"
)

// fakeEmbeddings serves POST /v1/embeddings as an OpenAI-compatible
// endpoint does, with a deterministic embedding: each dimension a concept,
// counting a text's words of it. It counts the texts embedded.
func fakeEmbeddings(t *testing.T, texts *atomic.Int64) string {
	concepts := [][]string{
		{"process", "program", "running", "pid"},
		{"image", "picture", "photo", "png"},
		{"crash", "die", "exit", "quit"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "fake" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		texts.Add(int64(len(req.Input)))
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Data []item `json:"data"`
		}{}
		for i, text := range req.Input {
			v := make([]float32, len(concepts)+1)
			v[len(concepts)] = 0.01 // no text is the zero vector
			for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
				for d, c := range concepts {
					if slices.Contains(c, word) {
						v[d]++
					}
				}
			}
			out.Data = append([]item{{i, v}}, out.Data...) // in any order, as the API may
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// With Options.Embedder, search_tools finds a tool by meaning when the
// query shares no word with it: the tools are embedded in the background
// (once per definition), and the words' and the meaning's rankings are
// fused. Without it, the same query does not find the tool first.
func TestSearchToolsWithEmbedder(t *testing.T) {
	var texts atomic.Int64
	url := fakeEmbeddings(t, &texts)
	const query = "which program is running"
	lexical := func() []string {
		h := openHost(t, mcpvisor.Options{DataDir: t.TempDir(), SearchToolsOver: -1}, mcptest("a"))
		waitReady(t, h, "a")
		var names []string
		for _, hit := range searchTools(t, h.Session("s", ""), query, 3).Tools {
			names = append(names, hit.Name)
		}
		return names
	}()
	if slices.Contains(lexical, "mcp__a__pid") {
		t.Fatalf("the words alone already find pid (%v): the query does not test the embedder", lexical)
	}

	emb := &modelapi.OpenAIEmbedder{URL: url, Model: "fake", APIKey: "k"}
	h := openHost(t, mcpvisor.Options{DataDir: t.TempDir(), SearchToolsOver: -1, Embedder: emb}, mcptest("a"))
	waitReady(t, h, "a")
	s := h.Session("s", "")
	searchTools(t, s, query, 3) // starts the embedding
	pid := func(r searchResult) int {
		return slices.IndexFunc(r.Tools, func(h searchHit) bool { return h.Name == "mcp__a__pid" })
	}
	var got searchResult
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got = searchTools(t, s, query, 3); pid(got) >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with the embedder: %+v (lexical alone: %v)", got.Tools, lexical)
		}
	}
	if hit := got.Tools[pid(got)]; !hit.Semantic {
		t.Errorf("the hit found by meaning is not marked semantic: %+v", hit)
	}
	embedded := texts.Load()
	searchTools(t, s, "another query", 3)
	// Only the query is embedded now: the tools' vectors are cached.
	if more := texts.Load() - embedded; more != 1 {
		t.Errorf("a second search embedded %d texts, want 1 (the query)", more)
	}
}
