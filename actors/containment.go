package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// How stdio servers' processes are contained (supervision.Containment),
// journaled, and reclaimed after a crash of the host.

// ContainmentStatus is how a running stdio server's processes are held
// together, for its status.
type ContainmentStatus struct {
	// Mode is "cgroup" (a cgroup v2 of its own: stopping it kills every
	// process in it) or "process-group" (its process group, and the
	// processes that carry its environment marker).
	Mode string `json:"mode"`
	// Cgroup is the server's cgroup directory, in cgroup mode.
	Cgroup string `json:"cgroup,omitempty"`
	// Fallback says why it is not in a cgroup, in process-group mode.
	Fallback string `json:"fallback,omitempty"`
	// Limits lists each resource limit set and how it is enforced, e.g.
	// "memory 512 MiB: cgroup memory.max".
	Limits []string `json:"limits,omitempty"`
}

// containmentWrite bounds a journal write about containment: the record
// written before a spawn, the records deleted after a reclaim.
const containmentWrite = 5 * time.Second

// startContainment prepares the containment of this runtime's servers and,
// with a journal, stops what a previous life of the host left running. It
// runs in New, before any server starts.
func (r *Runtime) startContainment(opts Options) {
	co := opts.Containment
	if co.Logger == nil {
		co.Logger = r.logger
	}
	r.containment = supervision.NewContainment(co)
	if opts.ReapOrphans {
		s, err := supervision.StartSubreaper()
		if err != nil {
			r.logger.Warn("orphans of servers are left to init", "err", err)
		} else {
			r.subreaper = s
		}
	}
	r.reclaimLeftovers()
}

// stopContainment runs in Close once every server's process is gone.
func (r *Runtime) stopContainment() {
	if err := r.containment.Close(); err != nil {
		r.logger.Warn("removing the servers' cgroups", "err", err)
	}
	if r.subreaper != nil {
		r.subreaper.Close()
	}
}

// reclaimLeftovers kills what the journal's containment records say is
// left of servers of an earlier life of the host (one SIGKILLed, or whose
// Close timed out), and deletes the records. The journal's lock means that
// life is over.
func (r *Runtime) reclaimLeftovers() {
	if r.journal == nil {
		return
	}
	recs, err := r.journal.Store().Containments()
	if err != nil {
		r.logger.Warn("reading the servers' containment records", "err", err)
		return
	}
	pls := make([]supervision.Placement, len(recs))
	for i, rec := range recs {
		pls[i] = placementOf(rec)
	}
	var ops []persistence.Op
	for i, res := range supervision.Reclaim(pls...) {
		rec, pl := recs[i], pls[i]
		if res.Killed > 0 {
			detail := fmt.Sprintf("stopped %d process(es) left by a previous run of the host (%s)", res.Killed, pl)
			r.logger.Warn("stopped processes a previous run of the host left", "server", rec.Server, "processes", res.Killed, "at", pl.String())
			ops = append(ops, persistence.AppendHistory(persistence.HistoryRecord{
				Kind: persistence.HistoryLifecycle, Server: rec.Server, Transition: "reclaimed", Detail: detail,
			}))
		}
		if res.Err != nil {
			r.logger.Warn("could not stop what a previous run of the host left", "server", rec.Server, "at", pl.String(), "err", res.Err)
			if errors.Is(res.Err, supervision.ErrGroupSurvived) {
				continue // tried again at the next start
			}
		}
		ops = append(ops, persistence.DeleteContainment(rec.ID))
	}
	if len(ops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), containmentWrite)
	defer cancel()
	if err := r.journal.Write(ctx, ops...); err != nil {
		r.logger.Warn("journaling the reclaim of a previous run's processes", "err", err)
	}
}

// recordContainment journals where an incarnation runs: durably before it
// is spawned (so a crash right after leaves a record), asynchronously once
// it runs (the process group completes it).
func (r *Runtime) recordContainment(server string, pl supervision.Placement, durable bool) {
	if r.journal == nil {
		return
	}
	op := persistence.PutContainment(persistence.ContainmentRecord{
		ID: pl.Marker, Server: server, Mode: string(pl.Mode), Cgroup: pl.Cgroup, Marker: pl.Marker,
		PGID: pl.PGID, LeaderStart: pl.LeaderStart, Session: pl.Session, BootID: pl.BootID,
		HostPID: os.Getpid(), Started: time.Now(),
	})
	if !durable {
		r.journal.WriteAsync([]persistence.Op{op}, nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), containmentWrite)
	defer cancel()
	if err := r.journal.Write(ctx, op); err != nil {
		r.logger.Warn("journaling a server's containment; a crash now may leave its processes running", "server", server, "err", err)
	}
}

// forgetContainment deletes the record of an incarnation whose processes
// are all gone.
func (r *Runtime) forgetContainment(id string) {
	if r.journal != nil {
		r.journal.WriteAsync([]persistence.Op{persistence.DeleteContainment(id)}, nil)
	}
}

func placementOf(rec persistence.ContainmentRecord) supervision.Placement {
	return supervision.Placement{
		Mode: supervision.ContainmentMode(rec.Mode), Cgroup: rec.Cgroup, Marker: rec.Marker,
		PGID: rec.PGID, LeaderStart: rec.LeaderStart, Session: rec.Session, BootID: rec.BootID,
	}
}

// containmentStatusOf is the status of a cell a process started in.
func containmentStatusOf(cell *supervision.Cell) *ContainmentStatus {
	if cell == nil {
		return nil
	}
	st := &ContainmentStatus{
		Mode:     string(cell.Mode()),
		Cgroup:   cell.Placement().Cgroup,
		Fallback: cell.Fallback(),
		Limits:   cell.Enforcement().Lines(cell.Limits()),
	}
	return st
}

// containmentOf is the containment of a connection's process; nil for a
// remote server or a test's fake.
func containmentOf(c conn) *ContainmentStatus {
	if sc, ok := c.(*stdioConn); ok {
		return sc.contain
	}
	return nil
}

// stderrInReason is how many of the last stderr lines an exit's reason
// quotes: a wrapper (npx, uvx, sh -c) that exits says why on stderr.
const stderrInReason = 3

// withStderr adds the last non-blank lines of tail to an exit's reason:
// `exit status 2; stderr ends: "npm ERR! 404 Not Found"`.
func withStderr(reason string, tail []string) string {
	var lines []string
	for i := len(tail) - 1; i >= 0 && len(lines) < stderrInReason; i-- {
		if l := strings.TrimSpace(tail[i]); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return reason
	}
	var b strings.Builder
	b.WriteString(reason)
	b.WriteString("; stderr ends: ")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if len(l) > 200 {
			l = l[:200] + "…"
		}
		b.WriteString(strconv.QuoteToGraphic(l))
		if i > 0 {
			b.WriteString(", ")
		}
	}
	return b.String()
}
