// Package protocol is the wire logic of MCP 2025-11-25 over JSON-RPC 2.0:
// encoding requests, classifying inbound frames, bounded newline framing for
// stdio, the MCP types and version negotiation.
//
//	frame := protocol.AppendCallTool(nil, 7, "read_file", json.RawMessage(`{"path":"README.md"}`), nil)
//	// {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"README.md"}}}
//
//	fr := protocol.NewFrameReader(stdout, 0)
//	in, err := fr.ReadFrame()           // one bounded line, owned by the caller
//	msg, err := protocol.Classify(in)   // top level only; Result stays raw
//	if id, ok := msg.IntID(); ok && msg.Kind == protocol.KindResponse {
//		// match id to the pending call and hand msg.Result to the caller
//	}
//
// (Example in example_test.go runs this.)
//
// The package starts no goroutines and holds no policy: who reads, who
// writes, timeouts and restarts belong to the actors that use it. It sits on
// the hot path of every tool call, so payloads that only pass through the
// host (arguments, results, schemas, structuredContent) stay json.RawMessage
// and are never decoded and re-encoded here; the encoders append to a
// caller's buffer without reflection, and Classify scans the top level of a
// frame by hand, without encoding/json, while accepting exactly the JSON that
// encoding/json accepts.
//
// Two rules guard against bugs seen in other MCP hosts. FrameReader bounds a
// frame while reading it, not after: a server that writes an endless line
// costs the limit, not the line. And Classify never takes a server's request
// for a response: a frame is a response only if it has no method.
package protocol
