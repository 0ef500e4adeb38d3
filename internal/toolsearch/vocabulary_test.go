package toolsearch

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A query that holds a whole entry of a group brings the group's other
// entries, at expansionWeight, and only terms the index has; a query that
// holds part of an entry brings nothing.
func TestVocabularyExpand(t *testing.T) {
	v := &vocabulary{byToken: map[string][]int32{}, words: map[string]string{}}
	v.read(strings.NewReader("# a comment\npull request | pr | merge request\ncalendar event | meeting\nlonely\n"), expansionWeight)
	known := func(t string) bool { return t != "calendar" }
	for _, tc := range []struct {
		query string
		want  []weightedTerm
	}{
		{"open a merge request", []weightedTerm{{"open", 1, false}, {"merg", 1, false}, {"request", 1, false}, {"pull", expansionWeight, true}, {"pr", expansionWeight, true}}},
		{"move my meeting", []weightedTerm{{"move", 1, false}, {"meet", 1, false}, {"event", expansionWeight, true}}},
		{"merge two branches", []weightedTerm{{"merg", 1, false}, {"two", 1, false}, {"branch", 1, false}}},
		// A literal value brings no synonyms.
		{"rename it 'merge request'", []weightedTerm{{"renam", 1, false}, {"merg", literalWeight, false}, {"request", literalWeight, false}}},
	} {
		if got := v.expand(queryTerms(tc.query, known), known); !cmp.Equal(got, tc.want, cmp.AllowUnexported(weightedTerm{})) {
			t.Errorf("expand(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
	if len(v.groups) != 2 {
		t.Errorf("%d groups, want 2 (a one-entry line is none)", len(v.groups))
	}
}

// The shipped vocabularies load (once a process: BenchmarkLoadVocabulary
// says what it costs).
func TestDefaultVocabulary(t *testing.T) {
	v := defaultVocabulary()
	t.Logf("%d groups, %d tokens", len(v.groups), len(v.byToken))
	if len(v.groups) < 5000 {
		t.Fatalf("%d groups: vocab/it.txt and vocab/wordnet.txt not both loaded", len(v.groups))
	}
}

func BenchmarkLoadVocabulary(b *testing.B) {
	for b.Loop() {
		loadVocabulary()
	}
}

// A hit says why it was found: the query's words it has, as the query
// wrote them, and the vocabulary's words it has instead of others.
func TestHitSaysWhy(t *testing.T) {
	x := New()
	x.Replace("fs", fsDocs)
	x.Replace("github", ghDocs)
	hits := x.Search("Opening an issue", 1)
	if len(hits) != 1 || hits[0].ID != "mcp__github__create_issue" || !cmp.Equal(hits[0].Matched, []string{"opening", "issue"}) {
		t.Fatalf("Search(Opening an issue) = %+v", hits)
	}
	hits = x.Search("file a ticket in my repo", 1)
	if len(hits) != 1 || hits[0].ID != "mcp__github__create_issue" || !slices.Contains(hits[0].Synonyms, "issue") {
		t.Fatalf("Search(file a ticket in my repo) = %+v, want create_issue found through the synonym issue", hits)
	}
}
