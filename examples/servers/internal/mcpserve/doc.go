// Package mcpserve is a tiny MCP (2025-11-25) server framework for the
// stdio transport: newline-delimited JSON-RPC 2.0 on an input and an output
// stream. It exists so the example servers in examples/servers can be real,
// independent peers of mcpvisor's client; it uses only the standard library
// and imports nothing else from this repository.
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
// Behaviour is changed with middleware (Options.Middleware), which sees every
// incoming request and notification before the built-in dispatcher; the
// misbehaving test server examples/servers/mcptest is built that way.
package mcpserve
