package mcpvisor

import "github.com/mcpvisor/mcpvisor/actors"

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
func (h *Host) Subscribe(fn func(Event)) (unsubscribe func()) { return h.rt.Subscribe(fn) }

// EventRate is Options.EventRate: each server's events per method, past
// which they are dropped, counted and summarised.
type EventRate = actors.EventRate

// EventsRateLimited counts, per server, the events dropped since it was
// registered because it pushed them faster than Options.EventRate. Each
// interval's count is also journaled as an "mcpvisor/events_dropped" event.
// Safe for concurrent use.
func (h *Host) EventsRateLimited() map[string]uint64 { return h.rt.EventsRateLimited() }

// MethodEventsLagged is the method of the last record a bounded journal
// subscription (Journal.SubscribeBounded, the sidecar's event stream)
// delivers when it fell behind: params {"skipped": N, "after": ID}; resume
// after ID.
const MethodEventsLagged = actors.MethodEventsLagged
