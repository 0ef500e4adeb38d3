package actors

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestPromptNames: the first unprefixed server in order that lists a bare
// name owns it; the later one keeps the namespaced name, the collision is
// logged, and every exposed name resolves back to its server's own.
func TestPromptNames(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var p PromptNames
	order := []string{"a", "b"}
	budget := NameBudget(0)
	p.Note("a", []string{"greet", "mcp__x__y"}, true, order, budget, log)
	p.Note("b", []string{"greet", "bye"}, true, order, budget, log)
	p.Note("c", []string{"greet", "has space"}, false, order, budget, log)

	for _, tt := range []struct {
		server, prompt, want string
	}{
		{"a", "greet", "greet"},
		{"a", "mcp__x__y", "mcp__a__mcp__x__y"},
		{"b", "greet", "mcp__b__greet"},
		{"b", "bye", "bye"},
		{"c", "greet", "mcp__c__greet"},
		{"c", "has space", "mcp__c__has_space"},
		{"c", "unlisted", "mcp__c__unlisted"},
	} {
		got := p.Name(tt.server, tt.prompt, tt.server != "c", order, budget)
		if got != tt.want {
			t.Errorf("Name(%q, %q) = %q, want %q", tt.server, tt.prompt, got, tt.want)
		}
		if tt.prompt == "unlisted" {
			continue
		}
		server, prompt, ok := p.Resolve(got, func(string) bool { return true }, order)
		if !ok || server != tt.server || prompt != tt.prompt {
			t.Errorf("Resolve(%q) = %q, %q, %v, want %q, %q", got, server, prompt, ok, tt.server, tt.prompt)
		}
	}
	if _, _, ok := p.Resolve("mcp__zz__greet", func(string) bool { return false }, order); ok {
		t.Error("Resolve of an unknown server's name succeeded")
	}
	if _, _, ok := p.Resolve("nothing", func(string) bool { return true }, order); ok {
		t.Error("Resolve of an unlisted bare name succeeded")
	}
	logs := buf.String()
	for _, want := range []string{`prompt \"mcp__x__y\" is not exposed by its own name`, `\"a\", registered earlier, keeps the name`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}

	p.Forget("a")
	if got := p.Name("b", "greet", true, order, budget); got != "greet" {
		t.Errorf("after Forget(a), Name(b, greet) = %q, want greet", got)
	}
}
