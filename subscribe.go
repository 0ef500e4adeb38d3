package mcpvisor

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Subscribe registers fn for the host's events: server notifications,
// state changes (every change Status shows) and catalog changes, in order,
// on one goroutine the host owns, as Options.OnEvent receives them. It may
// be called at any time; events before it are not replayed (read Status
// after subscribing for the state so far). fn should return quickly:
// events queue behind every subscriber and, past a bound, are dropped and
// counted.
//
// The returned function ends the subscription; after it returns, fn is not
// called again, except for an event whose delivery to fn had begun. It is
// idempotent and may be called from fn.
func (h *Host) Subscribe(fn func(Event)) (unsubscribe func()) {
	s := &subscriber{fn: fn}
	h.subs.update(func(list []*subscriber) []*subscriber { return append(list, s) })
	return func() {
		if s.done.Swap(true) {
			return
		}
		h.subs.update(func(list []*subscriber) []*subscriber {
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
// notification flood costs nothing here.
func (h *Host) listening() bool {
	if h.opts.OnEvent != nil {
		return true
	}
	p := h.subs.list.Load()
	return p != nil && len(*p) > 0
}

// deliver hands ev to Options.OnEvent, then to every subscriber. It runs
// on the runtime's event goroutine.
func (h *Host) deliver(ev Event) {
	if h.opts.OnEvent != nil {
		h.opts.OnEvent(ev)
	}
	p := h.subs.list.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		if !s.done.Load() {
			s.fn(ev)
		}
	}
}
