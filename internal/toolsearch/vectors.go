package toolsearch

import (
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Embedder turns texts into vectors whose cosine similarity says how alike
// their meanings are (an embeddings model). Embed returns one vector per
// text, in order; it may block on the network, and must honour ctx.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Vectors is semantic recall beside an Index: one embedding per document,
// cached by the hash of the text embedded, so a server that lists again
// the same tools costs no new embeddings. Documents are embedded by Fill,
// which the owner runs off the search path; a document not embedded yet is
// only not found semantically. Safe for concurrent use.
type Vectors struct {
	emb Embedder

	mu     sync.RWMutex
	cache  map[[32]byte][]float32 // text hash → unit vector
	docs   map[string][32]byte    // document ID → its text's hash
	texts  map[[32]byte]string    // hashes not embedded yet → text
	groups map[string][]string    // group → its document IDs
}

// NewVectors returns an empty Vectors that embeds with e.
func NewVectors(e Embedder) *Vectors {
	return &Vectors{emb: e, cache: map[[32]byte][]float32{}, docs: map[string][32]byte{},
		texts: map[[32]byte]string{}, groups: map[string][]string{}}
}

// embedText is what a document is embedded as: its name, title,
// description and parameter names, as a model reads a tool.
func embedText(d *Document) string {
	parts := []string{strings.Join(words(d.Name), " ")}
	if d.Title != "" {
		parts = append(parts, d.Title)
	}
	if d.Description != "" {
		parts = append(parts, d.Description)
	}
	var ps []string
	for _, p := range params(d.InputSchema) {
		ps = append(ps, p.name)
	}
	if len(ps) > 0 {
		parts = append(parts, "Parameters: "+strings.Join(ps, ", "))
	}
	return strings.Join(parts, ". ")
}

// Replace makes docs the documents of group, as Index.Replace does.
func (v *Vectors) Replace(group string, docs []Document) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removeLocked(group)
	ids := make([]string, 0, len(docs))
	for i := range docs {
		text := embedText(&docs[i])
		h := sha256.Sum256([]byte(text))
		v.docs[docs[i].ID] = h
		if _, ok := v.cache[h]; !ok {
			v.texts[h] = text
		}
		ids = append(ids, docs[i].ID)
	}
	v.groups[group] = ids
}

// Remove drops group's documents (their vectors stay cached).
func (v *Vectors) Remove(group string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.removeLocked(group)
}

func (v *Vectors) removeLocked(group string) {
	for _, id := range v.groups[group] {
		delete(v.docs, id)
	}
	delete(v.groups, group)
}

// Pending is how many texts wait to be embedded.
func (v *Vectors) Pending() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.texts)
}

// fillBatch is how many texts one Embed call takes.
const fillBatch = 64

// Fill embeds every text not embedded yet, fillBatch at a time, and
// returns when none is left or on the first error. It blocks on the
// embedder: run it on a goroutine of its own, never on a call's path.
func (v *Vectors) Fill(ctx context.Context) error {
	for {
		v.mu.RLock()
		batch := make([][32]byte, 0, fillBatch)
		texts := make([]string, 0, fillBatch)
		for h, t := range v.texts {
			batch, texts = append(batch, h), append(texts, t)
			if len(batch) == fillBatch {
				break
			}
		}
		v.mu.RUnlock()
		if len(batch) == 0 {
			return nil
		}
		vecs, err := v.emb.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(vecs) != len(texts) {
			return errors.New("toolsearch: the embedder returned a vector count other than the texts'")
		}
		v.mu.Lock()
		for i, h := range batch {
			v.cache[h] = unit(vecs[i])
			delete(v.texts, h)
		}
		v.mu.Unlock()
	}
}

// nearFraction: Nearest keeps the documents at least this near to the
// query as a fraction of the nearest one's similarity. Every document has
// some similarity to any query; those far below the best are noise that
// reciprocal rank fusion would count as votes.
const nearFraction = 0.5

// Nearest embeds query and returns the limit documents nearest to it by
// cosine similarity, best first (Score is the similarity), leaving out
// those less than nearFraction as near as the first. It blocks on the
// embedder for the query.
func (v *Vectors) Nearest(ctx context.Context, query string, limit int) ([]Hit, error) {
	if limit <= 0 || strings.TrimSpace(query) == "" {
		return nil, nil
	}
	vecs, err := v.emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, errors.New("toolsearch: the embedder returned no vector for the query")
	}
	q := unit(vecs[0])
	v.mu.RLock()
	defer v.mu.RUnlock()
	hits := make([]Hit, 0, limit)
	better := func(a, b Hit) bool { return a.Score > b.Score || a.Score == b.Score && a.ID < b.ID }
	for id, h := range v.docs {
		d, ok := v.cache[h]
		if !ok || len(d) != len(q) {
			continue
		}
		hit := Hit{ID: id, Score: dot(q, d), Semantic: true}
		if len(hits) == limit && !better(hit, hits[limit-1]) {
			continue
		}
		i := sort.Search(len(hits), func(i int) bool { return better(hit, hits[i]) })
		if len(hits) < limit {
			hits = append(hits, Hit{})
		}
		copy(hits[i+1:], hits[i:len(hits)-1])
		hits[i] = hit
	}
	if len(hits) > 0 && hits[0].Score > 0 {
		cut := hits[0].Score * nearFraction
		hits = slices.DeleteFunc(hits, func(h Hit) bool { return h.Score < cut })
	}
	return hits, nil
}

// rrfK is reciprocal rank fusion's constant: a list's first hit counts
// 1/61, its tenth 1/70.
const rrfK = 60

// Fuse merges the words' ranking and the meaning's by weighted reciprocal
// rank fusion: a document scores 1/(rrfK+rank) for its rank by words and
// meaningWeight/(rrfK+rank) for its rank by meaning, so one ranked well by
// both comes first. meaningWeight 1 (or 0) weighs them alike; less lets a
// weak model only reorder what the words nearly tie on (on the tool
// corpus the Universal Sentence Encoder fuses best at 0.25, GloVe's word
// vectors at 0.1: BenchmarkCorpusFusion, BenchmarkCorpusFusionUSE). It
// keeps the words' Matched and Synonyms, and Semantic from the meaning.
func Fuse(limit int, meaningWeight float64, words, meaning []Hit) []Hit {
	if meaningWeight <= 0 {
		meaningWeight = 1
	}
	byID := map[string]*Hit{}
	var order []string
	for i, list := range [][]Hit{words, meaning} {
		weight := 1.0
		if i == 1 {
			weight = meaningWeight
		}
		for rank, h := range list {
			f, ok := byID[h.ID]
			if !ok {
				c := h
				c.Score = 0
				f = &c
				byID[h.ID] = f
				order = append(order, h.ID)
			}
			f.Score += weight / float64(rrfK+rank+1)
			f.Semantic = f.Semantic || h.Semantic
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	slices.SortStableFunc(out, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
