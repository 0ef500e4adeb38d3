package actors

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// What the runtime journals, and how its types become records.

// stderrTailLines is how many stderr lines an exit record keeps.
const stderrTailLines = 10

// stderrTail keeps a server's last stderr lines. The stderr pump writes it;
// the actor reads it when the process exits.
type stderrTail struct {
	mu     sync.Mutex
	lines  [stderrTailLines]string
	next   int
	n      int
	lastAt time.Time // when the last line came
}

func (t *stderrTail) add(line string) {
	const maxLine = 512
	if len(line) > maxLine {
		line = line[:maxLine] + "…"
	}
	t.mu.Lock()
	t.lines[t.next] = line
	t.next = (t.next + 1) % stderrTailLines
	t.n = min(t.n+1, stderrTailLines)
	t.lastAt = time.Now()
	t.mu.Unlock()
}

// last returns the last line and when it came, keeping the lines; "" when
// this incarnation wrote none.
func (t *stderrTail) last() (string, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return "", time.Time{}
	}
	return t.lines[(t.next-1+stderrTailLines)%stderrTailLines], t.lastAt
}

// take returns the lines, oldest first, and forgets them: the next
// incarnation's exit reports its own.
func (t *stderrTail) take() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return nil
	}
	out := make([]string, 0, t.n)
	for i := range t.n {
		out = append(out, t.lines[(t.next-t.n+i+stderrTailLines)%stderrTailLines])
	}
	t.n = 0
	return out
}

// recordLifecycle journals one of the server's transitions. It never
// blocks: the record joins the journal's bounded queue.
func (a *serverActor) recordLifecycle(transition, detail string, pid int, stderr []string) {
	if a.rt.journal == nil {
		return
	}
	if a.entry.home != nil {
		detail = "legacy incarnation: " + detail
	}
	a.rt.journal.Ingest(a.spec.Name, persistence.AppendHistory(persistence.HistoryRecord{
		Time: time.Now(), Kind: persistence.HistoryLifecycle, Server: a.spec.Name,
		Transition: transition, Detail: detail, PID: pid, Stderr: stderr,
	}))
}

// recordCatalog journals the catalog the server just listed, so Tools can
// answer with it after a restart. Catalogs are rare and small: they do not
// take a place in the bounded queue.
func (a *serverActor) recordCatalog(cat *catalog) {
	if a.rt.journal == nil || a.spec.Hidden {
		return
	}
	a.rt.journal.WriteAsync([]persistence.Op{persistence.PutCatalog(persistence.CatalogRecord{
		Server: a.spec.Name, Tools: ToolRecords(cat.tools), Updated: time.Now(),
	})}, nil)
}

// ToolRecords turns tools into their journal records. A record's name is
// always mcp__<server>__<tool> with the server's own name for the tool,
// whatever name the tool is exposed under.
func ToolRecords(tools []Tool) []persistence.ToolRecord {
	out := make([]persistence.ToolRecord, len(tools))
	for i, t := range tools {
		r := persistence.ToolRecord{
			Name: ToolName(t.Server, t.Tool), Tool: t.Tool, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Meta: t.Meta,
			Destructive: t.Destructive, TaskSupport: t.TaskSupport,
		}
		if t.Annotations != nil {
			r.Annotations, _ = json.Marshal(t.Annotations)
		}
		if len(t.Icons) > 0 {
			r.Icons, _ = json.Marshal(t.Icons)
		}
		out[i] = r
	}
	return out
}

// ToolsFromRecords turns a journaled catalog of server back into tools. A
// field that no longer decodes is left empty rather than failing the rest.
func ToolsFromRecords(server string, recs []persistence.ToolRecord) []Tool {
	out := make([]Tool, len(recs))
	for i, r := range recs {
		t := Tool{
			Name: r.Name, Server: server, Tool: r.Tool, Title: r.Title, Description: r.Description,
			InputSchema: rawJSON(r.InputSchema), OutputSchema: rawJSON(r.OutputSchema), Meta: rawJSON(r.Meta),
			Destructive: r.Destructive, TaskSupport: r.TaskSupport,
		}
		if len(r.Annotations) > 0 {
			var ann protocol.ToolAnnotations
			if json.Unmarshal(r.Annotations, &ann) == nil {
				t.Annotations = &ann
			}
		}
		if len(r.Icons) > 0 {
			_ = json.Unmarshal(r.Icons, &t.Icons)
		}
		out[i] = t
	}
	return out
}

// restoredCatalog is a catalog rebuilt from a server's last known tools,
// named as spec exposes them within budget. tools is not changed.
func restoredCatalog(spec *ServerSpec, tools []Tool, budget int) *catalog {
	c := &catalog{tools: slices.Clone(tools), byName: make(map[string]int, len(tools)), restored: true}
	own := make([]string, len(tools))
	for i := range c.tools {
		own[i] = c.tools[i].Tool
		c.byName[own[i]] = i
	}
	c.naming = MapNames(spec.Name, own, budget)
	for i := range c.tools {
		c.tools[i].Name = exposedName(spec, c.naming, own[i])
	}
	return c
}
