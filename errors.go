package mcpvisor

import (
	"errors"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/outbound"
	"github.com/mcpvisor/mcpvisor/internal/schema"
	"github.com/mcpvisor/mcpvisor/internal/signin"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/pipeline"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// Errors returned by Host methods, for errors.Is. They arrive wrapped with
// the server, the tool and the reason.
var (
	ErrUnknownTool    = actors.ErrUnknownTool   // no such namespaced tool
	ErrToolWithheld   = actors.ErrToolWithheld  // the tool's definition awaits a person's approval (ToolPolicyHold)
	ErrStaleReview    = actors.ErrStaleReview   // ApproveTool/RejectTool named a definition the server no longer lists
	ErrUnknownServer  = actors.ErrUnknownServer // no such server
	ErrUnavailable    = actors.ErrUnavailable   // server not ready: restarting, disabled, failed, stopped
	ErrTimeout        = actors.ErrTimeout       // the server's call timeout passed
	ErrCancelled      = actors.ErrCancelled     // the caller's context ended
	ErrFrameTooLarge  = protocol.ErrFrameTooLarge
	ErrNotReading     = actors.ErrNotReading     // the server stopped reading its stdin
	ErrConnectionLost = actors.ErrConnectionLost // the server died with the call in flight
	ErrClosed         = actors.ErrClosed         // the host is closed

	// Why a server's connection failed, reachable from a call's error.
	ErrSessionExpired     = actors.ErrSessionExpired       // an HTTP server forgot the session (404)
	ErrPrivateAddress     = outbound.ErrPrivateAddress     // a non-public address without allowPrivate
	ErrRedirectRefused    = outbound.ErrRedirectRefused    // a redirect the policy forbids
	ErrUnsupportedVersion = protocol.ErrUnsupportedVersion // the server negotiated a revision we cannot speak

	// OAuth for remote servers.
	ErrNeedsAuth = oauth.ErrNeedsAuth // the server needs a sign-in before it can be used (state needs_auth)
	ErrNoUser    = signin.ErrNoUser   // a per-user server (oauth.perUser) called without CallOptions.User

	// The journal and the grants.
	ErrJournalLocked  = persistence.ErrLocked       // another process holds the data directory's journal
	ErrJournalDamaged = persistence.ErrDamaged      // the journal's files are damaged; it was not opened (its files are copied aside)
	ErrUnknownEvent   = persistence.ErrUnknownEvent // Ack of an id the journal never had (or pruned)
	ErrDiskFull       = persistence.ErrDiskFull     // the journal is read-only: less than its reserve is free on its disk
	ErrUnknownGroup   = actors.ErrUnknownGroup
	ErrNotGranted     = pipeline.ErrNotGranted
	ErrInvalidScope   = errors.New("invalid session or stack id")

	// Flows: elicitation and tasks.
	ErrUnknownElicitation = errors.New("unknown elicitation") // no such pending elicitation (answered, expired)
	// ErrElicitationPassed, from a CallOptions.Elicitation handler, hands
	// the elicitation on to the host's own handler or inbox.
	ErrElicitationPassed = errors.New("elicitation passed to the host")
	ErrUnknownTask       = pipeline.ErrUnknownTask // no task with that id in the journal
	ErrTaskFailed        = actors.ErrTaskFailed    // the server's task failed without a result
	ErrTaskCancelled     = actors.ErrTaskCancelled // the task was cancelled (by the server or the host)
	ErrTaskLost          = actors.ErrTaskLost      // the server no longer knows the task

	// ErrInvalidAnswer: an answer to an elicitation does not fit the spec
	// or the requested schema, or its action is not accept, decline or
	// cancel.
	ErrInvalidAnswer = elicit.ErrInvalid
	ErrInvalidAction = elicit.ErrInvalidAction

	// ErrNoResult: a stage of Options.CallMiddleware returned neither a
	// result nor an error.
	ErrNoResult = pipeline.ErrNoResult
	// ErrInputRounds: the server still asked for input after the most
	// rounds the host allows (Options.MaxInputRounds).
	ErrInputRounds = pipeline.ErrInputRounds

	// Host tools.
	ErrUnknownApproval = errors.New("unknown approval") // no such pending host-tool call (decided, expired, abandoned)
	// ErrSelfApproval: the credential that raised an approval may not
	// answer it (Host.ResolveApprovalAs).
	ErrSelfApproval = errors.New("the credential that raised an approval cannot decide it")

	// ErrConfig is wrapped by every error that reports an invalid
	// configuration, including JSON syntax errors.
	ErrConfig = config.ErrInvalid
	// ErrNameCollision: servers with "prefix": false would expose one tool
	// name twice, or one that is a host tool's or reads as
	// mcp__<x>__<y>. Register, Open and SetEnabled refuse it when the
	// tools are known; the error names both servers and the tool.
	ErrNameCollision = actors.ErrNameCollision
	// ErrUnsupported: the server is ready and did not declare, in
	// initialize, the capability a request needs (resources,
	// resources.subscribe, prompts).
	ErrUnsupported = pipeline.ErrUnsupported
	// ErrResourceNotFound: resources/read of a URI the server does not
	// know (-32002 before 2026-07-28, -32602 since).
	ErrResourceNotFound = pipeline.ErrResourceNotFound

	// The 2026-07-28 error codes: -32020 (the request's HTTP headers do
	// not match its body) and -32021 (the request needs a client
	// capability the host did not declare).
	ErrHeaderMismatch          = actors.ErrHeaderMismatch
	ErrMissingClientCapability = actors.ErrMissingClientCapability

	// Schemas. A document that does not match its schema is a *SchemaError
	// instead. ErrUnsupportedDialect: the schema's $schema names a dialect
	// other than 2020-12 (the default), 2019-09, draft-07, draft-06 and
	// draft-04. ErrInvalidSchema: the schema is not valid in its dialect,
	// or refers to a document other than itself and the bundled
	// meta-schemas.
	ErrUnsupportedDialect = schema.ErrUnsupportedDialect
	ErrInvalidSchema      = schema.ErrInvalidSchema

	// ErrNoDeviceSignIn: the server's authorization server does not offer
	// sign-in with a code (the device authorization grant, RFC 8628).
	ErrNoDeviceSignIn = oauth.ErrNoDeviceGrant
)

// UnavailableError details ErrUnavailable: the server's state, why, and for
// a restarting server when to retry.
type UnavailableError = actors.UnavailableError
