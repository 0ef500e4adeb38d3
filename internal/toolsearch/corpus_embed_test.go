package toolsearch

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/toolcorpus"
)

// riEmbedder is a real, if weak, embeddings model that runs here: random
// indexing over the corpus. Each term gets a fixed random sparse vector;
// a term's meaning is the sum of those of the terms it shares a tool with,
// weighted by their rarity; a text is the rarity-weighted sum of its
// terms' meanings. Terms that appear in the same tools come out near each
// other, so a query can meet a tool it shares no word with.
type riEmbedder struct {
	meaning map[string][]float32
	idf     map[string]float64
}

const riDim = 512

func newRIEmbedder(docs [][]string) *riEmbedder {
	df := map[string]int{}
	for _, d := range docs {
		for _, t := range uniq(d) {
			df[t]++
		}
	}
	n := float64(len(docs))
	e := &riEmbedder{meaning: map[string][]float32{}, idf: map[string]float64{}}
	index := map[string][]int32{} // term → 8 signed positions
	rng := rand.New(rand.NewPCG(1, 2))
	terms := make([]string, 0, len(df))
	for t := range df {
		terms = append(terms, t)
	}
	slices.Sort(terms) // a fixed order, so the vectors are the same every run
	for _, t := range terms {
		e.idf[t] = math.Log(1 + n/float64(df[t]))
		pos := make([]int32, 8)
		for i := range pos {
			p := int32(rng.IntN(riDim)) + 1
			if rng.IntN(2) == 0 {
				p = -p
			}
			pos[i] = p
		}
		index[t] = pos
	}
	for _, d := range docs {
		ts := uniq(d)
		for _, t := range ts {
			m := e.meaning[t]
			if m == nil {
				m = make([]float32, riDim)
				e.meaning[t] = m
			}
			for _, u := range ts {
				w := float32(e.idf[u])
				for _, p := range index[u] {
					if p > 0 {
						m[p-1] += w
					} else {
						m[-p-1] -= w
					}
				}
			}
		}
	}
	return e
}

func uniq(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return slices.Compact(out)
}

func (e *riEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, riDim)
		for _, t := range Tokens(text) {
			m := e.meaning[t]
			if m == nil {
				continue
			}
			w := float32(e.idf[t])
			for j := range v {
				v[j] += w * m[j] / float32(riDim)
			}
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkCorpusFusion measures what meaning adds to words, with two
// models that run here: the random-indexing embedder above, and GloVe's
// word vectors (gloveEmbedder, when scripts/glove.sh has installed them):
// hit@5 of the words alone, of the meaning alone, and of the two fused
// (Fuse) with the meaning weighed alike and at 0.1, on each query set.
//
//	make bench-search
//	go test -run '^$' -bench CorpusFusion -benchtime 1x ./internal/toolsearch/
func BenchmarkCorpusFusion(b *testing.B) {
	for b.Loop() {
		corpusFusion(b)
	}
}

func corpusFusion(t *testing.B) {
	servers, tuning, err := toolcorpus.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	independent, err := toolcorpus.LoadQueries(corpusDir + "/queries/independent.json")
	if err != nil {
		t.Fatal(err)
	}
	heldout, err := toolcorpus.LoadQueries(corpusDir + "/queries/heldout.json")
	if err != nil {
		t.Fatal(err)
	}
	x := New()
	var all [][]string
	byServer := map[string][]Document{}
	for _, s := range servers {
		for _, tool := range s.Tools {
			d := Document{ID: "mcp__" + s.Server + "__" + tool.Name, Server: s.Server, Name: tool.Name, Title: tool.Title,
				Description: tool.Description, InputSchema: tool.InputSchema}
			byServer[s.Server] = append(byServer[s.Server], d)
			all = append(all, Tokens(embedText(&d)))
		}
	}
	for s, docs := range byServer {
		x.Replace(s, docs)
	}
	embedders := []struct {
		name string
		e    Embedder
	}{{"ri", newRIEmbedder(all)}}
	if g, err := loadGloVe(); err == nil {
		embedders = append(embedders, struct {
			name string
			e    Embedder
		}{"glove", g})
	} else {
		t.Logf("no GloVe vectors (run scripts/glove.sh): %v", err)
	}
	ctx := context.Background()
	for _, emb := range embedders {
		v := NewVectors(emb.e)
		for s, docs := range byServer {
			v.Replace(s, docs)
		}
		if err := v.Fill(ctx); err != nil {
			t.Fatal(err)
		}
		for _, set := range []struct {
			name    string
			queries []toolcorpus.Query
		}{{"tuning", tuning}, {"independent", independent}, {"heldout", heldout}} {
			var n, words, meaning, fused, fusedLow float64
			for _, q := range set.queries {
				if len(q.Expect) == 0 {
					continue
				}
				n++
				lex := x.Search(q.Query, 50)
				near, err := v.Nearest(ctx, q.Query, 50)
				if err != nil {
					t.Fatal(err)
				}
				words += hitAt5(lex, q.Expect)
				meaning += hitAt5(near, q.Expect)
				fused += hitAt5(Fuse(10, 1, lex, near), q.Expect)
				fusedLow += hitAt5(Fuse(10, 0.1, lex, near), q.Expect)
			}
			t.ReportMetric(words/n, set.name+"-words-hit@5")
			t.ReportMetric(meaning/n, set.name+"-"+emb.name+"-hit@5")
			t.ReportMetric(fused/n, set.name+"-"+emb.name+"-fused-hit@5")
			t.ReportMetric(fusedLow/n, set.name+"-"+emb.name+"-fused0.1-hit@5")
		}
	}
}

func hitAt5(hits []Hit, expect []string) float64 {
	for i, h := range hits {
		if i == 5 {
			break
		}
		if slices.Contains(expect, h.ID) {
			return 1
		}
	}
	return 0
}
