// Package gateway serves every server a mcpvisor Host supervises as one MCP
// server (revision 2025-11-25), so any MCP client (Claude Code, Cursor, an
// SDK) can use them all through one endpoint:
//
//	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg})
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	g := gateway.New(h, gateway.Options{}) // subscribes to h's events: catalog changes → notifications/tools/list_changed
//	defer g.Close()
//	http.Handle("/mcp", g.Handler()) // Streamable HTTP
//	// or, one session over stdio: g.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// ExampleGateway_Handler runs a session end to end.
//
// Each downstream MCP session is one host session (mcpvisor.Host.Session)
// with a random id. tools/list returns the session's tools, namespaced
// (mcp__<server>__<tool>), plus the host's own tools: activate_tools, which
// grants tool groups to the session (tools load lazily, through MCP itself,
// and the client is sent notifications/tools/list_changed), and, once the
// session activates "config" (Options.AllowConfigGroup), register_mcp,
// delete_mcp, toggle_item and list_items, approved as the Host's options
// say. tools/call is
// routed through the session: the server's CallToolResult passes through
// unchanged, progress is forwarded with the client's own token, and
// notifications/cancelled cancels the call upstream. A call the host
// cannot make (tool not granted, server unavailable, connection lost) is a
// tool error result; an unknown tool is the JSON-RPC error -32602.
//
// Resources and prompts of the session's active servers are served too:
// resources/list, resources/templates/list and prompts/list merge the
// servers' lists (one page each), resource URIs pass through unchanged and
// reads go to the server that listed the URI (else each active server is
// tried), prompts are namespaced like tools, and subscriptions are shared
// upstream (one per server and URI) and forwarded as
// notifications/resources/updated to the sessions holding them.
// logging/setLevel is accepted; the gateway sends no log messages.
//
// A server's elicitation/create that belongs to a client's call (see
// mcpvisor.CallOptions.Elicitation for how the host decides) is forwarded
// to that client when it declared elicitation and the request's mode: over
// HTTP the call's answer turns into an SSE stream carrying the request with
// an id of the gateway's, and the client POSTs its response; over stdio it
// is one more frame. The host completes and validates an accepted form
// before the server sees it, and a call cancelled while its question is
// open withdraws the question (notifications/cancelled). Any other
// elicitation waits in the host's inbox (mcpvisor.Options.Inbox).
//
// The HTTP transport validates Origin (403) and forwards no inbound
// header, Authorization included, anywhere.
package gateway
