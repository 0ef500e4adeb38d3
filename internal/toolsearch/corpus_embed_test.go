package toolsearch

import (
	"context"
	"fmt"
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
	sets, byServer := fusionCorpus(b)
	x := New()
	var all [][]string
	for s, docs := range byServer {
		x.Replace(s, docs)
		for i := range docs {
			all = append(all, Tokens(embedText(&docs[i])))
		}
	}
	embedders := map[string]Embedder{"ri": newRIEmbedder(all)}
	if g, err := loadGloVe(); err == nil {
		embedders["glove"] = g
	} else {
		b.Logf("no GloVe vectors (run scripts/glove.sh): %v", err)
	}
	vectors := map[string]*Vectors{}
	for name, e := range embedders {
		v := NewVectors(e)
		for s, docs := range byServer {
			v.Replace(s, docs)
		}
		if err := v.Fill(context.Background()); err != nil {
			b.Fatal(err)
		}
		vectors[name] = v
	}
	for b.Loop() {
		for name, v := range vectors {
			reportFusion(b, x, v, name, []float64{1, 0.1}, sets)
		}
	}
}

// querySet is a named set of the corpus's queries.
type querySet struct {
	name    string
	queries []toolcorpus.Query
}

// fusionCorpus loads the corpus's three query sets (tuning, independent,
// heldout) and its tools as documents, by server.
func fusionCorpus(b *testing.B) ([]querySet, map[string][]Document) {
	servers, tuning, err := toolcorpus.Load(corpusDir)
	if err != nil {
		b.Fatal(err)
	}
	sets := []querySet{{"tuning", tuning}}
	for _, name := range []string{"independent", "heldout"} {
		qs, err := toolcorpus.LoadQueries(corpusDir + "/queries/" + name + ".json")
		if err != nil {
			b.Fatal(err)
		}
		sets = append(sets, querySet{name, qs})
	}
	byServer := map[string][]Document{}
	for _, s := range servers {
		for _, tool := range s.Tools {
			byServer[s.Server] = append(byServer[s.Server], Document{ID: "mcp__" + s.Server + "__" + tool.Name, Server: s.Server,
				Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: tool.InputSchema})
		}
	}
	return sets, byServer
}

// reportFusion reports, for each set, hit@5 of the words (x), of the
// meaning (v, the embedder model) and of the two fused at each weight:
// <set>-words-hit@5, <set>-<model>-hit@5, <set>-<model>-fused<w>-hit@5.
func reportFusion(b *testing.B, x *Index, v *Vectors, model string, weights []float64, sets []querySet) {
	ctx := context.Background()
	for _, set := range sets {
		var n, words, meaning float64
		fused := make([]float64, len(weights))
		for _, q := range set.queries {
			if len(q.Expect) == 0 {
				continue
			}
			n++
			lex := x.Search(q.Query, 50)
			near, err := v.Nearest(ctx, q.Query, 50)
			if err != nil {
				b.Fatal(err)
			}
			words += hitAt5(lex, q.Expect)
			meaning += hitAt5(near, q.Expect)
			for i, w := range weights {
				fused[i] += hitAt5(Fuse(10, w, lex, near), q.Expect)
			}
		}
		b.ReportMetric(words/n, set.name+"-words-hit@5")
		b.ReportMetric(meaning/n, set.name+"-"+model+"-hit@5")
		for i, w := range weights {
			b.ReportMetric(fused[i]/n, fmt.Sprintf("%s-%s-fused%g-hit@5", set.name, model, w))
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
