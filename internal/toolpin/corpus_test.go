package toolpin

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The real tool lists: testdata/reference here (eleven servers, read by
// the default run's tests) and, when present, the repository's
// testdata/toolcorpus (7,800 tools, read only by the benchmarks below: over
// all of it, under -race, the checks take minutes).

// corpusFiles returns the reference lists and the corpus's server files.
func corpusFiles() []string {
	files, _ := filepath.Glob("testdata/reference/*.json")
	corpus, _ := filepath.Glob("../../testdata/toolcorpus/*.json")
	for _, f := range corpus {
		if filepath.Base(f) != "queries.json" {
			files = append(files, f)
		}
	}
	return files
}

// BenchmarkCheckCorpus is Check over every definition of the reference
// lists and the corpus: ns/op is per definition. It reports how many
// tools each rule flags as "<rule>-tools" and logs a sample of findings
// per rule (all of them with -v); and, since only a benchmark reads the
// whole corpus, it fails on a pattern match the prose filter would hide
// (see TestRuleWords).
//
//	go test -run '^$' -bench CheckCorpus ./internal/toolpin/
func BenchmarkCheckCorpus(b *testing.B) {
	files := corpusFiles()
	var defs []Definition
	perRule := map[string]int{}
	samples := map[string][]string{}
	var texts []string
	for _, f := range files {
		for _, def := range readToolList(b, f) {
			defs = append(defs, def)
			texts = append(texts, def.Name, def.Title, def.Description, string(def.InputSchema), string(def.OutputSchema))
			fs := Check(def)
			for _, id := range rulesOf(fs) {
				perRule[id]++
			}
			for _, x := range fs {
				if len(samples[x.Rule]) < 5 {
					samples[x.Rule] = append(samples[x.Rule], fmt.Sprintf("%s %s %s: %s", filepath.Base(f), def.Name, x.Path, x.Excerpt))
				}
			}
		}
	}
	checkRuleWords(b, texts)
	var log strings.Builder
	fmt.Fprintf(&log, "%d tools in %d files\n", len(defs), len(files))
	ids := make([]string, 0, len(perRule))
	for id := range perRule {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&log, "%-22s %d\n", id, perRule[id])
		for _, s := range samples[id] {
			fmt.Fprintf(&log, "    %s\n", s)
		}
	}
	b.Log("\n" + log.String())

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		Check(defs[i%len(defs)])
	}
	b.StopTimer()
	b.ReportMetric(float64(len(defs)), "tools")
	for _, r := range Rules() {
		b.ReportMetric(float64(perRule[r.ID]), r.ID+"-tools")
	}
}

// BenchmarkHashCorpus is Hash over the same definitions.
func BenchmarkHashCorpus(b *testing.B) {
	var defs []Definition
	for _, f := range corpusFiles() {
		defs = append(defs, readToolList(b, f)...)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Hash(defs[i%len(defs)])
	}
}
