package mcpvisor_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The floors of docs/design.md: a package imports only packages of its own
// floor or below. Packages under internal/ are machinery and take no floor
// of their own: each sits at the floor of its lowest importer (found by
// TestImportFloors), so it may import nothing its lowest importer could not.
const module = "github.com/mcpvisor/mcpvisor"

// floorOf returns the floor of a non-internal package of the module, and
// false for one the table does not place (a new top-level package must be
// given a floor here and in docs/design.md).
func floorOf(pkg string) (int, bool) {
	rel, ok := strings.CutPrefix(pkg, module)
	if !ok {
		return 0, false
	}
	rel = strings.TrimPrefix(rel, "/")
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case "protocol":
		return 1, true
	case "persistence", "supervision", "config":
		return 2, true
	case "actors":
		return 3, true
	case "", "pipeline", "modelapi":
		return 4, true // the root package, the public API, its request pipeline, and the model APIs' formats of its tools and results
	case "gateway", "sidecar", "cluster", "telemetry":
		return 5, true // fronts: they use the root package
	case "cmd", "examples":
		return 6, true
	}
	return 0, false
}

// floorExceptions are known imports against the floors, each with the
// reason it stays for now: importer -> imported.
var floorExceptions = map[[2]string]string{}

func isInternal(pkg string) bool {
	return strings.Contains(pkg+"/", "/internal/")
}

// imports lists the module's packages and the module packages each one
// imports (test files aside), as go list sees them.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Skipf("go list: %v", err)
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		graph[f[0]] = nil
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				graph[f[0]] = append(graph[f[0]], imp)
			}
		}
	}
	return graph
}

// floors places every package of graph: the table for the public ones, the
// lowest importer's floor for internal ones (6, the top, for one only tests
// import).
func floors(t *testing.T, graph map[string][]string) map[string]int {
	t.Helper()
	floor := map[string]int{}
	for pkg := range graph {
		if isInternal(pkg) {
			floor[pkg] = 6
			continue
		}
		f, ok := floorOf(pkg)
		if !ok {
			t.Errorf("package %s has no floor: place it in floorOf and docs/design.md", pkg)
			f = 6
		}
		floor[pkg] = f
	}
	// An internal package imported by an internal one takes its floor too:
	// relax until nothing moves (floors only go down, so this ends).
	for changed := true; changed; {
		changed = false
		for pkg, imps := range graph {
			for _, imp := range imps {
				if isInternal(imp) && floor[pkg] < floor[imp] {
					floor[imp], changed = floor[pkg], true
				}
			}
		}
	}
	return floor
}

// violations lists every import that points up a floor, and every import
// of a cmd/ package from outside cmd/, minus floorExceptions.
func violations(graph map[string][]string, floor map[string]int) []string {
	var out []string
	for pkg, imps := range graph {
		for _, imp := range imps {
			if _, ok := floorExceptions[[2]string{pkg, imp}]; ok {
				continue
			}
			switch {
			case floor[imp] > floor[pkg]:
				out = append(out, pkg+" (floor "+strconv.Itoa(floor[pkg])+") imports "+imp+" (floor "+strconv.Itoa(floor[imp])+")")
			case strings.HasPrefix(imp, module+"/cmd/") && !strings.HasPrefix(pkg, module+"/cmd/"):
				out = append(out, pkg+" imports "+imp+": only cmd/ imports cmd/")
			}
		}
	}
	return out
}

// TestImportFloors fails when a package imports one of a higher floor
// (docs/design.md, "Floors"), e.g. config importing actors, or anything in
// floors 1 to 3 importing the root package.
func TestImportFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	graph := imports(t)
	if len(graph) == 0 {
		t.Fatal("go list found no packages")
	}
	for _, v := range violations(graph, floors(t, graph)) {
		t.Error(v)
	}
	for e, why := range floorExceptions {
		found := false
		for _, imp := range graph[e[0]] {
			found = found || imp == e[1]
		}
		if !found {
			t.Errorf("floorExceptions: %s no longer imports %s (%s): drop the exception", e[0], e[1], why)
		}
	}
}

// The check itself: an upward import is caught, through an internal
// package too.
func TestImportFloorsCatchesUpwardImports(t *testing.T) {
	graph := map[string][]string{
		module + "/config":          {module + "/internal/helper"},
		module + "/internal/helper": {module + "/actors"},
		module + "/actors":          {module + "/config"},
		module:                      {module + "/actors", module + "/cmd/mcpvisor"},
		module + "/cmd/mcpvisor":    {module},
	}
	got := violations(graph, floors(t, graph))
	want := []string{
		module + "/internal/helper (floor 2) imports " + module + "/actors (floor 3)",
		module + " (floor 4) imports " + module + "/cmd/mcpvisor (floor 6)",
	}
	if len(got) != len(want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("violations = %q, missing %q", got, w)
		}
	}
}
