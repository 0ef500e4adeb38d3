package toolsearch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A query's literal values count less than its words, and a brand in
// humps is one term when the index has it whole.
func TestQueryTerms(t *testing.T) {
	known := func(t string) bool { return t == "digitalocean" }
	w := func(term string, weight float64) weightedTerm { return weightedTerm{term: term, weight: weight} }
	const lw = literalWeight
	for _, tc := range []struct {
		query string
		want  []weightedTerm
	}{
		{"list the files in ~/projects/api", []weightedTerm{w("list", 1), w("file", 1), w("project", lw), w("api", lw)}},
		{"add 'renew passport' to my inbox", []weightedTerm{w("add", 1), w("renew", lw), w("passport", lw), w("inbox", 1)}},
		{`title it "Design sync" and tag it`, []weightedTerm{w("titl", 1), w("design", lw), w("sync", lw), w("tag", 1)}},
		{"email jane@acme.com about PROJ-123 at 3pm", []weightedTerm{w("email", 1), w("jane", lw), w("acme", lw), w("com", lw), w("about", 1), w("proj", lw), w("123", lw), w("3pm", lw)}},
		{"post in #deployments, block 203.0.113.0/24", []weightedTerm{w("post", 1), w("deployment", lw), w("block", 1), w("203", lw), w("0", lw), w("113", lw), w("24", lw)}},
		// A word both quoted and not counts as a word.
		{"deploy 'deploy-bot'", []weightedTerm{w("deploy", 1), w("bot", lw)}},
		// An apostrophe inside a word opens no quote.
		{"the user's droplets on DigitalOcean", []weightedTerm{w("user", 1), w("droplet", 1), w("digitalocean", 1)}},
		// A brand the index does not have whole is its parts.
		{"my GitHub repos", []weightedTerm{w("git", 1), w("hub", 1), w("repo", 1)}},
		// Words with digits that are names, not data.
		{"list S3 buckets with k8s", []weightedTerm{w("list", 1), w("s3", 1), w("bucket", 1), w("k8s", 1)}},
	} {
		if got := queryTerms(tc.query, known); !cmp.Equal(got, tc.want, cmp.AllowUnexported(weightedTerm{})) {
			t.Errorf("queryTerms(%q) =\n%v, want\n%v", tc.query, got, tc.want)
		}
	}
}

// A query that names a server prefers its tools; a term most other
// servers' tools also have ("api") names none.
func TestNamedServer(t *testing.T) {
	x := New()
	x.Replace("todoist", []Document{
		{ID: "mcp__todoist__create_tasks", Server: "todoist", Name: "create_tasks", Description: "Add tasks to the inbox or a project."},
		{ID: "mcp__todoist__get_projects", Server: "todoist", Name: "get_projects", Description: "List projects."},
	})
	x.Replace("planner", []Document{
		{ID: "mcp__planner__add_reminder", Server: "planner", Name: "add_reminder", Description: "Add a reminder to the inbox, due at a time."},
	})
	if got := ids(x.Search("add a reminder to my inbox", 1)); !cmp.Equal(got, []string{"mcp__planner__add_reminder"}) {
		t.Fatalf("no server named: %v", got)
	}
	if got := ids(x.Search("add a reminder to my Todoist inbox", 1)); !cmp.Equal(got, []string{"mcp__todoist__create_tasks"}) {
		t.Errorf("Todoist named: %v, want its create_tasks first", got)
	}
	x.Replace("weather-api", []Document{{ID: "mcp__weather-api__forecast", Server: "weather-api", Name: "forecast", Description: "Forecast."}})
	for _, d := range []string{"a", "b", "c"} {
		x.Replace(d, []Document{{ID: "mcp__" + d + "__call_api", Server: d, Name: "call_api", Description: "Call any API endpoint."}})
	}
	named := x.namedGroups(queryTerms("call the api for a forecast", func(string) bool { return true }))
	if !cmp.Equal(named, map[string]bool(nil)) {
		t.Errorf("named %v, want none: most tools that say api are not weather-api's", named)
	}
}
