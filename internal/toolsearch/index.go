package toolsearch

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Document is one tool as the index sees it.
type Document struct {
	// ID is what a Hit returns; unique within the index (the host uses the
	// namespaced tool name).
	ID          string
	Server      string
	Name        string // the tool's own name
	Title       string
	Description string
	// InputSchema is the tool's inputSchema as the server sent it; the
	// names and descriptions of its properties are indexed.
	InputSchema json.RawMessage
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float64
	// Matched are the query's words the tool has, as the query wrote
	// them; Synonyms the vocabulary's words for them it has instead (see
	// Vocabulary in the package doc). Together they say why it was found,
	// so that a model can ask again in other words.
	Matched, Synonyms []string
	// Semantic: an embedder found it near the query (Vectors, Fuse).
	Semantic bool
}

// Field weights: a query term in a tool's name says more about it than
// the same term in its description.
const (
	weightName        = 3
	weightTitle       = 2
	weightServer      = 1.5
	weightDescription = 1
	weightParamName   = 1
	weightParamDesc   = 0.5
)

// BM25's parameters, the usual ones.
const (
	k1 = 1.2
	b  = 0.75
)

// Index is a BM25 index of tools grouped by server. The zero value is not
// usable; call New. Its methods are safe for concurrent use.
type Index struct {
	mu     sync.RWMutex
	docs   []doc              // by slot; a free slot has id ""
	free   []int32            // free slots
	groups map[string][]int32 // group → its slots
	// groupTerms: a group's name's terms → the groups whose name has it
	// (named servers, below).
	groupTerms map[string][]string
	postings   map[string][]posting
	totalLen   float64 // sum of the live documents' weighted lengths
	live       int
}

type doc struct {
	id    string
	group string
	len   float64
	terms []string // distinct, for removal
}

type posting struct {
	slot int32
	tf   float32 // weighted term frequency
}

// New returns an empty index.
func New() *Index {
	return &Index{groups: map[string][]int32{}, groupTerms: map[string][]string{}, postings: map[string][]posting{}}
}

// Len is the number of documents indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// Replace makes docs the documents of group (a server), dropping those it
// had: the other groups' documents are not touched. Replace with no docs
// is Remove.
func (x *Index) Replace(group string, docs []Document) {
	// Tokenize outside the lock: readers wait only for the posting edits.
	type prepared struct {
		id    string
		len   float64
		tf    map[string]float32
		terms []string
	}
	prep := make([]prepared, 0, len(docs))
	for i := range docs {
		tf, n := weigh(&docs[i])
		terms := make([]string, 0, len(tf))
		for t := range tf {
			terms = append(terms, t)
		}
		prep = append(prep, prepared{id: docs[i].ID, len: n, tf: tf, terms: terms})
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(group)
	if len(prep) == 0 {
		return
	}
	slots := make([]int32, 0, len(prep))
	for _, p := range prep {
		var slot int32
		if n := len(x.free); n > 0 {
			slot, x.free = x.free[n-1], x.free[:n-1]
		} else {
			slot = int32(len(x.docs))
			x.docs = append(x.docs, doc{})
		}
		x.docs[slot] = doc{id: p.id, group: group, len: p.len, terms: p.terms}
		for t, f := range p.tf {
			x.postings[t] = append(x.postings[t], posting{slot: slot, tf: f})
		}
		x.totalLen += p.len
		x.live++
		slots = append(slots, slot)
	}
	x.groups[group] = slots
	for _, t := range groupNameTerms(group) {
		x.groupTerms[t] = append(x.groupTerms[t], group)
	}
}

// groupNameTerms are the terms of a group's name: "zereight-gitlab" →
// zereight, gitlab.
func groupNameTerms(group string) []string {
	terms := Tokens(group)
	slices.Sort(terms)
	return slices.Compact(terms)
}

// Remove drops group's documents.
func (x *Index) Remove(group string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(group)
}

func (x *Index) removeLocked(group string) {
	slots := x.groups[group]
	if len(slots) == 0 {
		return
	}
	gone := make([]bool, len(x.docs))
	terms := map[string]bool{}
	for _, s := range slots {
		gone[s] = true
		d := &x.docs[s]
		for _, t := range d.terms {
			terms[t] = true
		}
		x.totalLen -= d.len
		x.live--
		*d = doc{}
	}
	for t := range terms {
		ps := slices.DeleteFunc(x.postings[t], func(p posting) bool { return gone[p.slot] })
		if len(ps) == 0 {
			delete(x.postings, t)
		} else {
			x.postings[t] = ps
		}
	}
	x.free = append(x.free, slots...)
	delete(x.groups, group)
	for _, t := range groupNameTerms(group) {
		if gs := slices.DeleteFunc(x.groupTerms[t], func(g string) bool { return g == group }); len(gs) == 0 {
			delete(x.groupTerms, t)
		} else {
			x.groupTerms[t] = gs
		}
	}
	if x.live == 0 {
		x.totalLen = 0 // no drift from float subtraction
	}
}

// Search returns the limit best documents for query, best first, with
// their scores (only documents that match at least one query term; ties
// broken by ID). It never blocks on anything but a concurrent Replace.
func (x *Index) Search(query string, limit int) []Hit {
	if limit <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 {
		return nil
	}
	known := func(t string) bool { return len(x.postings[t]) > 0 }
	terms := queryTerms(query, known)
	if len(terms) == 0 {
		return nil
	}
	n := float64(x.live)
	avg := x.totalLen / n
	acc := accumulators.Get().(*accumulator)
	defer accumulators.Put(acc)
	acc.reset(len(x.docs))
	vocab := defaultVocabulary()
	wts := vocab.expand(terms, known)
	for i, wt := range wts {
		ps := x.postings[wt.term]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := wt.weight * math.Log(1+(n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := k1 * (1 - b + b*x.docs[p.slot].len/avg)
			acc.add(p.slot, idf*tf*(k1+1)/(tf+norm), i)
		}
	}
	named := x.namedGroups(terms)
	// Keep the limit best in a small sorted slice: limit is at most a few
	// dozen, the matches may be thousands.
	better := func(a, b Hit) bool { return a.Score > b.Score || a.Score == b.Score && a.ID < b.ID }
	hits := make([]Hit, 0, min(limit, len(acc.touched)))
	slots := make([]int32, 0, cap(hits))
	for _, s := range acc.touched {
		h := Hit{ID: x.docs[s].id, Score: acc.scores[s]}
		if named[x.docs[s].group] {
			h.Score *= namedBoost
		}
		if len(hits) == limit && !better(h, hits[limit-1]) {
			continue
		}
		i := sort.Search(len(hits), func(i int) bool { return better(h, hits[i]) })
		if len(hits) < limit {
			hits = append(hits, Hit{})
			slots = append(slots, 0)
		}
		copy(hits[i+1:], hits[i:len(hits)-1])
		copy(slots[i+1:], slots[i:len(slots)-1])
		hits[i], slots[i] = h, s
	}
	if len(hits) == 0 {
		return hits
	}
	spelled := spellings(query)
	for i := range hits {
		mask := acc.masks[slots[i]]
		for j, wt := range wts {
			if j >= 64 || mask&(1<<j) == 0 {
				continue
			}
			if !wt.synonym {
				hits[i].Matched = append(hits[i].Matched, spelled[wt.term])
			} else {
				hits[i].Synonyms = append(hits[i].Synonyms, vocab.word(wt.term))
			}
		}
	}
	return hits
}

// A query that names a server ("my Todoist inbox", "on MongoDB") wants
// one of its tools: their scores are multiplied by namedBoost. A query
// term names the servers whose name has it when it is mostly theirs: at
// least namedShare of the tools that have the term are those servers'
// (so "gitlab" names zereight-gitlab, but "api" does not name
// hostinger-api: most tools that say "api" are other servers').
var (
	namedBoost = 1.5
	namedShare = 0.5
)

// namedGroups returns the groups terms name.
func (x *Index) namedGroups(terms []weightedTerm) map[string]bool {
	var named map[string]bool
	for _, t := range terms {
		gs := x.groupTerms[t.term]
		if len(gs) == 0 || t.weight < 1 {
			continue
		}
		n := 0
		for _, g := range gs {
			n += len(x.groups[g])
		}
		if float64(n) < namedShare*float64(len(x.postings[t.term])) {
			continue
		}
		if named == nil {
			named = map[string]bool{}
		}
		for _, g := range gs {
			named[g] = true
		}
	}
	return named
}

// spellings maps each of the query's terms to a word of the query it
// comes from, lowercased.
func spellings(query string) map[string]string {
	m := map[string]string{}
	for _, w := range runs(dropContractions(query)) {
		for _, t := range Tokens(w) {
			if _, ok := m[t]; !ok {
				m[t] = strings.ToLower(w)
			}
		}
	}
	return m
}

// accumulator holds one search's scores by slot, reused across searches.
type accumulator struct {
	scores  []float64
	masks   []uint64 // which of the first 64 weighted terms matched
	touched []int32
}

var accumulators = sync.Pool{New: func() any { return new(accumulator) }}

func (a *accumulator) reset(n int) {
	for _, s := range a.touched {
		a.scores[s] = 0
		a.masks[s] = 0
	}
	a.touched = a.touched[:0]
	if len(a.scores) < n {
		a.scores = make([]float64, n)
		a.masks = make([]uint64, n)
	}
}

// add adds v to slot's score, for the weighted term term.
func (a *accumulator) add(slot int32, v float64, term int) {
	if a.scores[slot] == 0 {
		a.touched = append(a.touched, slot)
	}
	a.scores[slot] += v
	if term < 64 {
		a.masks[slot] |= 1 << term
	}
}

// weigh returns d's weighted term frequencies and weighted length.
func weigh(d *Document) (map[string]float32, float64) {
	tf := map[string]float32{}
	total := 0.0
	add := func(text string, w float64) {
		for _, t := range Tokens(text) {
			tf[t] += float32(w)
			total += w
		}
	}
	add(d.Name, weightName)
	add(d.Title, weightTitle)
	add(d.Server, weightServer)
	add(d.Description, weightDescription)
	for _, p := range params(d.InputSchema) {
		add(p.name, weightParamName)
		add(p.desc, weightParamDesc)
	}
	return tf, total
}

type param struct{ name, desc string }

// params lists the properties of a JSON Schema object: names and
// descriptions, in name order. A schema that is not such an object has
// none.
func params(schema json.RawMessage) []param {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make([]param, 0, len(s.Properties))
	for name, raw := range s.Properties {
		var p struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(raw, &p) // a property that is not an object has no description
		out = append(out, param{name, p.Description})
	}
	slices.SortFunc(out, func(a, b param) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return out
}
