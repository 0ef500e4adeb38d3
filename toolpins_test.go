package mcpvisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// review returns the review of one tool, waiting (on ToolReviewsChanged)
// until cond holds for it.
func waitReview(t *testing.T, h *mcpvisor.Host, server, tool string, cond func(mcpvisor.ToolReview) bool) mcpvisor.ToolReview {
	t.Helper()
	ctx := modernCtx(t)
	for {
		changed := h.ToolReviewsChanged()
		for _, rv := range h.ToolReviews() {
			if rv.Server == server && rv.Tool == tool && cond(rv) {
				return rv
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no review of %s/%s as wanted: %+v", server, tool, h.ToolReviews())
		}
	}
}

func anyReview(mcpvisor.ToolReview) bool { return true }

func approve(t *testing.T, h *mcpvisor.Host, server, tool string) {
	t.Helper()
	rv := waitReview(t, h, server, tool, anyReview)
	if err := h.ApproveTool(context.Background(), server, tool, rv.Hash, "test"); err != nil {
		t.Fatalf("ApproveTool(%s, %s): %v", server, tool, err)
	}
}

// descriptions is every description a model could be shown: the catalog
// and a session's tool list.
func descriptions(t *testing.T, h *mcpvisor.Host) string {
	t.Helper()
	var b strings.Builder
	for _, tool := range h.Tools() {
		b.WriteString(tool.Description + "\n")
	}
	s := h.Session("pin-test", "")
	if err := s.Activate(context.Background(), "rp"); err != nil && !errors.Is(err, mcpvisor.ErrUnknownGroup) {
		t.Fatalf("Activate: %v", err)
	}
	defs, err := json.Marshal(s.Tools())
	if err != nil {
		t.Fatal(err)
	}
	b.Write(defs)
	return b.String()
}

// Under hold, a server's tools wait for a person; after approval, a rug
// pull (a changed description, announced by list_changed) cannot put the
// new text in front of a model, and a call to the tool is refused, until a
// person approves the change. Decisions survive a restart.
func TestToolPinHold(t *testing.T) {
	dir := t.TempDir()
	opts := mcpvisor.Options{DataDir: dir, ToolPolicy: mcpvisor.ToolPolicyHold}
	h := openHost(t, opts, mcptest("rp"))
	waitReady(t, h, "rp")
	ctx := context.Background()

	if got := toolsOf(h, "rp"); len(got) != 0 {
		t.Fatalf("tools exposed before any approval: %v", got)
	}
	rv := waitReview(t, h, "rp", "echo", anyReview)
	if !rv.Held || rv.State != "new" || rv.Definition.Description == "" || rv.Name != "mcp__rp__echo" {
		t.Errorf("echo's review before approval: %+v", rv)
	}
	if st := status(t, h, "rp"); st.ToolPolicy != "hold" || st.Held == 0 || len(st.Reviews) != st.Held {
		t.Errorf("status: policy %q, held %d, reviews %d", st.ToolPolicy, st.Held, len(st.Reviews))
	}
	_, err := h.Call(ctx, "mcp__rp__echo", json.RawMessage(`{}`))
	if !errors.Is(err, mcpvisor.ErrToolWithheld) || !strings.Contains(err.Error(), "not been approved") {
		t.Fatalf("call of a held tool: %v, want ErrToolWithheld", err)
	}

	approve(t, h, "rp", "echo")
	approve(t, h, "rp", "rug_pull")
	if got := toolsOf(h, "rp"); !slices.Equal(got, []string{"echo", "rug_pull"}) {
		t.Fatalf("tools after approving echo and rug_pull: %v", got)
	}
	approved := waitReview(t, h, "rp", "slow", anyReview) // still held
	if !approved.Held {
		t.Errorf("slow not held: %+v", approved)
	}
	call(t, h, "mcp__rp__echo", `{"x":1}`)

	// The rug pull.
	call(t, h, "mcp__rp__rug_pull", `{}`)
	changed := waitReview(t, h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.State == "changed" })
	if !changed.Held || changed.Approved == "" || changed.Approved == changed.Hash ||
		!strings.Contains(changed.Diff, "id_rsa") || !strings.Contains(changed.Definition.Description, "id_rsa") {
		t.Errorf("the changed echo's review: %+v", changed)
	}
	var rules []string
	for _, f := range changed.Findings {
		rules = append(rules, f.Rule)
	}
	for _, want := range []string{"secret-path", "conceal-from-user", "directive-tag"} {
		if !slices.Contains(rules, want) {
			t.Errorf("findings %v lack %s", rules, want)
		}
	}
	if got := toolsOf(h, "rp"); !slices.Equal(got, []string{"rug_pull"}) {
		t.Errorf("tools after the rug pull: %v, want echo withheld", got)
	}
	if d := descriptions(t, h); strings.Contains(d, "id_rsa") {
		t.Errorf("the changed description reached a model's view:\n%s", d)
	}
	if _, err := h.Call(ctx, "mcp__rp__echo", json.RawMessage(`{}`)); !errors.Is(err, mcpvisor.ErrToolWithheld) ||
		!strings.Contains(err.Error(), "changed since it was approved") {
		t.Errorf("call of the changed echo: %v, want ErrToolWithheld", err)
	}

	// What was shown must be what is decided.
	if err := h.ApproveTool(ctx, "rp", "echo", changed.Approved, "test"); !errors.Is(err, mcpvisor.ErrStaleReview) {
		t.Errorf("approving the old hash: %v, want ErrStaleReview", err)
	}
	if err := h.RejectTool(ctx, "rp", "echo", changed.Hash, "test"); err != nil {
		t.Fatalf("RejectTool: %v", err)
	}
	if rv := waitReview(t, h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.Rejected }); !rv.Held {
		t.Errorf("a rejected definition is exposed: %+v", rv)
	}

	// Journaled: the first listing, the change with its definition, every
	// decision with who made it.
	hist, err := h.Journal().History(mcpvisor.HistoryFilter{Kind: mcpvisor.HistoryTool, Tool: "mcp__rp__echo"})
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, r := range hist {
		trail = append(trail, r.Transition+"/"+r.By)
		if r.Transition == "changed" && (r.Hash != changed.Hash || !strings.Contains(string(r.Definition), "id_rsa") || !strings.Contains(r.Detail, "id_rsa")) {
			t.Errorf("the change's record: %+v", r)
		}
	}
	if want := []string{"new/", "approved/test", "changed/", "rejected/test"}; !slices.Equal(trail, want) {
		t.Errorf("echo's history %v, want %v", trail, want)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// A new life: the server lists the approved echo again (a new
	// process), and the pins hold without anyone approving anew.
	h = openHost(t, opts, mcptest("rp"))
	// Called at once, before the server lists its tools in this life: the
	// last catalog, from the journal, lacks the held tool, and the call
	// waits for the live one rather than calling it unknown.
	if _, err := h.Call(ctx, "mcp__rp__slow", json.RawMessage(`{"ms":0}`)); !errors.Is(err, mcpvisor.ErrToolWithheld) {
		t.Errorf("call of a held tool while the server starts: %v, want ErrToolWithheld", err)
	}
	waitReady(t, h, "rp")
	if got := toolsOf(h, "rp"); !slices.Equal(got, []string{"echo", "rug_pull"}) {
		t.Errorf("tools after a restart: %v, want the approved ones", got)
	}
}

// Under warn, every tool is exposed; a change is exposed too, and reported
// until a person approves it.
func TestToolPinWarn(t *testing.T) {
	h := openHost(t, mcpvisor.Options{ToolPolicy: mcpvisor.ToolPolicyWarn}, mcptest("rp"))
	waitReady(t, h, "rp")
	all := toolsOf(h, "rp")
	if !slices.Contains(all, "echo") || len(h.ToolReviews()) != 0 {
		t.Fatalf("warn: tools %v, reviews %+v; want all exposed, none to review", all, h.ToolReviews())
	}
	call(t, h, "mcp__rp__rug_pull", `{}`)
	rv := waitReview(t, h, "rp", "echo", anyReview)
	if rv.Held || rv.State != "changed" || len(rv.Findings) == 0 {
		t.Errorf("warn: the changed echo's review: %+v", rv)
	}
	if !strings.Contains(descriptions(t, h), "id_rsa") {
		t.Error("warn: the changed description is not exposed")
	}
	if err := h.ApproveTool(context.Background(), "rp", "echo", rv.Hash, "test"); err != nil {
		t.Fatal(err)
	}
	if got := h.ToolReviews(); len(got) != 0 {
		t.Errorf("reviews after approving: %+v", got)
	}
}

func TestToolPolicyConfig(t *testing.T) {
	_, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: t.TempDir(), ToolPolicy: "strict"})
	if !errors.Is(err, mcpvisor.ErrConfig) || !strings.Contains(err.Error(), "strict") {
		t.Errorf("Open with ToolPolicy strict: %v, want ErrConfig naming it", err)
	}
	_, err = mcpvisor.ParseConfig([]byte(`{"mcpServers":{"a":{"command":"x","toolPolicy":"maybe"}}}`))
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "toolPolicy") {
		t.Errorf("config with toolPolicy maybe: %v, want an error naming the server and field", err)
	}
}

// A pin recorded unattended under warn does not pass under hold; one a
// person approved under warn does.
func TestToolPinWarnThenHold(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, mcpvisor.Options{DataDir: dir, ToolPolicy: mcpvisor.ToolPolicyWarn}, mcptest("rp"))
	waitReady(t, h, "rp")
	call(t, h, "mcp__rp__rug_pull", `{}`)
	rv := waitReview(t, h, "rp", "echo", anyReview)
	if err := h.ApproveTool(context.Background(), "rp", "echo", rv.Hash, "test"); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// The new process lists echo as it was first seen (unattended pin
	// superseded by the person's approval of the poisoned one): under hold
	// neither passes, since what is listed now is not what was approved.
	h = openHost(t, mcpvisor.Options{DataDir: dir, ToolPolicy: mcpvisor.ToolPolicyHold}, mcptest("rp"))
	waitReady(t, h, "rp")
	if got := toolsOf(h, "rp"); len(got) != 0 {
		t.Errorf("under hold after warn: %v exposed, want none (no person approved these definitions)", got)
	}
	echo := waitReview(t, h, "rp", "echo", anyReview)
	if echo.State != "changed" || !echo.Held || !strings.Contains(echo.Diff, "id_rsa") {
		t.Errorf("echo under hold: %+v, want changed from the approved poisoned one", echo)
	}
	if slow := waitReview(t, h, "rp", "slow", anyReview); slow.State != "new" || !slow.Held {
		t.Errorf("slow under hold: %+v, want new and held", slow)
	}
}

// shown is every tool definition a client could be shown, as JSON: the
// catalog and a session's tool list with the server's group active.
func shown(t *testing.T, h *mcpvisor.Host, server string) string {
	t.Helper()
	s := h.Session("pin-test-"+server, "")
	if err := s.Activate(context.Background(), server); err != nil && !errors.Is(err, mcpvisor.ErrUnknownGroup) {
		t.Fatalf("Activate: %v", err)
	}
	catalog, err := json.Marshal(h.Tools())
	if err != nil {
		t.Fatal(err)
	}
	session, err := json.Marshal(s.Tools())
	if err != nil {
		t.Fatal(err)
	}
	return string(catalog) + "\n" + string(session)
}

// A tool's icons and _meta are pinned: a server that swaps an approved
// tool's icon URL or its MCP Apps interface (_meta.ui.resourceUri) gets
// the tool withheld until a person approves the change, and the reason
// names what changed. Before that, clients are shown the approved ones.
func TestToolPinIconsAndMeta(t *testing.T) {
	for _, tt := range []struct {
		what, approved, swapped, part string
	}{
		{"icons", "https://cdn.example.com/echo.png", "https://tracker.example.net/echo.png", "icons/0/src"},
		{"meta", "ui://mcptest/echo.html", "ui://mcptest/phish.html", "_meta/ui/resourceUri"},
	} {
		t.Run(tt.what, func(t *testing.T) {
			h := openHost(t, mcpvisor.Options{ToolPolicy: mcpvisor.ToolPolicyHold}, mcptest("rp", "-rug-pull", tt.what))
			waitReady(t, h, "rp")
			approve(t, h, "rp", "echo")
			approve(t, h, "rp", "rug_pull")
			if got := shown(t, h, "rp"); !strings.Contains(got, tt.approved) {
				t.Fatalf("the approved %s is not shown: %s", tt.what, got)
			}

			call(t, h, "mcp__rp__rug_pull", `{}`)
			rv := waitReview(t, h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.State == "changed" })
			if !rv.Held || !strings.Contains(rv.Diff, tt.swapped) || len(rv.Changes) != 1 ||
				rv.Changes[0].Field+rv.Changes[0].Path != tt.part {
				t.Errorf("echo's review after its %s changed: held %v, changes %+v, diff %q", tt.what, rv.Held, rv.Changes, rv.Diff)
			}
			if got := toolsOf(h, "rp"); !slices.Equal(got, []string{"rug_pull"}) {
				t.Errorf("tools after the %s changed: %v, want echo withheld", tt.what, got)
			}
			if got := shown(t, h, "rp"); strings.Contains(got, tt.swapped) || strings.Contains(got, tt.approved) {
				t.Errorf("echo's %s still reaches clients: %s", tt.what, got)
			}
			_, err := h.Call(context.Background(), "mcp__rp__echo", json.RawMessage(`{}`))
			if !errors.Is(err, mcpvisor.ErrToolWithheld) || !strings.Contains(err.Error(), "changed since it was approved ("+tt.part+")") {
				t.Errorf("call of echo after its %s changed: %v, want ErrToolWithheld naming %s", tt.what, err, tt.part)
			}

			// Approving the change exposes it.
			if err := h.ApproveTool(context.Background(), "rp", "echo", rv.Hash, "test"); err != nil {
				t.Fatal(err)
			}
			if got := shown(t, h, "rp"); !strings.Contains(got, tt.swapped) {
				t.Errorf("the approved change is not shown: %s", got)
			}
		})
	}
}

// A tool name with a Cyrillic look-alike letter gets a hold finding that
// says what it reads as.
func TestToolPinLookalikeName(t *testing.T) {
	const name = "r\u0435ad_file" // е is U+0435 CYRILLIC SMALL LETTER IE
	h := openHost(t, mcpvisor.Options{ToolPolicy: mcpvisor.ToolPolicyHold}, mcptest("lk", "-tool-name", name, "-tool-name", "read_file"))
	waitReady(t, h, "lk")
	rv := waitReview(t, h, "lk", name, anyReview)
	i := slices.IndexFunc(rv.Findings, func(f mcpvisor.ToolFinding) bool { return f.Rule == "mixed-script" })
	if i < 0 {
		t.Fatalf("no mixed-script finding for %q: %+v", name, rv.Findings)
	}
	if f := rv.Findings[i]; f.Path != "name" || f.Severity != "hold" || !strings.Contains(f.Reason, `reads as "read_file"`) ||
		!strings.Contains(f.Excerpt, "U+0435") {
		t.Errorf("the look-alike's finding: %+v", f)
	}
	if plain := waitReview(t, h, "lk", "read_file", anyReview); len(plain.Findings) != 0 {
		t.Errorf("the plain read_file has findings: %+v", plain.Findings)
	}
}

// pinWithoutIconsAndMeta approves echo (listed with an icon and a
// _meta.ui) on a host in dir, closes it, and rewrites echo's pin as if
// the person had approved it without icons and _meta, its hashes recorded
// under hash version version. It returns echo's definition as listed.
func pinWithoutIconsAndMeta(t *testing.T, opts mcpvisor.Options, version int) toolpin.Definition {
	t.Helper()
	h := openHost(t, opts, mcptest("rp", "-rug-pull", "meta"))
	waitReady(t, h, "rp")
	def := waitReview(t, h, "rp", "echo", anyReview).Definition
	approve(t, h, "rp", "echo")
	approve(t, h, "rp", "rug_pull")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	store, err := persistence.Open(filepath.Join(opts.DataDir, "journal"), persistence.Options{MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	pins, err := store.Pins()
	if err != nil {
		t.Fatal(err)
	}
	legacy := def
	legacy.Icons, legacy.Meta = nil, nil
	if len(def.Icons) == 0 || len(def.Meta) == 0 || toolpin.Hash(legacy) != toolpin.LegacyHash(def) {
		t.Fatalf("echo lists no icons or _meta: %+v", def)
	}
	for _, p := range pins {
		if p.Server == "rp" && p.Tool == "echo" {
			if p.Approved != toolpin.Hash(def) || p.HashVersion != toolpin.HashVersion {
				t.Fatalf("echo's pin before the rewrite: %+v", p)
			}
			p.Approved, p.Seen, p.Definition, p.HashVersion = toolpin.LegacyHash(def), toolpin.LegacyHash(def), toolpin.Canonical(legacy), version
			if _, err := store.Apply([]persistence.Op{persistence.PutPin(p)}); err != nil {
				t.Fatal(err)
			}
			return def
		}
	}
	t.Fatalf("no pin of echo among %+v", pins)
	return def
}

// A pin recorded before icons and _meta were pinned (hash version 1) does
// not withhold its tool after the upgrade: the tool, listed as it was
// approved, is exposed at once and its pin carried over to the current
// hash, which from then on covers its icons and _meta.
func TestToolPinVersion1Pin(t *testing.T) {
	opts := mcpvisor.Options{DataDir: t.TempDir(), ToolPolicy: mcpvisor.ToolPolicyHold}
	def := pinWithoutIconsAndMeta(t, opts, 0) // as version 1 left it

	h := openHost(t, opts, mcptest("rp", "-rug-pull", "meta"))
	waitReady(t, h, "rp")
	if got := toolsOf(h, "rp"); !slices.Equal(got, []string{"echo", "rug_pull"}) {
		t.Errorf("tools after the upgrade: %v, want echo and rug_pull (approved before it)", got)
	}
	for _, rv := range h.ToolReviews() {
		if rv.Tool == "echo" {
			t.Errorf("echo is up for review after the upgrade: %+v", rv)
		}
	}
	// The carried-over pin covers _meta: changing it withholds echo.
	call(t, h, "mcp__rp__rug_pull", `{}`)
	rv := waitReview(t, h, "rp", "echo", func(rv mcpvisor.ToolReview) bool { return rv.State == "changed" })
	if !rv.Held || rv.Approved != toolpin.Hash(def) || !strings.Contains(rv.Diff, "ui://mcptest/phish.html") {
		t.Errorf("echo after its _meta changed under the carried-over pin: %+v", rv)
	}
}

// The carry-over is for version 1 pins only: a tool approved under the
// current version without icons and _meta that lists them later is
// changed, though its legacy hash is the approved one.
func TestToolPinIconsAddedAfterApproval(t *testing.T) {
	opts := mcpvisor.Options{DataDir: t.TempDir(), ToolPolicy: mcpvisor.ToolPolicyHold}
	pinWithoutIconsAndMeta(t, opts, toolpin.HashVersion)

	h := openHost(t, opts, mcptest("rp", "-rug-pull", "meta"))
	waitReady(t, h, "rp")
	rv := waitReview(t, h, "rp", "echo", anyReview)
	if !rv.Held || rv.State != "changed" || !strings.Contains(rv.Diff, "icons: added") || !strings.Contains(rv.Diff, "_meta: added") {
		t.Errorf("echo, approved without icons and _meta, listing them: %+v", rv)
	}
	if got := toolsOf(h, "rp"); !slices.Equal(got, []string{"rug_pull"}) {
		t.Errorf("tools: %v, want echo withheld", got)
	}
}
