package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/internal/hosttools"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Progress is one notifications/progress of a call.
type Progress = actors.Progress

// ElicitationHandler answers an elicitation, e.g. by asking the person in the
// embedder's own UI. It runs on a goroutine of its own; ctx ends at the
// deadline, or when the server cancels or goes away. A form-mode accept's
// content is completed with the schema's defaults and validated before it is
// sent; its values never reach logs, the journal or errors.
type ElicitationHandler func(ctx context.Context, req *elicit.Request) (elicit.Response, error)

// SamplingHandler answers a server's sampling/createMessage with a model's
// completion. Declared only when set; keep a person in the loop.
type SamplingHandler func(ctx context.Context, server string, req *protocol.CreateMessageParams) (*protocol.CreateMessageResult, error)

// RootsProvider lists the roots (file:// URIs) a server may work in.
type RootsProvider func(ctx context.Context, server string) ([]protocol.Root, error)

// CallOptions tune one call. The zero value is the server's defaults.
type CallOptions struct {
	// User is the platform user the call is made for. A per-user server
	// (oauth.perUser) runs the call on that user's own instance, with the
	// user's own token: calls for different users never share a token or a
	// connection. Other servers ignore it.
	User string
	// OnProgress receives the call's notifications/progress, on the
	// caller's goroutine; setting it asks the server for progress.
	OnProgress func(Progress)
	// Timeout replaces the server's call timeout for this call.
	Timeout time.Duration
	// ResetTimeoutOnProgress restarts the timeout at each progress, up to
	// MaxTotalTimeout (0: the server's, or no cap).
	ResetTimeoutOnProgress bool
	MaxTotalTimeout        time.Duration
	// Detached, for a tool that runs as a task: return as soon as the task
	// is created; its outcome arrives as a journal event (mcpvisor/task)
	// and through Host.Task. Other tools ignore it.
	Detached bool
	// TaskTTL is the task lifetime asked of the server (0: the server's).
	TaskTTL time.Duration
	// OnTask, when set, is told once the server ran the call as a task and
	// the task is in the journal (a host that dies from then on resumes it).
	OnTask func(TaskInfo)
	// Elicitation answers the elicitations that belong to this call, in
	// place of Options.Elicitation or the inbox: a gateway forwards them to
	// the client that made the call. An elicitation belongs to the call
	// when it names the call's task (related-task), or, naming no task,
	// when every request in flight on the server's connection comes from
	// calls of this call's session that all have a handler: no other
	// session's person is ever asked. Otherwise, or when the handler
	// returns ErrElicitationPassed, the host's own handler or inbox answers.
	// The host declares elicitation only with Options.Elicitation or Inbox.
	Elicitation ElicitationHandler
	// Approve, for a host-tool call, is asked after the host's own approval
	// (Options.Approve or the approval inbox) allowed it: a caller can add
	// a check, never skip one. A gateway uses it to ask the person at its
	// client. It sees every host-tool call; ApprovalRequest.Changes tells
	// the ones that change the servers.
	Approve ApprovalFunc
	// Sampling answers the sampling/createMessage requests that belong to
	// this call (by the rule of Elicitation), in place of Options.Sampling:
	// a gateway forwards them to the client that made the call. The host
	// declares sampling with Options.Sampling or Options.CallSampling.
	Sampling SamplingHandler
	// Roots answers the roots/list requests that belong to this call (by
	// the rule of Elicitation), in place of Options.Roots: a gateway asks
	// the client that made the call, when it declared roots. The host
	// declares roots with Options.Roots or Options.CallRoots.
	Roots RootsProvider
	// ClientCapabilities, for a gateway in front of a modern client, are
	// that client's capabilities (a ClientCapabilities object): a modern
	// server is told them in place of the host's, so it asks only for what
	// the client can give. A legacy server learnt the host's at initialize.
	ClientCapabilities json.RawMessage
	// Client names the client behind the handlers when callers of one
	// scope are different clients (a gateway's modern clients share a
	// scope). A server's request is the call's only when every call in
	// flight on the server's connection with a handler has the same scope
	// and Client: one client's question never reaches another.
	Client string
	// LegacyClient: the call is made for a client of a legacy revision
	// (2025-11-25 and before), which answers a server's questions as
	// requests of the server's own, by the handlers above. A modern server
	// that also speaks a legacy revision then serves it through a legacy
	// incarnation started for such calls (actors.CallOptions.Legacy), as a
	// server written for both eras asks that way only there. Without any
	// of the handlers it changes nothing.
	LegacyClient bool
	// AwaitingClient reports whether the call waits on its client to
	// answer questions the client was already given (a gateway's bridged
	// call between an input_required round and the retry, which a client
	// may never send). Such a call asks nothing new until answered, so a
	// server's request is attributed among the other calls in flight, and
	// an abandoned round holds no other client's question hostage.
	AwaitingClient func() bool
	// PassInput returns a modern server's input_required result to the
	// caller as the server wrote it (Result.InputRequired, Result.Raw)
	// instead of fulfilling it with the handlers: a gateway hands it to its
	// own modern client, which answers and retries (Resume).
	PassInput bool
	// Resume is a retry's answer to an earlier input_required result: the
	// JSON object {"inputResponses":…,"requestState":…} of the client's
	// retry, whose members reach the server as they are.
	Resume json.RawMessage
}

// URLElicitationRequiredError is a server's -32042 answer: the call needs
// the person to complete the listed URL elicitations first (the host opens
// nothing); retry the call once they have.
type URLElicitationRequiredError struct {
	Server       string
	Elicitations []elicit.Request // url mode; URLs validated, never fetched
	Err          *protocol.Error
}

func (e *URLElicitationRequiredError) Error() string {
	urls := make([]string, 0, len(e.Elicitations))
	for _, el := range e.Elicitations {
		urls = append(urls, el.URL)
	}
	return fmt.Sprintf("server %q requires URL elicitation before this call: %s", e.Server, strings.Join(urls, ", "))
}

func (e *URLElicitationRequiredError) Unwrap() error { return e.Err }

// urlElicitationRequired turns a -32042 error into its typed form; other
// errors come back as they are.
func urlElicitationRequired(server string, err error) error {
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeURLElicitationRequired {
		return err
	}
	var data protocol.URLElicitationRequiredData
	_ = json.Unmarshal(perr.Data, &data)
	out := &URLElicitationRequiredError{Server: server, Err: perr}
	for _, p := range data.Elicitations {
		p.Mode = string(elicit.ModeURL)
		raw, _ := json.Marshal(p)
		req, perr := elicit.Parse(server, raw)
		if perr != nil {
			continue // an unsafe or malformed URL is not shown at all
		}
		out.Elicitations = append(out.Elicitations, *req)
	}
	return out
}

// ApprovalRequest is one host-tool call waiting for a decision: a model,
// through some session, wants to run one of the host's own tools; its
// fields are documented at internal/hosttools.Request, the type the host
// tools raise. Its Arguments are the model's, secrets included: for an
// ApprovalFunc, never logged, journaled or listed (LogValue and String
// leave them out).
type ApprovalRequest = hosttools.Request

// ApprovalDecision answers an ApprovalRequest. Reason, when set, is shown
// to the model with a denial.
type ApprovalDecision = hosttools.Decision

// ApprovalFunc decides a host-tool call before it runs. It may block (a
// person deciding); ctx ends when the call is abandoned. An error denies
// the call with the error's text.
type ApprovalFunc func(ctx context.Context, req *ApprovalRequest) (ApprovalDecision, error)
