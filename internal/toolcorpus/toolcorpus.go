// Package toolcorpus reads testdata/toolcorpus: the tool lists of real MCP
// servers (scripts/collect-tools) and the queries written against them,
// for the tests and benchmarks that measure tool search and the
// description checks on real definitions.
package toolcorpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Tool is one definition as its server listed it.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Server is one server's file: its short name (the <server> of
// mcp__<server>__<tool>) and its tools.
type Server struct {
	Package string `json:"package"`
	Server  string `json:"server"`
	Tools   []Tool `json:"tools"`
}

// Query is one natural-language query and the namespaced tools that
// answer it.
type Query struct {
	ID     string   `json:"id"`
	Query  string   `json:"query"`
	Kind   string   `json:"kind"`
	Expect []string `json:"expect"`
	// Intent and Note are the independent set's (queries/independent.json):
	// what capability the query asks for, and a labeller's remark.
	Intent string `json:"intent,omitempty"`
	Note   string `json:"note,omitempty"`
}

// LoadQueries reads a query file, such as queries/independent.json: the
// queries written by someone who had not read the corpus, labelled
// against it afterwards (see the corpus's README).
func LoadQueries(path string) ([]Query, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []Query
	if err := json.Unmarshal(data, &qs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return qs, nil
}

// Load reads every server file of dir, in file-name order, and its
// queries.json.
func Load(dir string) ([]Server, []Query, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	var servers []Server
	var queries []Query
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		if filepath.Base(f) == "queries.json" {
			if err := json.Unmarshal(data, &queries); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			continue
		}
		var s Server
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 || len(queries) == 0 {
		return nil, nil, fmt.Errorf("no corpus in %s (scripts/collect-tools writes it)", dir)
	}
	return servers, queries, nil
}
