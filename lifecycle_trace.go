package mcpvisor

import "github.com/mcpvisor/mcpvisor/internal/tracing"

// traceLifecycle subscribes a trace of every start of a server
// (tracing.Lifecycle), when the host traces: Options.TracerProvider, or a
// global provider set before Open. Without one it subscribes nothing, so
// the runtime queues no events for it.
func (h *Host) traceLifecycle() {
	if tracing.Off(h.opts.TracerProvider) {
		return
	}
	lt := tracing.NewLifecycle(h.opts.TracerProvider, tracing.States{
		Backoff: string(StateBackoff), Starting: string(StateStarting),
		Initializing: string(StateInitializing), Ready: string(StateReady),
	})
	h.Subscribe(func(ev Event) {
		if ev.Kind == EventState {
			lt.Observe(ev.Server, string(ev.State), ev.Time)
		}
	})
}
