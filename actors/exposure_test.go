package actors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// fleet is one runtime over several fake servers, one per server name.
type fleet struct {
	t    *testing.T
	rt   *Runtime
	mu   sync.Mutex
	srvs map[string]*fakeServer
}

// add scripts the server of name.
func (f *fleet) add(name string, tools ...string) {
	f.mu.Lock()
	f.srvs[name] = newFakeServer(f.t, tools...)
	f.mu.Unlock()
}

// startFleet starts a runtime whose host tools are hostTools; servers are
// added with register. It must run inside a synctest bubble.
func startFleet(t *testing.T, hostTools ...string) *fleet {
	t.Helper()
	f := &fleet{t: t, srvs: map[string]*fakeServer{}}
	f.rt = New(Options{
		dial: func(gen uint64, spec *ServerSpec, cio connIO) (conn, error) {
			f.mu.Lock()
			srv := f.srvs[spec.Name]
			f.mu.Unlock()
			return srv.dial(gen, spec, cio)
		},
		HostTool: func(name string) bool { return slices.Contains(hostTools, name) },
	})
	t.Cleanup(func() {
		if err := f.rt.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// register adds an enabled server listing tools; unprefixed says how it
// exposes them.
func (f *fleet) register(name string, unprefixed bool, tools ...string) {
	f.t.Helper()
	f.add(name, tools...)
	spec := ServerSpec{Name: name, Command: "fake-server", Enabled: true, Unprefixed: unprefixed}
	if err := f.rt.Register(context.Background(), spec); err != nil {
		f.t.Fatalf("Register(%s): %v", name, err)
	}
}

// listed lists the exposed tool names, in order.
func (f *fleet) listed() []string {
	var out []string
	for _, t := range f.rt.Tools() {
		out = append(out, t.Name)
	}
	return out
}

func (f *fleet) warnings(server string) []string {
	st, _ := f.rt.ServerStatus(server)
	return st.Warnings
}

func TestExposureBareNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t)
		f.register("ns", false, "echo")
		f.register("bare", true, "echo", "add")
		if err := f.rt.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"mcp__ns__echo", "echo", "add"}, f.listed()); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		for _, tt := range []struct{ name, server, tool string }{
			{"echo", "bare", "echo"},
			{"add", "bare", "add"},
			{"mcp__bare__add", "bare", "add"},
			{"mcp__ns__echo", "ns", "echo"},
		} {
			server, tool, ok := f.rt.ResolveTool(tt.name)
			if !ok || server != tt.server || tool != tt.tool {
				t.Errorf("ResolveTool(%q) = %q, %q, %v; want %q, %q", tt.name, server, tool, ok, tt.server, tt.tool)
			}
		}
		for _, name := range []string{"missing", "mcp__nobody__echo", ""} {
			if s, tool, ok := f.rt.ResolveTool(name); ok {
				t.Errorf("ResolveTool(%q) = %q, %q; want not found", name, s, tool)
			}
		}
		// The namespaced name reaches the tool, and the catalog keeps both.
		raw, err := f.rt.Call(context.Background(), "mcp__bare__add", []byte(`{}`), nil, nil)
		if err != nil || !strings.Contains(string(raw), "ok add") {
			t.Errorf("Call(mcp__bare__add) = %s, %v", raw, err)
		}
		def, ok := f.rt.LookupTool("mcp__bare__add")
		if !ok || def.Name != "add" || def.Server != "bare" || def.Tool != "add" || def.MCP().Name != "add" {
			t.Errorf("LookupTool(mcp__bare__add) = %+v, %v; want Name add of server bare", def, ok)
		}
		if got := f.rt.ToolsOf(nil, func(s string) bool { return s == "bare" }); len(got) != 2 || got[0].Name != "echo" {
			t.Errorf("ToolsOf(bare) = %+v, want echo and add", got)
		}
		if diff := cmp.Diff([]string{"bare"}, f.rt.Unprefixed()); diff != "" {
			t.Errorf("Unprefixed (-want +got):\n%s", diff)
		}
	})
}

// Two unprefixed servers listing the same name: the one registered first
// keeps it, whichever listed first; the other's is hidden, reachable by
// its namespaced name, and its status says so, naming both servers.
func TestExposureCollisionHidesTheLaterServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t)
		f.register("first", true, "search", "a")
		f.add("second", "search", "b")
		// first is disabled while second lists its tools: second's search
		// is exposed, until first is enabled again.
		if err := f.rt.SetEnabled(context.Background(), "first", false); err != nil {
			t.Fatal(err)
		}
		if err := f.rt.Register(context.Background(), ServerSpec{Name: "second", Command: "fake-server", Enabled: true, Unprefixed: true}); err != nil {
			t.Fatal(err)
		}
		if err := f.rt.WaitReady(context.Background(), "second"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"search", "b"}, f.listed()); diff != "" {
			t.Errorf("tools with first disabled (-want +got):\n%s", diff)
		}
		if s, _, _ := f.rt.ResolveTool("search"); s != "second" {
			t.Errorf("search resolves to %q with first disabled, want second", s)
		}
		if w := f.warnings("second"); len(w) != 0 {
			t.Errorf("second's warnings %q, want none", w)
		}

		if err := f.rt.SetEnabled(context.Background(), "first", true); err != nil {
			t.Fatal(err)
		}
		if err := f.rt.WaitReady(context.Background(), "first"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"search", "a", "b"}, f.listed()); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if s, _, _ := f.rt.ResolveTool("search"); s != "first" {
			t.Errorf("search resolves to %q, want first (registered first)", s)
		}
		want := []string{`tool "search" is hidden: server "first", registered earlier, exposes a tool of that name without prefix too; call this one as mcp__second__search`}
		if diff := cmp.Diff(want, f.warnings("second")); diff != "" {
			t.Errorf("second's warnings (-want +got):\n%s", diff)
		}
		if w := f.warnings("first"); len(w) != 0 {
			t.Errorf("first's warnings %q, want none", w)
		}
		raw, err := f.rt.Call(context.Background(), "mcp__second__search", []byte(`{}`), nil, nil)
		if err != nil || !strings.Contains(string(raw), "ok search") {
			t.Errorf("the hidden tool by its namespaced name: %s, %v", raw, err)
		}

		// first disabled again: second's search comes back, its warning goes.
		if err := f.rt.SetEnabled(context.Background(), "first", false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"search", "b"}, f.listed()); diff != "" {
			t.Errorf("tools after first is disabled (-want +got):\n%s", diff)
		}
		if w := f.warnings("second"); len(w) != 0 {
			t.Errorf("second's warnings %q after first is disabled, want none", w)
		}
	})
}

// Names an unprefixed server may not expose by themselves: a host tool's,
// and one that reads as namespaced.
func TestExposureReservedNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t, "activate_tools")
		f.register("bare", true, "activate_tools", "mcp__x__y", "ok")
		if err := f.rt.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"ok"}, f.listed()); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if _, _, ok := f.rt.ResolveTool("activate_tools"); ok {
			t.Error("a host tool's name resolves to a server")
		}
		if s, tool, ok := f.rt.ResolveTool("mcp__x__y"); ok {
			t.Errorf("mcp__x__y resolves to %q %q: a namespaced name is always read as one, and there is no server x", s, tool)
		}
		want := []string{
			`tool "activate_tools" is not exposed by its own name: it is the name of one of the host's own tools; call it as mcp__bare__activate_tools`,
			`tool "mcp__x__y" is not exposed by its own name: it reads as a namespaced name; call it as mcp__bare__mcp__x__y`,
		}
		if diff := cmp.Diff(want, f.warnings("bare")); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
		if _, err := f.rt.Call(context.Background(), "mcp__bare__activate_tools", []byte(`{}`), nil, nil); err != nil {
			t.Errorf("the tool by its namespaced name: %v", err)
		}
	})
}

// With the tools known, registering or enabling a server that would
// expose a name twice is refused, naming both servers and the tool.
func TestCheckExposure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t, "activate_tools")
		f.register("first", true, "search", "a")
		f.register("ns", false, "search")
		if err := f.rt.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		last := func(server string, tools ...string) []Tool {
			var out []Tool
			for _, n := range tools {
				out = append(out, Tool{Name: ToolName(server, n), Server: server, Tool: n})
			}
			return out
		}
		spec := func(name string, unprefixed bool, tools ...string) ServerSpec {
			return ServerSpec{Name: name, Enabled: true, Unprefixed: unprefixed, LastCatalog: last(name, tools...)}
		}
		tests := []struct {
			name  string
			specs []ServerSpec
			want  []string
		}{
			{"no collision", []ServerSpec{spec("second", true, "b")}, nil},
			{"unknown tools", []ServerSpec{spec("second", true)}, nil},
			{"prefixed", []ServerSpec{spec("second", false, "search")}, nil},
			{"with a registered server", []ServerSpec{spec("second", true, "search", "b")}, []string{
				`name collision: server "second": tool "search" is also exposed by its own name by server "first" (set "prefix": true on one of them, or leave the tool out with "excludeTools")`}},
			{"excluded", []ServerSpec{func() ServerSpec { s := spec("second", true, "search"); s.ExcludeTools = []string{"search"}; return s }()}, nil},
			{"disabled", []ServerSpec{func() ServerSpec { s := spec("second", true, "search"); s.Enabled = false; return s }()}, nil},
			{"between two new ones", []ServerSpec{spec("x", true, "t"), spec("y", true, "t")}, []string{
				`name collision: server "y": tool "t" is also exposed by its own name by server "x" (set "prefix": true on one of them, or leave the tool out with "excludeTools")`}},
			{"reserved", []ServerSpec{spec("second", true, "activate_tools", "mcp__a__b")}, []string{
				`name collision: server "second": tool "activate_tools" cannot be exposed by its own name: it is the name of one of the host's own tools (set "prefix": true, or leave the tool out with "excludeTools")`,
				`name collision: server "second": tool "mcp__a__b" cannot be exposed by its own name: it reads as a namespaced name (set "prefix": true, or leave the tool out with "excludeTools")`}},
			// Replacing first itself: its registered catalog is its own.
			{"replacing itself", []ServerSpec{spec("first", true)}, nil},
			// ns turned unprefixed: its registered catalog counts.
			{"registered catalog", []ServerSpec{spec("ns", true)}, []string{
				`name collision: server "ns": tool "search" is also exposed by its own name by server "first" (set "prefix": true on one of them, or leave the tool out with "excludeTools")`}},
		}
		for _, tt := range tests {
			err := f.rt.CheckExposure(tt.specs...)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
				if !errors.Is(err, ErrNameCollision) {
					t.Errorf("%s: errors.Is(%v, ErrNameCollision) = false", tt.name, err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s: CheckExposure (-want +got):\n%s", tt.name, diff)
			}
		}

		// Enabling: second runs (its search hidden) while first is
		// disabled; enabling first then is refused.
		f.register("second", true, "search")
		if err := f.rt.WaitReady(context.Background(), "second"); err != nil {
			t.Fatal(err)
		}
		if err := f.rt.SetEnabled(context.Background(), "first", false); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		err := f.rt.CheckEnable("first")
		want := `name collision: server "first": tool "search" is also exposed by its own name by server "second"`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("CheckEnable(first) = %v, want %q…", err, want)
		}
		if err := f.rt.CheckEnable("ns"); err != nil {
			t.Errorf("CheckEnable(ns) = %v, want nil (a prefixed server)", err)
		}
	})
}

// A server's last known catalog is listed under the names it exposes now.
func TestExposureRestoredCatalog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t)
		f.add("bare", "echo")
		last := []Tool{{Name: "mcp__bare__echo", Server: "bare", Tool: "echo"}}
		err := f.rt.Register(context.Background(), ServerSpec{Name: "bare", Command: "fake-server", Unprefixed: true, LastCatalog: last})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		st, _ := f.rt.ServerStatus("bare")
		if st.State != StateDisabled {
			t.Fatalf("state %s, want disabled", st.State)
		}
		if err := f.rt.SetEnabled(context.Background(), "bare", true); err != nil {
			t.Fatal(err)
		}
		// Before the server lists: the restored catalog, under the bare name.
		if got := f.listed(); len(got) != 1 || got[0] != "echo" {
			t.Errorf("tools before listing = %q, want [echo]", got)
		}
		if last[0].Name != "mcp__bare__echo" {
			t.Errorf("the spec's LastCatalog was renamed to %q", last[0].Name)
		}
		if recs := ToolRecords(f.rt.Tools()); len(recs) != 1 || recs[0].Name != "mcp__bare__echo" {
			t.Errorf("journal records %+v, want the namespaced name", recs)
		}
	})
}

// Tools named in ways model APIs refuse are listed mapped, namespaced or
// bare; the mapped name, and the own one namespaced, reach the tool, and
// the server is called by its own name. An unprefixed server's mapped
// bare name takes part in collisions like any other.
func TestExposureMappedNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := startFleet(t)
		f.register("ns", false, "get weather", "a.b", "a/b")
		f.register("bare", true, "files/read", "x_y")
		f.register("late", true, "x.y", "files_read", "ok")
		if err := f.rt.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := []string{"mcp__ns__get_weather", "mcp__ns__a_b_" + hash8("a.b"), "mcp__ns__a_b_" + hash8("a/b"), "files_read", "x_y", "ok"}
		if diff := cmp.Diff(want, f.listed()); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		for _, tt := range []struct{ name, server, tool string }{
			{"mcp__ns__get_weather", "ns", "get weather"},
			{"mcp__ns__get weather", "ns", "get weather"},
			{"mcp__ns__a_b_" + hash8("a/b"), "ns", "a/b"},
			{"files_read", "bare", "files/read"},
			{"mcp__bare__files_read", "bare", "files/read"},
			{"x_y", "bare", "x_y"},
			{"mcp__late__x_y", "late", "x.y"},
			{"mcp__late__files_read", "late", "files_read"},
		} {
			server, tool, ok := f.rt.ResolveTool(tt.name)
			if !ok || server != tt.server || tool != tt.tool {
				t.Errorf("ResolveTool(%q) = %q, %q, %v; want %q, %q", tt.name, server, tool, ok, tt.server, tt.tool)
			}
			raw, err := f.rt.Call(context.Background(), ToolName(server, tool), []byte(`{}`), nil, nil)
			if err != nil || !strings.Contains(string(raw), "ok "+tt.tool) {
				t.Errorf("Call(%s) = %s, %v; want the server called with %q", tt.name, raw, err, tt.tool)
			}
		}
		// The runtime resolves a mapped name itself too.
		raw, err := f.rt.Call(context.Background(), "mcp__ns__get_weather", []byte(`{}`), nil, nil)
		if err != nil || !strings.Contains(string(raw), "ok get weather") {
			t.Errorf("Call(mcp__ns__get_weather) = %s, %v", raw, err)
		}
		if def, ok := f.rt.LookupTool("mcp__ns__get_weather"); !ok || def.Tool != "get weather" {
			t.Errorf("LookupTool(mcp__ns__get_weather) = %+v, %v", def, ok)
		}
		// A bare name is the mapped one only.
		if s, tool, ok := f.rt.ResolveTool("files/read"); ok {
			t.Errorf("ResolveTool(files/read) = %q, %q: an own name that is not exposed resolved", s, tool)
		}
		want = []string{
			`tool "x.y" is hidden: server "bare", registered earlier, exposes a tool of that name (x_y) without prefix too; call this one as mcp__late__x_y`,
			`tool "files_read" is hidden: server "bare", registered earlier, exposes a tool of that name without prefix too; call this one as mcp__late__files_read`,
		}
		if diff := cmp.Diff(want, f.warnings("late")); diff != "" {
			t.Errorf("late's warnings (-want +got):\n%s", diff)
		}
		err = f.rt.CheckExposure(ServerSpec{Name: "new", Enabled: true, Unprefixed: true, LastCatalog: []Tool{{Server: "new", Tool: "get weather"}, {Server: "new", Tool: "x y"}}})
		wantErr := `name collision: server "new": tool "x y" is also exposed by its own name (x_y) by server "bare"`
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) || strings.Contains(err.Error(), "get weather") {
			t.Errorf("CheckExposure = %v, want %q only", err, wantErr)
		}
	})
}

// A smaller budget shortens names, listed and restored alike.
func TestExposureBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fleet{t: t, srvs: map[string]*fakeServer{}}
		f.rt = New(Options{
			MaxToolName: 20,
			dial: func(gen uint64, spec *ServerSpec, cio connIO) (conn, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.srvs[spec.Name].dial(gen, spec, cio)
			},
		})
		t.Cleanup(func() { _ = f.rt.Close(context.Background()) })
		f.register("srv", false, "short", "a_rather_long_name")
		if err := f.rt.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		long := "mcp__srv__" + shortName("a_rather_long_name", 20-len("mcp__srv__"), 0)
		if diff := cmp.Diff([]string{"mcp__srv__short", long}, f.listed()); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if len(long) > 20 {
			t.Errorf("%q is over the budget", long)
		}
		if _, tool, _ := f.rt.ResolveTool(long); tool != "a_rather_long_name" {
			t.Errorf("ResolveTool(%q) = %q", long, tool)
		}
	})
}
