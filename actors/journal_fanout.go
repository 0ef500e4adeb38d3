package actors

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// MethodEventsLagged is the method of the record SubscribeBounded delivers
// last to a subscriber that fell behind: params {"skipped": N, "after": ID}.
// It is never journaled: the events it skipped are, and a new
// subscription with After = ID delivers them.
const MethodEventsLagged = "mcpvisor/events_lagged"

// DefaultLiveBuffer bounds the committed events waiting for one
// subscriber: past it the subscriber has lagged.
const DefaultLiveBuffer = 4096

// storePage is how many events a subscriber reads from the store at once
// while it catches up.
const storePage = 1024

// eventFanout hands each commit's events to the subscribers that keep up,
// each into a bounded queue of its own, on the writer's goroutine: a
// subscriber costs the writer one short lock per commit whatever its
// speed, and none of them reads the store while it keeps up.
type eventFanout struct {
	mu   sync.Mutex
	subs map[*liveSub]struct{}
}

// liveSub is one subscriber's queue of committed events.
type liveSub struct {
	f     persistence.EventFilter
	limit int
	ready chan struct{} // capacity 1: the queue grew or lagged

	mu      sync.Mutex
	queue   []persistence.EventRecord
	lagged  bool
	skipped uint64 // matching events not queued since it lagged
}

func (o *eventFanout) add(f persistence.EventFilter, limit int) *liveSub {
	s := &liveSub{f: f, limit: limit, ready: make(chan struct{}, 1)}
	o.mu.Lock()
	if o.subs == nil {
		o.subs = map[*liveSub]struct{}{}
	}
	o.subs[s] = struct{}{}
	o.mu.Unlock()
	return s
}

func (o *eventFanout) remove(s *liveSub) {
	o.mu.Lock()
	delete(o.subs, s)
	o.mu.Unlock()
}

// publish offers evs, just committed, to every subscriber. It never waits
// for one.
func (o *eventFanout) publish(evs []persistence.EventRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for s := range o.subs {
		s.offer(evs)
	}
}

func matches(f persistence.EventFilter, e persistence.EventRecord) bool {
	return (f.Status == "" || e.Status == f.Status) && (f.Server == "" || e.Server == f.Server) &&
		(f.Method == "" || e.Method == f.Method)
}

func (s *liveSub) offer(evs []persistence.EventRecord) {
	s.mu.Lock()
	n := 0
	for _, e := range evs {
		if !matches(s.f, e) {
			continue
		}
		if s.lagged || len(s.queue) >= s.limit {
			s.lagged = true
			s.skipped++
			continue
		}
		s.queue = append(s.queue, e)
		n++
	}
	signal := n > 0 || s.lagged
	s.mu.Unlock()
	if signal {
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
}

// take empties the queue.
func (s *liveSub) take() (evs []persistence.EventRecord, lagged bool, skipped uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs, s.queue = s.queue, nil
	return evs, s.lagged, s.skipped
}

// follow feeds out, a subscriber's channel, until ctx ends or the journal
// closes: from the store while it catches up, then from sub, its queue in
// the fan-out, which it joined first so that no commit falls between the
// two (one under way may reach both: f.After skips it the second time).
// When it falls behind the fan-out, bounded ends it with a
// MethodEventsLagged record; otherwise it goes back to the store where it
// left off.
func (j *Journal) follow(ctx context.Context, f persistence.EventFilter, sub *liveSub, out chan<- persistence.EventRecord, bounded bool) {
	f.Limit = storePage
	send := func(ev persistence.EventRecord) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
		case <-j.done:
		}
		return false
	}
	catchUp := func() bool {
		for {
			evs, err := j.store.Events(f)
			if err != nil {
				return false
			}
			for _, ev := range evs {
				if !send(ev) {
					return false
				}
				f.After = ev.Seq
			}
			if len(evs) < f.Limit {
				return true
			}
		}
	}
	for {
		lagged, ok := false, catchUp()
		for ok && !lagged {
			select {
			case <-sub.ready:
			case <-ctx.Done():
				ok = false
				continue
			case <-j.done:
				ok = false
				continue
			}
			var evs []persistence.EventRecord
			evs, lagged, _ = sub.take()
			for _, ev := range evs {
				if ev.Seq <= f.After {
					continue
				}
				if ok = send(ev); !ok {
					break
				}
				f.After = ev.Seq
			}
		}
		j.fanout.remove(sub)
		if !ok {
			return
		}
		if bounded {
			// Commits published between the take that saw the lag and the
			// removal were skipped too: count them, now that none can come.
			_, _, skipped := sub.take()
			params, _ := json.Marshal(map[string]uint64{"skipped": skipped, "after": f.After})
			send(persistence.EventRecord{Method: MethodEventsLagged, Params: params})
			return
		}
		sub = j.fanout.add(f, j.liveBuffer)
	}
}
