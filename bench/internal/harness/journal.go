package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// MjournalMulti is the record of the journal scenario's host run with
// JournalServers servers flooding at once.
const MjournalMulti = "mcpvisor-multi"

// journalStatsEvery is how often a host run reads the journal writer's
// counters, for the deepest queue and the moment the writer is done.
const journalStatsEvery = 10 * time.Millisecond

// Journal is scenario 10: a notification flood. The echo server's flood
// tool writes JournalEvents notifications as fast as it can; the host
// journals every one durably (or drops it past its bounded queue, and
// journals the count), and the harness follows each server's events with
// Journal().Subscribe until every one is journaled or counted as dropped.
// It reports durable events/s, drops, commits, the host's peak RSS above
// its baseline before Open (children are not counted) and the journal's
// size on disk, with one server and with JournalServers flooding at once.
// The raw contender reads the same flood off a pipe and counts the lines:
// what reading it costs with no host and no disk.
func Journal(ctx context.Context, env *Env) ([]Record, error) {
	n, k := env.Sizes.JournalEvents, env.Sizes.JournalServers
	env.logf("%s: a flood of %d notifications: raw, mcpvisor with 1 server, mcpvisor with %d servers (%d each)", ScenarioJournal, n, k, n/k)
	recs := []Record{journalRaw(ctx, env, n)}
	for _, run := range []struct {
		name    string
		servers int
	}{{Mcpvisor, 1}, {MjournalMulti, k}} {
		if ctx.Err() != nil {
			break
		}
		recs = append(recs, journalHost(ctx, env, run.name, run.servers, n))
	}
	return recs, ctx.Err()
}

// journalRaw is the floor: one echo server on a raw pipe, the flood call
// written, every line read and counted until the answer.
func journalRaw(ctx context.Context, env *Env, n int) Record {
	rec := Record{Scenario: ScenarioJournal, Contender: Raw, Servers: 1, Calls: 1}
	rss := watchRSS()
	defer rss.end()
	conn, err := dialRaw(env.Server, false)
	if err != nil {
		return failedRecord(env, rec, err)
	}
	defer conn.close()
	wctx, cancel := context.WithTimeout(ctx, env.Sizes.JournalWait)
	defer cancel()
	defer context.AfterFunc(wctx, func() { conn.cmd.Process.Kill() })()
	t0 := time.Now()
	lines, err := conn.flood(n)
	elapsed := time.Since(t0)
	rec.Metrics = map[string]float64{
		"events":        float64(n),
		"lines":         float64(lines),
		"elapsed_ms":    millis(elapsed),
		"lines_per_sec": float64(lines) / elapsed.Seconds(),
		"peak_rss_mb":   rss.end(),
		"rss_base_mb":   rss.base / 1024,
	}
	if err != nil || lines != n {
		rec.Errors, rec.Note = 1, fmt.Sprintf("%d of %d lines before the answer (%v)", lines, n, err)
	}
	env.logf("  %-14s %d lines in %.2f s: %.0f lines/s, peak RSS %+.1f MiB %s",
		Raw, lines, elapsed.Seconds(), rec.Metrics["lines_per_sec"], rec.Metrics["peak_rss_mb"], rec.Note)
	return rec
}

// failedRecord is rec of a run that could not start, with the reason.
func failedRecord(env *Env, rec Record, err error) Record {
	rec.Errors, rec.Note = 1, err.Error()
	env.logf("  %-14s %s", rec.Contender, rec.Note)
	return rec
}

// floodFollow is one server's flood, followed in the journal.
type floodFollow struct {
	events             <-chan mcpvisor.JournalEvent
	journaled, dropped uint64
	done, answered     time.Duration // since the start: every event accounted for; the call answered
	callErr            error
}

// follow counts the server's flood events, and the drops journaled for it,
// until they account for n or the subscription ends.
func (f *floodFollow) follow(n int, t0 time.Time) {
	for ev := range f.events {
		switch ev.Method {
		case floodMethod:
			f.journaled++
		case mcpvisor.MethodEventsDrops:
			var p struct {
				Dropped uint64 `json:"dropped"`
			}
			if json.Unmarshal(ev.Params, &p) == nil {
				f.dropped += p.Dropped
			}
		}
		if f.journaled+f.dropped >= uint64(n) {
			f.done = time.Since(t0)
			return
		}
	}
}

// journalHost is one Host of servers echo servers (default options, a
// fresh data directory), each flooding n/servers notifications at once,
// each followed by a subscription to its events.
func journalHost(ctx context.Context, env *Env, name string, servers, n int) Record {
	rec := Record{Scenario: ScenarioJournal, Contender: name, Servers: servers, Calls: servers}
	rss := watchRSS()
	defer rss.end()
	// Unbounded rate: the scenario measures the journal, not the bound
	// that keeps a flood out of it (scenario flood).
	h, err := hostContender{}.startWith(ctx, env, servers, mcpvisor.Options{EventRate: mcpvisor.EventRate{PerSecond: -1}})
	if err != nil {
		return failedRecord(env, rec, err)
	}
	defer h.close()
	j := h.Journal()
	per := n / servers
	n = per * servers
	wctx, cancel := context.WithTimeout(ctx, env.Sizes.JournalWait)
	defer cancel()
	floods := make([]floodFollow, servers)
	for i := range floods {
		floods[i].events = j.Subscribe(wctx, mcpvisor.EventFilter{Server: serverName(i)})
	}
	ws0, _ := j.Stats()

	// The writer's counters, sampled: its deepest queue, and when it had
	// committed (or dropped) the whole flood.
	var peakQueued int64
	var writerDone time.Duration
	t0 := time.Now()
	stopStats := sampleEvery(journalStatsEvery, func() {
		ws, _ := j.Stats()
		peakQueued = max(peakQueued, ws.Queued)
		if writerDone == 0 && ws.Events-ws0.Events+ws.Dropped-ws0.Dropped >= uint64(n) {
			writerDone = time.Since(t0)
		}
	})
	var wg sync.WaitGroup
	for i := range floods {
		f := &floods[i]
		tool := "mcp__" + serverName(i) + "__flood"
		wg.Go(func() {
			f.callErr = h.callTool(wctx, tool, floodArgs(per))
			f.answered = time.Since(t0)
			if f.callErr != nil {
				cancel() // its events will not all come
			}
		})
		wg.Go(func() { f.follow(per, t0) })
	}
	wg.Wait()
	stopStats()
	peak := rss.end()
	ws1, ss := j.Stats()

	var journaled, dropped uint64
	var elapsed, answered time.Duration
	var problems []string
	for i, f := range floods {
		journaled += f.journaled
		dropped += f.dropped
		elapsed, answered = max(elapsed, f.done), max(answered, f.answered)
		if f.callErr != nil {
			problems = append(problems, fmt.Sprintf("%s: flood call: %v", serverName(i), f.callErr))
		}
		if f.done == 0 {
			problems = append(problems, fmt.Sprintf("%s: %d journaled + %d dropped of %d after %.1f s", serverName(i), f.journaled, f.dropped, per, time.Since(t0).Seconds()))
		}
	}
	if len(problems) > 0 {
		elapsed = time.Since(t0)
	}
	commits := float64(ws1.Commits - ws0.Commits)
	rec.Errors = len(problems)
	rec.Note = strings.Join(problems, "; ")
	rec.Metrics = map[string]float64{
		"events":            float64(n),
		"journaled":         float64(journaled),
		"dropped":           float64(dropped),
		"dropped_counted":   float64(ws1.Dropped - ws0.Dropped),
		"elapsed_ms":        millis(elapsed),
		"answered_ms":       millis(answered),
		"writer_done_ms":    millis(writerDone),
		"events_per_sec":    float64(journaled) / elapsed.Seconds(),
		"commits":           commits,
		"events_per_commit": float64(ws1.Events-ws0.Events) / max(commits, 1), // no NaN: JSON has none
		"peak_queued":       float64(peakQueued),
		"write_failures":    float64(ws1.WriteFailures - ws0.WriteFailures),
		"peak_rss_mb":       peak,
		"peak_anon_mb":      rss.anon(),
		"rss_base_mb":       rss.base / 1024,
		"lsm_mb":            float64(ss.LSMBytes) / (1 << 20),
		"vlog_mb":           float64(ss.VLogBytes) / (1 << 20),
		"disk_mb":           float64(ss.LSMBytes+ss.VLogBytes) / (1 << 20),
		"disk_alloc_mb":     float64(allocatedBytes(filepath.Join(h.dataDir, "journal"))) / (1 << 20),
	}
	m := rec.Metrics
	env.logf("  %-14s %d server(s), %d events: %.0f journaled + %.0f dropped in %.2f s: %.0f durable events/s (all read by the host at %.2f s, committed by %.2f s); %.0f commits, %.1f events each, queue peak %.0f; peak RSS %+.1f MiB; journal %.1f MiB on disk (LSM %.1f + vlog %.1f; %.1f MiB allocated)",
		name, servers, n, m["journaled"], m["dropped"], elapsed.Seconds(), m["events_per_sec"], answered.Seconds(), writerDone.Seconds(),
		commits, m["events_per_commit"], m["peak_queued"], peak, m["disk_mb"], m["lsm_mb"], m["vlog_mb"], m["disk_alloc_mb"])
	if rec.Note != "" {
		env.logf("  %-14s %s", name, rec.Note)
	}
	return rec
}

// allocatedBytes is the disk space the files under dir take (their blocks),
// which for preallocated, sparse files is less than their sizes.
func allocatedBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed by a compaction since the listing
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
