// Package protolog is the logger protoactor-go's actor systems get: the
// host's own, with the library's records below Warn passed one level lower
// (info → debug), so its start-up and gossip chatter stays out of an
// operator's info log.
package protolog

import (
	"context"
	"log/slog"
)

// Logger is l for protoactor: records below Warn one level lower, tagged
// lib=protoactor.
func Logger(l *slog.Logger) *slog.Logger {
	return slog.New(demoteInfo{l.Handler()}).With("lib", "protoactor")
}

type demoteInfo struct{ slog.Handler }

func (h demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l -= 4
	}
	return h.Handler.Enabled(ctx, l)
}

func (h demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level -= 4
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoteInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteInfo{h.Handler.WithAttrs(as)}
}

func (h demoteInfo) WithGroup(name string) slog.Handler {
	return demoteInfo{h.Handler.WithGroup(name)}
}
