package toolpin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCorpusFigures reports how many tools each rule flags over the real
// tool lists: testdata/reference here and, when present, the repository's
// testdata/toolcorpus. Run with -v to read the figures and a sample of
// findings; it fails only on a hold finding in testdata/reference
// (TestCheckReference).
func TestCorpusFigures(t *testing.T) {
	files, _ := filepath.Glob("testdata/reference/*.json")
	corpus, _ := filepath.Glob("../../testdata/toolcorpus/*.json")
	files = append(files, corpus...)
	perRule := map[string]int{}
	samples := map[string][]string{}
	tools := 0
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		for _, def := range readToolList(t, f) {
			tools++
			for _, id := range rulesOf(Check(def)) {
				perRule[id]++
			}
			for _, x := range Check(def) {
				if len(samples[x.Rule]) < 5 {
					samples[x.Rule] = append(samples[x.Rule], fmt.Sprintf("%s %s %s: %s", filepath.Base(f), def.Name, x.Path, x.Excerpt))
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools in %d files\n", tools, len(files))
	ids := make([]string, 0, len(perRule))
	for id := range perRule {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%-22s %d\n", id, perRule[id])
		for _, s := range samples[id] {
			fmt.Fprintf(&b, "    %s\n", s)
		}
	}
	t.Log("\n" + b.String())
}

// BenchmarkCheckCorpus is Check over every definition of the reference
// lists and the corpus: ns/op is per definition.
func BenchmarkCheckCorpus(b *testing.B) {
	files, _ := filepath.Glob("testdata/reference/*.json")
	corpus, _ := filepath.Glob("../../testdata/toolcorpus/*.json")
	var defs []Definition
	for _, f := range append(files, corpus...) {
		if filepath.Base(f) == "queries.json" {
			continue
		}
		defs = append(defs, readToolList(b, f)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		Check(defs[i%len(defs)])
	}
}

// BenchmarkHashCorpus is Hash over the same definitions.
func BenchmarkHashCorpus(b *testing.B) {
	files, _ := filepath.Glob("../../testdata/toolcorpus/*.json")
	var defs []Definition
	for _, f := range files {
		if filepath.Base(f) != "queries.json" {
			defs = append(defs, readToolList(b, f)...)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Hash(defs[i%len(defs)])
	}
}
