package toolsearch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// conceptEmbedder is a deterministic fake: each dimension is a concept,
// and a text's vector counts the words of each concept it has. Texts it
// was asked to embed are counted.
type conceptEmbedder struct {
	mu    sync.Mutex
	texts int
	fail  error
}

var concepts = [][]string{
	{"ticket", "issue", "bug"},
	{"repo", "repository", "code"},
	{"meeting", "calendar", "event", "appointment"},
	{"file", "folder", "directory", "disk"},
}

func (e *conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return nil, e.fail
	}
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(concepts))
		for _, w := range strings.Fields(strings.ToLower(t)) {
			w = strings.Trim(w, ".,:;!?")
			for d, c := range concepts {
				for _, cw := range c {
					if w == cw || w == cw+"s" {
						v[d]++
					}
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

var vecDocs = []Document{
	{ID: "cal__create_event", Name: "create_event", Description: "Add an event to a calendar."},
	{ID: "gh__create_issue", Name: "create_issue", Description: "Open a new issue in a repository."},
	{ID: "fs__read_file", Name: "read_file", Description: "Read a file from disk."},
}

// Documents are embedded once per text, by Fill; the nearest by meaning
// come first; a group listed again unchanged costs no embedding.
func TestVectorsNearest(t *testing.T) {
	emb := &conceptEmbedder{}
	v := NewVectors(emb)
	v.Replace("all", vecDocs)
	if got := v.Pending(); got != 3 {
		t.Fatalf("Pending %d, want 3", got)
	}
	ctx := context.Background()
	// Before Fill, nothing is found by meaning.
	if hits, err := v.Nearest(ctx, "book an appointment", 3); err != nil || len(hits) != 0 {
		t.Fatalf("before Fill: %v %v", hits, err)
	}
	if err := v.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := v.Nearest(ctx, "book an appointment", 3)
	if err != nil || len(hits) == 0 || hits[0].ID != "cal__create_event" || !hits[0].Semantic {
		t.Fatalf("Nearest(book an appointment) = %+v, %v", hits, err)
	}
	if hits, _ := v.Nearest(ctx, "report a bug", 1); len(hits) != 1 || hits[0].ID != "gh__create_issue" {
		t.Fatalf("Nearest(report a bug) = %+v", hits)
	}
	embedded := emb.texts
	v.Replace("all", vecDocs) // listed again, unchanged
	if err := v.Fill(ctx); err != nil || v.Pending() != 0 {
		t.Fatal(err)
	}
	if emb.texts != embedded {
		t.Errorf("listing the same tools again embedded %d more texts", emb.texts-embedded)
	}
	v.Remove("all")
	if hits, _ := v.Nearest(ctx, "book an appointment", 3); len(hits) != 0 {
		t.Errorf("after Remove: %v", hits)
	}

	emb.fail = errors.New("endpoint down")
	v.Replace("all", []Document{{ID: "new", Name: "new_tool", Description: "A tool never embedded."}})
	if err := v.Fill(ctx); !errors.Is(err, emb.fail) {
		t.Errorf("Fill with a failing embedder: %v", err)
	}
	if _, err := v.Nearest(ctx, "anything", 3); !errors.Is(err, emb.fail) {
		t.Errorf("Nearest with a failing embedder: %v", err)
	}
}

// Fuse ranks a document both lists rank well above one only either has,
// and keeps the lexical list's why.
func TestFuse(t *testing.T) {
	lexical := []Hit{{ID: "a", Score: 9, Matched: []string{"x"}}, {ID: "b", Score: 5}, {ID: "c", Score: 1}}
	semantic := []Hit{{ID: "b", Score: 0.9, Semantic: true}, {ID: "d", Score: 0.8, Semantic: true}, {ID: "a", Score: 0.1, Semantic: true}}
	got := Fuse(3, 1, lexical, semantic)
	if len(got) != 3 || got[0].ID != "b" || got[1].ID != "a" || got[2].ID != "d" {
		t.Fatalf("Fuse = %+v, want b, a, d", got)
	}
	if !got[0].Semantic || got[1].Matched[0] != "x" {
		t.Errorf("Fuse lost the why: %+v", got)
	}
	// Weighed at 0.1 the meaning only breaks near ties: the words' order
	// stands, and d, which only the meaning has, comes after c.
	got = Fuse(4, 0.1, lexical, semantic)
	if got := ids(got); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("Fuse at 0.1 = %v, want a, b, c, d", got)
	}
}
