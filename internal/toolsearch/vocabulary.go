package toolsearch

import (
	"bufio"
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

// A query is expanded with the words tools use for what it asks: a
// vocabulary of synonym groups ("pull request | pr | merge request"), each
// entry tokenized as documents are. When a query holds every token of an
// entry, the tokens of the group's other entries join it at
// expansionWeight, so a tool found only through them ranks below one that
// has the query's own words. Every vocab/*.txt file ships: vocab/it.txt,
// the words of software, services and operations (how people ask, how
// APIs say it); vocab/wordnet.txt, WordNet's synonyms of everyday verbs
// and nouns (gen_wordnet.go); and vocab/tasks-dev.txt and
// vocab/tasks-life.txt, about 2,300 groups that join the goals and
// symptoms people describe to the actions tools name ("build is red" to
// "pipeline failed"), at associationWeight.

//go:generate go run gen_wordnet.go

//go:embed vocab/*.txt
var vocabFiles embed.FS

// expansionWeight is what a term brought by the vocabulary counts against
// one the query has; associationWeight one brought by vocab/tasks-*.txt,
// whose groups join what people say to what they ask for ("umbrella" to
// "forecast"), looser than synonyms.
const (
	expansionWeight   = 0.35
	associationWeight = 0.2
)

// vocabulary is a set of synonym groups, indexed by token.
type vocabulary struct {
	groups  [][][]string // group → entry → tokens
	weights []float64    // group → what its terms count
	byToken map[string][]int32
	words   map[string]string // token → a word of the file it comes from
}

// word is a word of the vocabulary that gives token t, for saying why a
// tool was found; t itself if none.
func (v *vocabulary) word(t string) string {
	if w, ok := v.words[t]; ok {
		return w
	}
	return t
}

// defaultVocabulary is loaded at the first search (about 30 ms).
var defaultVocabulary = sync.OnceValue(loadVocabulary)

// loadVocabulary reads the shipped vocabularies.
func loadVocabulary() *vocabulary {
	v := &vocabulary{byToken: map[string][]int32{}, words: map[string]string{}}
	names, _ := fs.Glob(vocabFiles, "vocab/*.txt")
	for _, name := range names {
		f, err := vocabFiles.Open(name)
		if err != nil {
			continue // a file that is not there expands nothing
		}
		w := expansionWeight
		if strings.HasPrefix(path.Base(name), "tasks-") {
			w = associationWeight
		}
		v.read(f, w)
		f.Close()
	}
	return v
}

// read adds the groups of a vocabulary file, whose terms count weight: one
// group a line, its entries separated by "|"; '#' starts a comment line.
func (v *vocabulary) read(r interface{ Read([]byte) (int, error) }, weight float64) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var group [][]string
		for _, e := range strings.Split(line, "|") {
			for _, w := range runs(e) {
				for _, t := range Tokens(w) {
					if _, ok := v.words[t]; !ok {
						v.words[t] = strings.ToLower(w)
					}
				}
			}
			if toks := Tokens(e); len(toks) > 0 && !slices.ContainsFunc(group, func(g []string) bool { return slices.Equal(g, toks) }) {
				group = append(group, toks)
			}
		}
		if len(group) < 2 {
			continue
		}
		id := int32(len(v.groups))
		v.groups = append(v.groups, group)
		v.weights = append(v.weights, weight)
		for _, entry := range group {
			for _, t := range entry {
				if ids := v.byToken[t]; len(ids) == 0 || ids[len(ids)-1] != id {
					v.byToken[t] = append(ids, id)
				}
			}
		}
	}
}

// expand returns terms and, at expansionWeight, the terms of every entry
// of a group one of whose entries the query's words (not its literal
// values) hold whole; known reports whether a term is in the index
// (others are not worth scoring).
func (v *vocabulary) expand(terms []weightedTerm, known func(string) bool) []weightedTerm {
	out := slices.Clone(terms)
	// have: the terms that match an entry (the request's words and what
	// they brought); in: every term of out, literal values too.
	have := make(map[string]bool, len(terms))
	in := make(map[string]bool, len(terms))
	for _, t := range terms {
		in[t.term] = true
		if t.weight == 1 {
			have[t.term] = true
		}
	}
	seen := map[int32]bool{}
	for _, t := range terms {
		for _, id := range v.byToken[t.term] {
			if seen[id] {
				continue
			}
			seen[id] = true
			group := v.groups[id]
			matched := slices.ContainsFunc(group, func(entry []string) bool {
				return !slices.ContainsFunc(entry, func(tok string) bool { return !have[tok] })
			})
			if !matched {
				continue
			}
			for _, entry := range group {
				for _, tok := range entry {
					if !in[tok] && known(tok) {
						have[tok], in[tok] = true, true
						out = append(out, weightedTerm{term: tok, weight: v.weights[id], synonym: true})
					}
				}
			}
		}
	}
	return out
}
