// Package sse reads Server-Sent Events (text/event-stream), the stream a
// Streamable HTTP MCP server may answer a POST or a GET with, and the one
// the legacy HTTP+SSE transport speaks.
//
//	events := sse.NewReader(resp.Body, maxFrame)
//	for {
//		ev, err := events.Next() // blocks; close resp.Body to unblock
//		if errors.Is(err, protocol.ErrFrameTooLarge) {
//			continue // the oversized event was skipped; the stream goes on
//		}
//		if err != nil {
//			break // io.EOF: the connection closed; resume with Last-Event-ID
//		}
//		if ev.HasID {
//			lastEventID = ev.ID
//		}
//		if ev.HasRetry {
//			reconnectAfter = ev.Retry
//		}
//		if len(ev.Data) == 0 {
//			continue // a priming event: nothing to decode
//		}
//		msg, err := protocol.Classify(ev.Data)
//		// ...
//	}
//
// (Example in example_test.go runs this.)
//
// The parsing follows the WHATWG HTML standard, with one difference MCP
// needs: an event with an id or a retry and no data is returned, not
// skipped. Like protocol.FrameReader, the Reader bounds each event while
// reading it, so that a server sending an endless line or event costs the
// limit, not the stream. The package starts no goroutines and holds no
// policy: reconnecting, waiting and decoding belong to the caller.
package sse
