// Package sse reads Server-Sent Events (text/event-stream), the stream a
// Streamable HTTP MCP server may answer a POST or a GET with, and the one
// the legacy HTTP+SSE transport speaks.
//
//	events := sse.NewReader(resp.Body, maxFrame)
//	for {
//		ev, err := events.Next() // blocks; close resp.Body to unblock
//		if errors.Is(err, protocol.ErrFrameTooLarge) {
//			resp.Body.Close() // the Reader stopped at the limit: drop the connection
//			break             // fail the call it answered, or back off and resume
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
// skipped. The Reader bounds each event while reading it and stops reading
// the moment one passes the limit, so that a server sending an endless line
// or event costs the limit, not the stream, in memory and in bandwidth. The package starts no goroutines and holds no
// policy: reconnecting, waiting and decoding belong to the caller.
package sse
