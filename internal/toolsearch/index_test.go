package toolsearch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"read_file", []string{"read", "file"}},
		{"readFile", []string{"readfil", "read", "file"}},
		{"getHTTPResponse", []string{"gethttprespons", "get", "http", "respons"}},
		// A name in humps is also one word, as its server or another tool spells it.
		{"my DigitalOcean droplets on GitHub", []string{"digitalocean", "digital", "ocean", "droplet", "github", "git", "hub"}},
		// Contractions go with their apostrophe; a request's filler goes.
		{"I don't know why the user's site isn't updated", []string{"know", "why", "user", "site", "updat"}},
		{"can you please just list all repos", []string{"list", "repo"}},
		{"list-open-issues", []string{"list", "open", "issu"}},
		{"fs.write/file", []string{"fs", "writ", "file"}},
		{"mcp__github__create_pull_request", []string{"github", "creat", "pull", "request"}},
		{"The files in a directory", []string{"file", "directory"}},
		{"Creating created creates create", []string{"creat", "creat", "creat", "creat"}},
		{"stopped running entries copied searches", []string{"stop", "run", "entry", "copy", "search"}},
		{"calls called process processes", []string{"call", "call", "process", "process"}},
		{"", nil},
	} {
		if got := Tokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

var fsDocs = []Document{
	{ID: "mcp__fs__read_file", Server: "fs", Name: "read_file", Title: "Read file",
		Description: "Read the complete contents of a file from disk.",
		InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string","description":"Path of the file"}}}`)},
	{ID: "mcp__fs__write_file", Server: "fs", Name: "write_file", Title: "Write file",
		Description: "Create a new file or overwrite an existing one.",
		InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)},
	{ID: "mcp__fs__list_directory", Server: "fs", Name: "list_directory",
		Description: "List the entries of a directory, files and folders."},
}

var ghDocs = []Document{
	{ID: "mcp__github__create_issue", Server: "github", Name: "create_issue", Title: "Create issue",
		Description: "Open a new issue in a GitHub repository.",
		InputSchema: []byte(`{"properties":{"owner":{},"repo":{"description":"Repository name"},"title":{},"body":{}}}`)},
	{ID: "mcp__github__search_code", Server: "github", Name: "search_code",
		Description: "Search for code across GitHub repositories."},
}

func TestSearchRanks(t *testing.T) {
	x := New()
	x.Replace("fs", fsDocs)
	x.Replace("github", ghDocs)
	for _, tc := range []struct {
		query string
		top   string
	}{
		{"read a file", "mcp__fs__read_file"},
		{"writing files", "mcp__fs__write_file"},
		{"what is in this folder", "mcp__fs__list_directory"},
		{"open an issue on github", "mcp__github__create_issue"},
		{"repositoryName", "mcp__github__create_issue"}, // a parameter's description
		{"search code", "mcp__github__search_code"},
	} {
		hits := x.Search(tc.query, 3)
		if len(hits) == 0 || hits[0].ID != tc.top {
			t.Errorf("Search(%q) = %v, want %s first", tc.query, hits, tc.top)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("Search(%q): not sorted: %v", tc.query, hits)
			}
		}
	}
	if hits := x.Search("the a of", 5); hits != nil {
		t.Errorf("a query of stop words: %v, want none", hits)
	}
	if hits := x.Search("zebra quokka", 5); len(hits) != 0 {
		t.Errorf("no match: %v", hits)
	}
	if got := len(x.Search("file", 1)); got != 1 {
		t.Errorf("limit 1: %d hits", got)
	}
}

// TestNameOutweighsDescription: the same word in a name beats it in a
// description, all else being equal.
func TestNameOutweighsDescription(t *testing.T) {
	x := New()
	x.Replace("s", []Document{
		{ID: "in-desc", Name: "alpha", Description: "weather beta"},
		{ID: "in-name", Name: "weather", Description: "alpha beta"},
	})
	if got := ids(x.Search("weather", 2)); !slices.Equal(got, []string{"in-name", "in-desc"}) {
		t.Fatalf("got %v", got)
	}
}

func TestReplaceIsIncremental(t *testing.T) {
	x := New()
	x.Replace("fs", fsDocs)
	x.Replace("github", ghDocs)
	if x.Len() != 5 {
		t.Fatalf("Len %d", x.Len())
	}
	// fs relists with one tool renamed: the old one is gone, github untouched.
	x.Replace("fs", []Document{{ID: "mcp__fs__read_text_file", Server: "fs", Name: "read_text_file", Description: "Read a file as text."}})
	if x.Len() != 3 {
		t.Fatalf("Len after replace %d, want 3", x.Len())
	}
	// The renamed tool first, the old ones gone (github's may follow, on
	// the vocabulary's synonyms of the query's words).
	if got := ids(x.Search("read file", 5)); len(got) == 0 || got[0] != "mcp__fs__read_text_file" ||
		slices.ContainsFunc(got, func(id string) bool { return strings.HasPrefix(id, "mcp__fs__") && id != "mcp__fs__read_text_file" }) {
		t.Errorf("after replace: %v", got)
	}
	if got := ids(x.Search("github issue", 1)); !slices.Equal(got, []string{"mcp__github__create_issue"}) {
		t.Errorf("other group: %v", got)
	}
	x.Remove("github")
	x.Remove("github") // twice is fine
	if got := x.Search("github issue", 5); len(got) != 0 {
		t.Errorf("after remove: %v", got)
	}
	x.Replace("fs", nil)
	if x.Len() != 0 || len(x.postings) != 0 || x.totalLen != 0 {
		t.Errorf("empty index keeps %d docs, %d terms, length %v", x.Len(), len(x.postings), x.totalLen)
	}
}

// TestReplaceMatchesRebuild: an index updated server by server scores
// exactly as one built from scratch with the same documents.
func TestReplaceMatchesRebuild(t *testing.T) {
	corpus := synthetic(40, 25, 1)
	inc := New()
	for s, docs := range corpus {
		inc.Replace(s, docs)
	}
	changed := synthetic(40, 25, 2) // every server relists different tools
	for s := range 20 {
		name := fmt.Sprintf("server%d", s)
		inc.Replace(name, changed[name])
		corpus[name] = changed[name]
	}
	inc.Remove("server39")
	delete(corpus, "server39")

	fresh := New()
	for s, docs := range corpus {
		fresh.Replace(s, docs)
	}
	for _, q := range []string{"create issue", "read file contents", "send message channel", "query database rows"} {
		got, want := inc.Search(q, 20), fresh.Search(q, 20)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
			t.Errorf("%q (-rebuilt +incremental):\n%s", q, diff)
		}
	}
}

func TestConcurrentSearchAndReplace(t *testing.T) {
	x := New()
	corpus := synthetic(20, 20, 1)
	for s, docs := range corpus {
		x.Replace(s, docs)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 200 {
				if len(x.Search("list files in directory", 10)) == 0 {
					t.Error("no hits")
					return
				}
			}
		})
		wg.Go(func() {
			for j := range 50 {
				name := fmt.Sprintf("server%d", (i*50+j)%20)
				x.Replace(name, synthetic(20, 20, uint64(j))[name])
			}
		})
	}
	wg.Wait()
}

// synthetic makes servers × tools documents from a vocabulary of
// tool-ish words; seed picks the mix.
func synthetic(servers, tools int, seed uint64) map[string][]Document {
	verbs := []string{"create", "read", "list", "delete", "update", "search", "send", "get", "query", "upload", "download", "run", "stop", "open", "close"}
	nouns := []string{"file", "directory", "issue", "pull_request", "message", "channel", "database", "row", "table", "image", "bucket", "user", "event", "calendar", "email", "page", "repo", "branch", "commit", "ticket", "task", "note", "document", "invoice", "payment"}
	filler := []string{"the", "given", "returns", "a", "list", "of", "contents", "with", "optional", "filter", "by", "name", "id", "and", "date", "for", "current", "workspace", "account", "project"}
	r := rand.New(rand.NewPCG(seed, 7))
	out := map[string][]Document{}
	for s := range servers {
		name := fmt.Sprintf("server%d", s)
		docs := make([]Document, tools)
		for i := range docs {
			v, n := verbs[r.IntN(len(verbs))], nouns[r.IntN(len(nouns))]
			tool := fmt.Sprintf("%s_%s_%d", v, n, i)
			desc := v + " " + n
			for range 8 + r.IntN(20) {
				desc += " " + filler[r.IntN(len(filler))]
				if r.IntN(4) == 0 {
					desc += " " + nouns[r.IntN(len(nouns))]
				}
			}
			docs[i] = Document{ID: "mcp__" + name + "__" + tool, Server: name, Name: tool, Description: desc,
				InputSchema: []byte(fmt.Sprintf(`{"type":"object","properties":{"%s_id":{"type":"string","description":"The %s's id"},"limit":{"type":"integer"}}}`, n, n))}
		}
		out[name] = docs
	}
	return out
}

func benchIndex(b *testing.B, servers, tools int) *Index {
	x := New()
	for s, docs := range synthetic(servers, tools, 1) {
		x.Replace(s, docs)
	}
	if x.Len() != servers*tools {
		b.Fatalf("Len %d", x.Len())
	}
	return x
}

// BenchmarkSearch is one query against 5,000 tools (200 servers × 25).
func BenchmarkSearch(b *testing.B) {
	x := benchIndex(b, 200, 25)
	queries := []string{"create a new issue", "list files in a directory", "send an email message", "query database table rows", "download image from bucket"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if len(x.Search(queries[i%len(queries)], 10)) == 0 {
			b.Fatal("no hits")
		}
		i++
	}
}

// BenchmarkReplaceServer is one server relisting its 25 tools in an index
// of 5,000.
func BenchmarkReplaceServer(b *testing.B) {
	x := benchIndex(b, 200, 25)
	next := synthetic(200, 25, 2)["server7"]
	b.ReportAllocs()
	for b.Loop() {
		x.Replace("server7", next)
	}
}
