package hosttools

import (
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/actors"
)

func TestCatalog(t *testing.T) {
	servers := []actors.ServerStatus{
		{Name: "a", Enabled: true, Description: "Arithmetic |\n notes"},
		{Name: "b", Enabled: true, FriendlyName: "B server"},
		{Name: "off", Description: "disabled"},
		{Name: "m", Enabled: true},
	}
	in := CatalogInput{
		Servers:    servers,
		Active:     func(s string) bool { return s == "m" },
		Unprefixed: func(s string) bool { return s == "m" },
		Tools:      []string{"mcp__b__pid", "mcp__m__x"},
	}
	got := Catalog(in)
	for _, want := range []string{
		"| `a` | Arithmetic \\| notes |\n",
		"| `b` | B server |\n",
		"- `m` (tools callable by their own names)\n",
		"- `mcp__b__pid` (this tool only)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Catalog lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"off", "mcp__m__x", "search_tools", "(none)"} {
		if strings.Contains(got, not) {
			t.Errorf("Catalog holds %q:\n%s", not, got)
		}
	}
	in.Search, in.Active, in.Tools = true, func(string) bool { return false }, nil
	got = Catalog(in)
	if !strings.Contains(got, "search_tools") || !strings.Contains(got, "- (none)\n") {
		t.Errorf("Catalog with search and nothing active:\n%s", got)
	}
	if got := Catalog(CatalogInput{}); !strings.Contains(got, "| (none) | |\n") {
		t.Errorf("empty Catalog:\n%s", got)
	}
}
