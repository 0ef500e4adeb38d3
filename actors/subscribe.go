package actors

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Subscribe registers fn for the runtime's events: server notifications,
// state changes (every change Status shows) and catalog changes, in order,
// on the runtime's event goroutine, after Options.OnEvent. It may be
// called at any time; events before it are not replayed (read Status
// after subscribing for the state so far). fn should return quickly:
// events queue behind every subscriber and, past a bound, are dropped and
// counted (DroppedEvents).
//
// The returned function ends the subscription; after it returns, fn is not
// called again, except for an event whose delivery to fn had begun. It is
// idempotent and may be called from fn.
func (r *Runtime) Subscribe(fn func(Event)) (unsubscribe func()) {
	s := &subscriber{fn: fn}
	r.subs.update(func(list []*subscriber) []*subscriber { return append(list, s) })
	return func() {
		if s.done.Swap(true) {
			return
		}
		r.subs.update(func(list []*subscriber) []*subscriber {
			return slices.DeleteFunc(list, func(x *subscriber) bool { return x == s })
		})
	}
}

type subscriber struct {
	fn   func(Event)
	done atomic.Bool
}

// subscribers is a copy-on-write list: delivery loads it without a lock.
type subscribers struct {
	mu   sync.Mutex // writers
	list atomic.Pointer[[]*subscriber]
}

func (s *subscribers) update(f func([]*subscriber) []*subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur []*subscriber
	if p := s.list.Load(); p != nil {
		cur = *p
	}
	next := f(slices.Clone(cur))
	s.list.Store(&next)
}

// listening reports whether an event would reach anyone: with no OnEvent
// and no subscriber the runtime does not queue events at all, so a
// notification flood costs nothing.
func (r *Runtime) listening() bool {
	if r.onEvent != nil {
		return true
	}
	p := r.subs.list.Load()
	return p != nil && len(*p) > 0
}

// deliver hands ev to Options.OnEvent, then to every subscriber, on the
// event goroutine.
func (r *Runtime) deliver(ev Event) {
	if r.onEvent != nil {
		r.onEvent(ev)
	}
	p := r.subs.list.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		if !s.done.Load() {
			s.fn(ev)
		}
	}
}
