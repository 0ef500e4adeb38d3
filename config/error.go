package config

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one problem in a configuration. Its message is one line
// naming the server and field; it wraps ErrInvalid and, when set, the
// underlying cause (e.g. ErrInvalidServerName, *json.SyntaxError).
type Error struct {
	server string // "" when not known
	field  string // "" when the problem is not one field's, else e.g. "args[2]", "env.TOKEN"
	msg    string
	cause  error
}

// Error returns the one-line message, e.g.
// `config: server "notes": field "command": required for a stdio server`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.server != "" {
		fmt.Fprintf(&b, "server %q: ", e.server)
	}
	if e.field != "" {
		fmt.Fprintf(&b, "field %q: ", e.field)
	}
	b.WriteString(e.msg)
	return b.String()
}

// line is the message without the "config: " that starts it, as a
// warning reads.
func (e *Error) line() string { return strings.TrimPrefix(e.Error(), "config: ") }

// Unwrap returns ErrInvalid and the cause, if any, for errors.Is and
// errors.As.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrInvalid, e.cause}
	}
	return []error{ErrInvalid}
}

// topField is the file key a field label belongs to: "args[2]" → "args".
// The members of "oauth" are decoded one by one, so they count as keys of
// their own: "oauth.scopes[1]" → "oauth.scopes".
func (e *Error) topField() string {
	prefix, field := "", e.field
	if rest, ok := strings.CutPrefix(field, "oauth."); ok {
		prefix, field = "oauth.", rest
	}
	if i := strings.IndexAny(field, "[."); i >= 0 {
		field = field[:i]
	}
	return prefix + field
}

// Errorf returns the problem with server's field ("" for the entry as a
// whole), its message formatted as by fmt.Sprintf.
func newError(server, field, format string, args ...any) *Error {
	return &Error{server: server, field: field, msg: fmt.Sprintf(format, args...)}
}

func (c Server) errorf(field, format string, args ...any) *Error {
	return newError(c.Name, field, format, args...)
}

// Join joins errs with errors.Join, one line each; nil when there are none.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
