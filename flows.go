package mcpvisor

import (
	"errors"
	"fmt"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/internal/flows"
	"github.com/mcpvisor/mcpvisor/pipeline"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Server-initiated flows: the requests servers send the host (elicitation,
// sampling, roots), each answered by a hook the embedder provides, and the
// capabilities declared for exactly those.

type (
	// ElicitationRequest is a server's request for input from a person.
	ElicitationRequest = elicit.Request
	// ElicitationResponse answers it: accept (with content), decline or cancel.
	ElicitationResponse = elicit.Response
	// ElicitationAction is accept, decline or cancel.
	ElicitationAction = elicit.Action
	// ElicitationField is one field of a form-mode request.
	ElicitationField = elicit.Field
	// ElicitationCaller is the call an elicitation belongs to, when the
	// host can tell (ElicitationRequest.Caller).
	ElicitationCaller = elicit.Caller
)

// Elicitation actions and modes.
const (
	ElicitAccept  = elicit.ActionAccept
	ElicitDecline = elicit.ActionDecline
	ElicitCancel  = elicit.ActionCancel
	ElicitForm    = elicit.ModeForm
	ElicitURL     = elicit.ModeURL
)

// DefaultElicitationDeadline is how long a person has to answer an
// elicitation before the host answers cancel.
const DefaultElicitationDeadline = flows.DefaultDeadline

// RootsProvider lists the roots (file:// URIs) a server may work in.
// Declared only when set; call Host.RootsChanged when they change.
type RootsProvider = pipeline.RootsProvider

// newFlows makes the machinery that answers servers' requests with the
// host's hooks (Options.Elicitation, Inbox, Sampling, Roots).
func (h *Host) newFlows() *flows.Flows {
	o := h.opts
	// h.pipe is made after the flows, before any server starts: no server
	// can ask before it is there.
	inFlight := func(s string) *pipeline.Call { return h.pipe.InFlight(s) }
	// h.rt too: a method value would bind the nil runtime now.
	pending := func(s string, legacy bool) int { return h.rt.Pending(s, legacy) }
	return flows.New(flows.Options{Journal: h.journal, PendingCalls: pending, InFlight: inFlight,
		Inbox: o.Inbox, Broker: h.broker, CallSampling: o.CallSampling, CallRoots: o.CallRoots,
		Elicitation: flows.ElicitFunc(o.Elicitation), Sampling: flows.SampleFunc(o.Sampling), Roots: flows.RootsFunc(o.Roots),
		Deadline: o.ElicitationDeadline, Passed: ErrElicitationPassed, Logger: o.Logger})
}

// Journal event methods of the host's own events.
const (
	EventMethodElicitation = flows.EventMethodElicitation
	EventMethodApproval    = "mcpvisor/approval"
	EventMethodTask        = actors.EventMethodTask
)

// RootsChanged tells every connected server that the roots changed
// (notifications/roots/list_changed). Only meaningful with Options.Roots.
func (h *Host) RootsChanged() {
	if h.opts.Roots != nil {
		h.rt.Notify(protocol.MethodRootsListChanged, nil)
	}
}

// Elicitations lists the elicitations waiting in the built-in inbox, oldest
// first (Options.Inbox).
func (h *Host) Elicitations() []ElicitationRequest { return h.broker.List() }

// ElicitationsChanged is closed at the next change to the inbox.
func (h *Host) ElicitationsChanged() <-chan struct{} { return h.broker.Changed() }

// ResolveElicitation answers a waiting elicitation. An accept in form mode
// is completed with the schema's defaults and validated: on an error (which
// names the field, never the value) the elicitation stays waiting.
func (h *Host) ResolveElicitation(id string, action ElicitationAction, content map[string]any) error {
	err := h.broker.Resolve(id, action, content)
	if errors.Is(err, elicit.ErrUnknown) {
		return fmt.Errorf("%w: %q", ErrUnknownElicitation, id)
	}
	return err
}
