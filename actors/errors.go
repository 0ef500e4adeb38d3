package actors

import (
	"errors"

	"github.com/mcpvisor/mcpvisor/config"
)

// Sentinel errors. Callers test them with errors.Is; the runtime wraps them
// with the server, tool and reason.
var (
	ErrInvalidServerName = config.ErrInvalidServerName
	ErrUnknownTool       = errors.New("unknown tool")
	ErrUnknownServer     = errors.New("unknown server")
	ErrUnavailable       = errors.New("server unavailable")
	ErrTimeout           = errors.New("call timed out")
	ErrCancelled         = errors.New("call cancelled")
	ErrNotReading        = errors.New("server is not reading its input")
	ErrConnectionLost    = errors.New("connection lost")
	ErrClosed            = errors.New("host closed")
	ErrDuplicateServer   = errors.New("server already exists")
	ErrSessionExpired    = errors.New("session expired")

	// The 2026-07-28 error codes. ErrHeaderMismatch: the server found the
	// request's HTTP headers missing or not matching its body (-32020).
	// ErrMissingClientCapability: the request needs a client capability
	// the host did not declare (-32021).
	ErrHeaderMismatch          = errors.New("header mismatch")
	ErrMissingClientCapability = errors.New("missing client capability")
	// ErrLegacySubscribe: SubscribeResource was asked of a server that is
	// not modern; a legacy server takes resources/subscribe.
	ErrLegacySubscribe = errors.New("not a modern server: use resources/subscribe")
	// ErrNameCollision: servers that expose their tools by their own names
	// (ServerSpec.Unprefixed) would expose one name twice, or a name that
	// is the host's or reads as namespaced.
	ErrNameCollision = errors.New("name collision")
	// ErrPermanent marks a start failure that no restart can mend: it
	// comes from the configuration (a pinned revision the server does not
	// speak, an endpoint the outbound guard refuses), not from the
	// server's health. A server failing so goes to failed at once, with
	// no backoff.
	ErrPermanent = errors.New("permanent failure")
)

// permanent marks err as ErrPermanent without changing what it says.
func permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() []error { return []error{e.err, ErrPermanent} }
