package sidecar

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// Limits bound what the HTTP server of Serve holds and waits for. A zero
// field takes its default (the Default* constants); a negative one turns
// that limit off.
//
// The per-address limit counts client IP addresses, and every client on
// this machine comes from a loopback address: on a loopback listener it
// bounds all local unauthenticated connections together. It never keeps
// out a request with the token (see Serve).
type Limits struct {
	// ReadHeaderTimeout bounds the reading of a request's header, and a
	// TLS handshake.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, its body
	// included (a call's arguments may be 16 MiB). The response is not
	// bounded: calls and event streams take as long as they take.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has had no request
	// for this long.
	IdleTimeout time.Duration
	// MaxConns caps the connections held at once, authenticated or not.
	MaxConns int
	// MaxUnauthConnsPerAddr caps, per client address, the connections
	// held that have sent a request without the token.
	MaxUnauthConnsPerAddr int
}

// The defaults of Limits and Options.ShutdownGrace.
const (
	DefaultReadHeaderTimeout     = 10 * time.Second
	DefaultReadTimeout           = time.Minute
	DefaultIdleTimeout           = time.Minute
	DefaultMaxConns              = 1024
	DefaultMaxUnauthConnsPerAddr = 64
	DefaultShutdownGrace         = 10 * time.Second
)

// withDefaults fills l's zero fields with the defaults.
func (l Limits) withDefaults() Limits {
	pick := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	pick(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	pick(&l.ReadTimeout, DefaultReadTimeout)
	pick(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxUnauthConnsPerAddr == 0 {
		l.MaxUnauthConnsPerAddr = DefaultMaxUnauthConnsPerAddr
	}
	return l
}

// Serve serves the API on ln, over TLS when Options.TLSConfig is set, until
// ctx ends; it then shuts down and returns nil. If ln fails first, it
// shuts down and returns that error. It closes ln. Serve may be called
// more than once, on several listeners, concurrently.
//
// It is the way to put the API on a listener; Handler alone has none of
// this. Connections are bounded by Options.Limits: timeouts for idle
// connections and for reading requests, and caps on the connections held,
// overall and, per client address, unauthenticated ones. At a cap, the
// unauthenticated connection that has waited longest without a request
// in a handler is closed to make room, so that idle connections cannot
// keep out a caller with the token; with none to close, the newcomer is
// answered 503 with "Connection: close" (over HTTP/2, closed unanswered).
//
// Each request's context carries ctx's values but not its end: when ctx
// ends, every request in flight is cancelled with ErrShuttingDown as the
// cause (a call fails at once saying so; an event stream ends), then
// Serve waits up to Options.ShutdownGrace for the handlers to return and
// closes the connections left.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	limits := s.opts.Limits
	conns := newConnTracker(limits, s.log)
	base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		IdleTimeout:       limits.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnContext:       conns.connContext,
		ConnState:         conns.connState,
	}
	if s.opts.TLSConfig != nil {
		cfg := s.opts.TLSConfig.Clone()
		if len(cfg.NextProtos) == 0 {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		}
		// The TLS listener is below the limits, so that a refused client
		// is answered in TLS; the http.Server, with no TLSConfig of its
		// own, serves the *tls.Conn it is given, HTTP/2 included.
		ln = tls.NewListener(ln, cfg)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(&limitListener{Listener: ln, t: conns}) }()

	var err error
	select {
	case err = <-served:
		served = nil
	case <-ctx.Done():
	}
	cancel(ErrShuttingDown)
	grace, stop := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
	defer stop()
	if srv.Shutdown(grace) != nil {
		srv.Close()
	}
	if served != nil {
		<-served // http.ErrServerClosed
	}
	conns.wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
