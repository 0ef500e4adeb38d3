package toolsearch

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/toolcorpus"
)

// The search measured on real tool definitions: testdata/toolcorpus holds
// the tools/list of real MCP servers (npm packages and the go-sdk's
// examples, collected by scripts/collect-tools) and queries.json natural-
// language queries written by reading those tools, each with the tools
// that count as a right answer.

const corpusDir = "../../testdata/toolcorpus"

// loadCorpus indexes every server of the corpus and returns the index,
// the namespaced names it holds, and the queries.
func loadCorpus(t testing.TB) (*Index, map[string]bool, []toolcorpus.Query) {
	t.Helper()
	servers, queries, err := toolcorpus.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	x, ids := indexCorpus(servers)
	return x, ids, queries
}

// indexCorpus indexes servers' tools and returns the index and the
// namespaced names it holds.
func indexCorpus(servers []toolcorpus.Server) (*Index, map[string]bool) {
	x := New()
	ids := map[string]bool{}
	for _, s := range servers {
		docs := make([]Document, 0, len(s.Tools))
		for _, tool := range s.Tools {
			id := "mcp__" + s.Server + "__" + tool.Name
			docs = append(docs, Document{ID: id, Server: s.Server, Name: tool.Name, Title: tool.Title,
				Description: tool.Description, InputSchema: tool.InputSchema})
			ids[id] = true
		}
		x.Replace(s.Server, docs)
	}
	return x, ids
}

// recall scores the index on the queries: whether a right tool is among
// the first five hits (hit@5), and what share of the right tools are
// there (recall@5, over at most five). misses names the queries with no
// right tool in their five hits.
func recall(x *Index, queries []toolcorpus.Query) (hit5, recall5 float64, misses []string) {
	var hits, recallSum float64
	for _, q := range queries {
		top := x.Search(q.Query, 5)
		found := 0
		for _, h := range top {
			if slices.Contains(q.Expect, h.ID) {
				found++
			}
		}
		if found > 0 {
			hits++
		} else {
			var got []string
			for _, h := range top {
				got = append(got, h.ID)
			}
			misses = append(misses, fmt.Sprintf("%q: want one of %v, got %v", q.Query, q.Expect, got))
		}
		recallSum += float64(found) / float64(min(len(q.Expect), 5))
	}
	n := float64(len(queries))
	return hits / n, recallSum / n, misses
}

// TestCorpusRecall: hit@5 and recall@5 over the corpus's queries. The
// floors are below what was measured (figures below): a change that makes
// the search worse fails. Latency is BenchmarkCorpusSearch's.
func TestCorpusRecall(t *testing.T) {
	x, ids, queries := loadCorpus(t)
	for _, q := range queries {
		for _, id := range q.Expect {
			if !ids[id] {
				t.Errorf("query %q expects %s, which the corpus does not have", q.Query, id)
			}
		}
	}
	hit5, recall5, misses := recall(x, queries)
	t.Logf("corpus: %d tools, %d queries; hit@5 %.2f, recall@5 %.2f", x.Len(), len(queries), hit5, recall5)
	// What a model reads with and without search: TestSearchTokensOnCorpus
	// in the root package, with the host's real answer and a tokenizer.
	for _, m := range misses {
		t.Logf("miss: %s", m)
	}
	if x.Len() < 5000 {
		t.Logf("the corpus has %d real tools, fewer than the 5,000 the issue asks for", x.Len())
	}
	// Measured 0.89 and 0.78 when set, on 3,669 tools; 0.84 and 0.74 on
	// 7,823 tools with the queries unchanged (the servers added since list
	// more near-answers, some of them right ones the queries do not name);
	// 0.85 and 0.70 with the tasks vocabularies, which gain on both
	// independent sets what they lose here.
	const hitFloor, recallFloor = 0.80, 0.67
	if hit5 < hitFloor || recall5 < recallFloor {
		t.Errorf("hit@5 %.2f and recall@5 %.2f: below the floors %.2f and %.2f", hit5, recall5, hitFloor, recallFloor)
	}
}

// BenchmarkCorpusSearch is one of the corpus's queries against the whole
// corpus, 10 hits: ns/op is the mean, p50-ns and p99-ns the percentiles of
// single searches, and hit@5 and recall@5 the scores TestCorpusRecall
// holds to its floors.
//
//	go test -run '^$' -bench CorpusSearch ./internal/toolsearch/
func BenchmarkCorpusSearch(b *testing.B) {
	servers, queries, err := toolcorpus.Load(corpusDir)
	if err != nil {
		b.Fatal(err)
	}
	// What the index holds on the heap, the corpus's JSON apart.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x, _ := indexCorpus(servers)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(servers) // else the corpus is freed in between
	hit5, recall5, _ := recall(x, queries)
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		x.Search(queries[i%len(queries)].Query, 10)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(hit5, "hit@5")
	b.ReportMetric(recall5, "recall@5")
	b.ReportMetric(float64(x.Len()), "tools")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "index-MiB")
}

// TestIndependentQueries scores the search on query sets written apart
// from the corpus, in the words users and agents use (direct, paraphrased,
// and hard: a symptom instead of the action, several steps, another
// domain's words), each written by someone who saw only the servers'
// names and labelled against the corpus afterwards by someone else:
//
//   - queries/independent.json, 150 tasks: issue 43's first measure. Its
//     misses were read while the search was improved (the literal values,
//     the brands, the named servers), so it is a development set now.
//   - queries/heldout.json, 90 tasks written after those changes: nothing
//     was tuned on it.
//
// Both are kept apart from queries.json (written by reading the tools,
// the one the search was tuned on). Per kind: hit@5 (a right tool among
// the first five), recall@5 and MRR@10, over the queries some tool
// answers. The floors are below what was measured (the corpus's README):
// a change that makes either worse fails. Issue 43's target is 0.75.
func TestIndependentQueries(t *testing.T) {
	x, ids, _ := loadCorpus(t)
	for _, set := range []struct {
		file     string
		hitFloor float64
	}{
		{"independent.json", 0.52}, // measured 0.55
		{"heldout.json", 0.56},     // measured 0.60
	} {
		t.Run(set.file, func(t *testing.T) {
			queries, err := toolcorpus.LoadQueries(corpusDir + "/queries/" + set.file)
			if err != nil {
				t.Fatal(err)
			}
			hit5 := scoreQueries(t, x, ids, queries)
			if hit5 < set.hitFloor {
				t.Errorf("hit@5 %.2f on %s: below the floor %.2f", hit5, set.file, set.hitFloor)
			}
		})
	}
}

// scoreQueries logs hit@5, recall@5 and MRR@10 per kind and returns hit@5
// over all the queries some tool answers.
func scoreQueries(t *testing.T, x *Index, ids map[string]bool, queries []toolcorpus.Query) float64 {
	type score struct{ n, hit5, recall5, mrr float64 }
	by := map[string]*score{}
	total := &score{}
	for _, q := range queries {
		for _, id := range q.Expect {
			if !ids[id] {
				t.Errorf("%s expects %s, which the corpus does not have", q.ID, id)
			}
		}
		if len(q.Expect) == 0 {
			continue // no tool in the corpus does it
		}
		hits := x.Search(q.Query, 10)
		var s score
		s.n = 1
		found := 0
		for i, h := range hits {
			if !slices.Contains(q.Expect, h.ID) {
				continue
			}
			if s.mrr == 0 {
				s.mrr = 1 / float64(i+1)
			}
			if i < 5 {
				found++
			}
		}
		if found > 0 {
			s.hit5 = 1
		}
		s.recall5 = float64(found) / float64(min(len(q.Expect), 5))
		if by[q.Kind] == nil {
			by[q.Kind] = &score{}
		}
		for _, into := range []*score{total, by[q.Kind]} {
			into.n += s.n
			into.hit5 += s.hit5
			into.recall5 += s.recall5
			into.mrr += s.mrr
		}
	}
	for _, kind := range []string{"direct", "paraphrase", "hard"} {
		if s := by[kind]; s != nil {
			t.Logf("%-10s %3.0f queries: hit@5 %.2f, recall@5 %.2f, MRR@10 %.2f", kind, s.n, s.hit5/s.n, s.recall5/s.n, s.mrr/s.n)
		}
	}
	t.Logf("%-10s %3.0f queries: hit@5 %.2f, recall@5 %.2f, MRR@10 %.2f", "all", total.n, total.hit5/total.n, total.recall5/total.n, total.mrr/total.n)
	return total.hit5 / total.n
}
