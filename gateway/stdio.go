package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// maxStdioFrame bounds one frame from a stdio client.
const maxStdioFrame = 16 << 20

// ServeStdio serves one MCP session over newline-delimited JSON-RPC: it
// reads the client's frames from in and writes frames to out, one a line.
// It blocks until in ends (nil for EOF), ctx is done (ctx's error) or the
// gateway is closed (ErrClosed); the session's calls are then cancelled
// and its grants deleted, and ServeStdio returns once its goroutines have
// exited. To unblock the pending read, in is then closed if it is an
// io.Closer; otherwise ServeStdio waits until that read returns.
//
// Several ServeStdio may run at once, each its own session.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	s := g.newSession()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.local[s] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.local, s)
		g.mu.Unlock()
	}()

	var wmu sync.Mutex
	var werr error
	write := func(frame []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		if werr != nil {
			return
		}
		line := append(frame[:len(frame):len(frame)], '\n')
		if _, err := out.Write(line); err != nil {
			werr = err
		}
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
		defer cancel()
		if err := s.end(ctx); err != nil {
			g.log.Warn("gateway: ending the stdio session", "err", err)
		}
	}()

	// Notifications not tied to a request, for a client that initialized:
	// a modern client asks for them with subscriptions/listen, and is
	// sent nothing it did not ask for.
	wg.Go(func() {
		for {
			select {
			case <-s.changed:
				if s.initialized() {
					write(listChangedFrame)
				}
			case frame := <-s.notes:
				if s.initialized() {
					write(frame)
				}
			case <-s.ctx.Done():
				return
			}
		}
	})

	frames := make(chan []byte)
	readErr := make(chan error, 1)
	stopRead := make(chan struct{})
	wg.Go(func() {
		fr := protocol.NewFrameReader(in, maxStdioFrame)
		for {
			frame, err := fr.ReadFrame()
			if err != nil {
				var tooLarge *protocol.FrameTooLargeError
				if errors.As(err, &tooLarge) {
					write(protocol.AppendError(nil, tooLarge.ID(), protocol.CodeInvalidRequest, err.Error(), nil))
					continue
				}
				readErr <- err
				return
			}
			select {
			case frames <- frame:
			case <-stopRead:
				return
			}
		}
	})
	defer close(stopRead)

	for {
		select {
		case <-ctx.Done():
			closeInput(in)
			return ctx.Err()
		case <-s.ctx.Done(): // Close
			closeInput(in)
			return ErrClosed
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("gateway: stdio: %w", err)
		case frame := <-frames:
			msg, err := protocol.Classify(frame)
			if err != nil {
				write(protocol.AppendError(nil, protocol.SniffID(frame), protocol.CodeParseError, err.Error(), nil))
				continue
			}
			if msg.Kind == protocol.KindRequest && metaOf(msg.Params).Version != "" {
				// A modern request (2026-07-28): served on its own,
				// whatever came before on this connection.
				run := s.beginModern(msg)
				wg.Go(func() {
					if resp := run(write); resp != nil {
						write(resp)
					}
				})
				continue
			}
			if msg.Kind == protocol.KindRequest && msg.Method != protocol.MethodInitialize && msg.Method != protocol.MethodPing {
				// A request may wait on a server: keep reading, so a
				// cancel (or the answer to an elicitation) reaches it.
				run := s.begin(msg)
				wg.Go(func() {
					if resp := run(write); resp != nil {
						write(resp)
					}
				})
				continue
			}
			if resp := s.handle(s.ctx, msg, write); resp != nil {
				write(resp)
			}
		}
	}
}

// beginModern registers a modern request for cancellation (stdio has no
// request stream to close: notifications/cancelled ends it) and returns
// its server: the request's _meta checked, then served by a per-request
// session as over HTTP. A subscriptions/listen writes its notifications
// until it is cancelled or the connection ends.
func (s *session) beginModern(msg protocol.Message) (run func(send func([]byte)) []byte) {
	ctx, done := s.track(msg.ID)
	return func(send func([]byte)) []byte {
		defer done()
		meta := metaOf(msg.Params)
		if e := modernRequestError(msg, meta); e != nil {
			return protocol.AppendError(nil, msg.ID, e.Code, e.Message, e.Data)
		}
		ms := s.g.modernSession(ctx, meta.Caps)
		ms.downstream = s.ctx
		if msg.Method == protocol.MethodToolsCall {
			if resp, ok := s.g.taskCall(ctx, ms, msg); ok {
				if resp == nil {
					return nil
				}
				return s.g.modernResponse(resp, msg.Method)
			}
			if ms.bridges(msg) {
				return s.g.bridgeCall(ctx, ms, msg, send)
			}
		}
		if msg.Method == protocol.MethodPromptsGet && ms.bridges(msg) {
			return s.g.bridgeCall(ctx, ms, msg, send)
		}
		if msg.Method == protocol.MethodSubscriptionsListen {
			return s.g.listen(ctx, ms, msg, func() func([]byte) bool {
				return func(frame []byte) bool { send(frame); return true }
			})
		}
		resp := ms.dispatch(ctx, msg, send)
		if ctx.Err() != nil && s.ctx.Err() == nil {
			return nil // cancelled by the client
		}
		return s.g.modernResponse(resp, msg.Method)
	}
}

func closeInput(in io.Reader) {
	if c, ok := in.(io.Closer); ok {
		_ = c.Close()
	}
}
