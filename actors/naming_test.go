package actors

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modelName is what model APIs accept as a tool name; safeName the same
// at any length (a budget over 64).
var (
	modelName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	safeName  = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

func TestMapNames(t *testing.T) {
	long := strings.Repeat("a", 100)
	tests := []struct {
		name   string
		server string
		own    []string
		want   map[string]string // own → namespaced name; the others are kept
	}{
		{name: "safe names are kept", server: "s", own: []string{"echo", "get-weather", "a_b"}},
		{
			name: "characters become underscores", server: "s",
			own:  []string{"get weather", "files/read", "x.y", "ünïcode"},
			want: map[string]string{"get weather": "mcp__s__get_weather", "files/read": "mcp__s__files_read", "x.y": "mcp__s__x_y", "ünïcode": "mcp__s___n_code"},
		},
		{
			// Both names that sanitize alike are shortened, so neither
			// depends on the other's place in the listing.
			name: "two that collide are both hashed", server: "s",
			own:  []string{"a.b", "a/b"},
			want: map[string]string{"a.b": "mcp__s__a_b_" + hash8("a.b"), "a/b": "mcp__s__a_b_" + hash8("a/b")},
		},
		{
			name: "a mapped name never takes a real one", server: "s",
			own:  []string{"a_b", "a.b"},
			want: map[string]string{"a.b": "mcp__s__a_b_" + hash8("a.b")},
		},
		{
			name: "too long is cut and hashed", server: "srv",
			own:  []string{long},
			want: map[string]string{long: "mcp__srv__" + strings.Repeat("a", 64-len("mcp__srv__")-9) + "_" + hash8(long)},
		},
		{
			name: "the budget is the whole name", server: strings.Repeat("s", 40),
			own:  []string{strings.Repeat("t", 20), strings.Repeat("u", 14)},
			want: map[string]string{strings.Repeat("t", 20): "mcp__" + strings.Repeat("s", 40) + "__tttttttt_" + hash8(strings.Repeat("t", 20))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := MapNames(tt.server, tt.own, DefaultMaxToolName)
			got := map[string]string{}
			for _, own := range tt.own {
				if name := m.Namespaced(own); name != ToolName(tt.server, own) {
					got[own] = name
				}
			}
			if tt.want == nil {
				tt.want = map[string]string{}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mapped names (-want +got):\n%s", diff)
			}
			checkNameMap(t, tt.server, tt.own, m, DefaultMaxToolName)
		})
	}
}

func hash8(name string) string { return shortName(name, nameHashLen, 0) }

// The bare name of an unprefixed server has the whole budget.
func TestMapNamesBare(t *testing.T) {
	long := strings.Repeat("b", 60) // fits bare, not after mcp__srv__
	m := MapNames("srv", []string{long, "get weather"}, DefaultMaxToolName)
	if got := m.Bare(long); got != long {
		t.Errorf("Bare(60 bytes) = %q, want it kept", got)
	}
	if got := m.Namespaced(long); len(got) != 64 || !strings.HasPrefix(got, "mcp__srv__bbb") {
		t.Errorf("Namespaced(60 bytes) = %q, want it cut to 64", got)
	}
	if got := m.Bare("get weather"); got != "get_weather" {
		t.Errorf("Bare(get weather) = %q", got)
	}
	if got := m.OwnOfBare("get_weather"); got != "get weather" {
		t.Errorf("OwnOfBare(get_weather) = %q", got)
	}
}

// The same set of names maps the same way whatever its order, and a
// negative budget lifts the length limit only.
func TestMapNamesStable(t *testing.T) {
	own := []string{"a.b", "a/b", "a_b", "x y", strings.Repeat("z", 90), "é"}
	first := MapNames("s", own, DefaultMaxToolName)
	for range 20 {
		shuffled := append([]string(nil), own...)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		m := MapNames("s", shuffled, DefaultMaxToolName)
		for _, n := range own {
			if m.Namespaced(n) != first.Namespaced(n) || m.Bare(n) != first.Bare(n) {
				t.Fatalf("order %q maps %q to %q, order %q to %q", shuffled, n, m.Namespaced(n), own, first.Namespaced(n))
			}
		}
	}
	unlimited := MapNames("s", own, NameBudget(-1))
	if got := unlimited.Namespaced(strings.Repeat("z", 90)); got != ToolName("s", strings.Repeat("z", 90)) {
		t.Errorf("no budget: %q was shortened", got)
	}
	if got := unlimited.Namespaced("x y"); got != "mcp__s__x_y" {
		t.Errorf("no budget: x y = %q", got)
	}
}

// Forced hash collisions: names whose sanitized form, cut, is the same and
// a real name that equals a shortened one still get distinct names.
func TestMapNamesHashTaken(t *testing.T) {
	taken := "a_b_" + hash8("a.b") // a real tool named like a.b's hashed name
	m := MapNames("s", []string{"a.b", "a/b", taken}, DefaultMaxToolName)
	if got := m.Namespaced(taken); got != ToolName("s", taken) {
		t.Errorf("real name %q became %q", taken, got)
	}
	if got := m.Namespaced("a.b"); got == ToolName("s", taken) || !modelName.MatchString(got) {
		t.Errorf("a.b = %q, taken by a real tool", got)
	}
	checkNameMap(t, "s", []string{"a.b", "a/b", taken}, m, DefaultMaxToolName)
}

// checkNameMap asserts NameMap's contract for own: every exposed name, bare
// and namespaced, is one model APIs accept within budget, distinct, never
// another's own name, and resolves back to its own.
func checkNameMap(t *testing.T, server string, own []string, m *NameMap, budget int) {
	t.Helper()
	owns := map[string]bool{}
	for _, n := range own {
		owns[n] = true
	}
	for _, kind := range []string{"namespaced", "bare"} {
		seen := map[string]string{}
		for _, n := range own {
			var name, back string
			if kind == "bare" {
				name = m.Bare(n)
				back = m.OwnOfBare(name)
			} else {
				name = m.Namespaced(n)
				s, part, ok := SplitToolName(name)
				if !ok || s != server {
					t.Fatalf("%s name %q of %q does not split to server %q", kind, name, n, server)
				}
				back = m.OwnOfPart(part)
			}
			if !safeName.MatchString(name) || len(name) > budget || budget <= 64 && !modelName.MatchString(name) {
				if kind == "bare" || len(ToolName(server, "")) <= budget-nameHashLen {
					t.Errorf("%s name %q of %q: not a model tool name within %d", kind, name, n, budget)
				}
			}
			if back != n {
				t.Errorf("%s name %q of %q resolves to %q", kind, name, n, back)
			}
			if other, dup := seen[name]; dup {
				t.Errorf("%s name %q for both %q and %q", kind, name, other, n)
			}
			seen[name] = n
			bare := name
			if kind == "namespaced" {
				_, bare, _ = SplitToolName(name)
			}
			if bare != n && owns[bare] {
				t.Errorf("%s name of %q is %q, another tool's own name", kind, n, bare)
			}
		}
	}
}

// FuzzMapNames: whatever the names, the map keeps its contract.
func FuzzMapNames(f *testing.F) {
	f.Add("get weather", "files/read", "x.y", 64)
	f.Add("a.b", "a/b", "a_b", 64)
	f.Add(strings.Repeat("a", 100), strings.Repeat("a", 101), "ünïcode", 20)
	f.Add("mcp__x__y", "\xff\xfe", "", 0)
	f.Fuzz(func(t *testing.T, a, b, c string, budget int) {
		budget = NameBudget(budget%200 + 1)
		var own []string
		for _, n := range []string{a, b, c} {
			if n != "" && !slices.Contains(own, n) {
				own = append(own, n)
			}
		}
		for _, server := range []string{"s", "a-much-longer-server-name"} {
			checkNameMap(t, server, own, MapNames(server, own, max(budget, 24)), max(budget, 24))
		}
	})
}

// Many names drawn from a small alphabet collide often when sanitized and
// cut: the map keeps its contract for each set.
func TestMapNamesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", ".", "/", "_", "-", "é", " "}
	for range 200 {
		seen := map[string]bool{}
		var own []string
		for range 1 + r.IntN(40) {
			var b strings.Builder
			for range 1 + r.IntN(80) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			if n := b.String(); !seen[n] {
				seen[n] = true
				own = append(own, n)
			}
		}
		budget := 20 + r.IntN(60)
		checkNameMap(t, "srv", own, MapNames("srv", own, budget), budget)
	}
}
