// Package mcpserve is a tiny MCP (2025-11-25; 2026-07-28 on request) server
// framework for the stdio transport: newline-delimited JSON-RPC 2.0 on an
// input and an output stream. It exists so the example servers in
// examples/servers can be real, independent peers of mcpvisor's client; it
// uses only the standard library and imports nothing else from this
// repository.
//
//	s := mcpserve.New(mcpserve.Options{Name: "demo", Version: "1.0.0"})
//	s.AddTool(mcpserve.Tool{
//		Name:        "hello",
//		Description: "Say hello.",
//		Handler: func(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
//			return mcpserve.TextResult("hello"), nil
//		},
//	})
//	err := s.Serve(context.Background(), os.Stdin, os.Stdout)
//
// The server answers initialize, ping, tools/list (paginated when
// Options.PageSize > 0), tools/call and logging/setLevel; it accepts
// notifications/initialized and notifications/cancelled (which cancels the
// handler's context, after which no response is sent); unknown requests get
// -32601 and unknown notifications are ignored. Every request runs on its own
// goroutine, so a slow tool never delays a ping. Handlers may send the client
// notifications (Notify, Log, ToolCall.Progress) and requests (Call,
// CallWithID, ToolCall.Call).
//
// With Options.Tasks the server also speaks the experimental tasks utility:
// it declares capabilities.tasks, a tools/call carrying "task" for a tool
// whose TaskSupport is optional or required is answered at once with a
// CreateTaskResult while the handler runs on, and tasks/get, tasks/result,
// tasks/cancel and tasks/list report on it. Options.TaskStateDir keeps tasks
// on disk so that a restarted server still answers for them.
//
// With Options.Modern the server is dual-era: it also speaks MCP 2026-07-28,
// which has no handshake. It answers server/discover (supportedVersions,
// capabilities, instructions, serverInfo in _meta) and serves every request
// whose _meta declares io.modelcontextprotocol/protocolVersion 2026-07-28
// on its own, with the client's capabilities from the same _meta
// (ToolCall.ClientCapabilities); another version there is answered -32022
// with the versions served. subscriptions/listen is acknowledged and held
// open. initialize still opens the legacy era. Without Modern,
// server/discover is an unknown method, as for any legacy server, and a
// client falls back to initialize.
//
// A modern tools/call cannot be answered by a request of the server's own,
// so ToolCall.Call works by re-execution (multi round-trip requests): an
// ask the call's input answers returns the answer at once; any other fails
// with ErrInputRequired, the handler returns, and the result is
// resultType "input_required" with the ask under a key derived from its
// method and params, and a requestState. The client answers and sends the
// call again; the handler runs again from the start and, ask by ask, gets
// its answers. Answers of earlier rounds travel in requestState, sealed
// with AES-GCM under a key drawn at start-up, bound to the tool and its
// arguments and valid for RequestStateTTL. A handler that asks must
// therefore be safe to run again up to its asks: nothing it does before an
// ask may matter if done twice (the ssh example asks at login or before
// sudo, ahead of any side effect), and it must return once Call fails.
//
// Behaviour is changed with middleware (Options.Middleware), which sees every
// incoming request and notification before the built-in dispatcher; the
// misbehaving test server examples/servers/mcptest is built that way.
package mcpserve
