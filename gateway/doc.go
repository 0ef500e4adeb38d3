// Package gateway serves every server a mcpvisor Host supervises as one MCP
// server, to clients of both eras at once (2026-07-28 without sessions, and
// 2025-11-25 back to 2024-11-05 through initialize), so any MCP client
// (Claude Code, Cursor, an SDK) can use them all through one endpoint:
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
// servers' lists (one page each), resource URIs are the host's
// (mcpvisor.ResourceURI: a ui:// URI always namespaced by its server, as
// tools/list's _meta.ui.resourceUri names it; a URI of another scheme
// unchanged unless two listed servers share it, then
// mcpvisor://<server>/<uri>), a namespaced URI is read from the server it
// names with the server's own URI and any other from the server that
// listed it (else each active server is tried), prompts are namespaced
// like tools, and subscriptions are shared
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
// Modern clients (2026-07-28) send no initialize and have no session: a
// POST without Mcp-Session-Id that is not a legacy initialize is theirs.
// Each request's _meta (protocol version, client capabilities) and its
// SEP-2243 headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Mcp-Param-* of a tool's x-mcp-header) are validated, with the HTTP
// statuses and error codes of the revision (-32020, -32021, -32022; 404
// and -32601 for legacy-only methods such as initialize and ping).
// server/discover lists both eras; results carry resultType, the
// gateway's serverInfo in _meta and, on lists, cache hints (ttlMs 0,
// private: what a client sees depends on its grants and the servers'
// states); subscriptions/listen streams list changes and resource updates
// tagged with the request's id. A modern server's input_required result
// goes to the client as the server wrote it, with the client's own
// capabilities told to the server, and the retry may reach any replica: no
// modern request depends on state a replica keeps. Modern clients share
// one host session (activate_tools grants are the journal's). A legacy
// server's requests during a modern client's call are bridged: they become
// input_required rounds whose requestState is sealed (Options.StateKey);
// that call lives in the replica that started it until the client's last
// retry, Options.InputTimeout, or, for a client over stdio
// (ServeStdio), the end of its connection. While it waits on its client
// it asks nothing new, so other clients' calls are asked their own
// questions meanwhile. A legacy client's call to a modern server that
// also speaks a legacy revision is served by that server's legacy
// incarnation (mcpvisor.CallOptions.LegacyClient), where it asks with
// requests of its own, forwarded to the client.
//
// Tasks (the io.modelcontextprotocol/tasks extension, tasks.go) are the
// gateway's own, for any tool behind it: a modern client that declares the
// extension gets a task for a call of a tool whose server says it may or
// must run as one (execution.taskSupport; one that must asks its first
// questions in the call itself), and for a tool that says nothing once
// its call outlives Options.TaskAfter; it polls tasks/get, answers the
// call's questions with tasks/update and may tasks/cancel. A task runs in
// the replica that created it; it is journaled when it is created and when
// it ends (mcpvisor.Host.SaveGatewayTask), so tasks/get answers after a
// restart, until Options.TaskTTL: an ended task as it ended, one that was
// running as failed (its call ended with the process).
//
// A server configured with "prefix": false keeps its own tool and prompt
// names (mcpvisor.ServerConfig.Prefix). completion/complete goes to the
// server that owns the prompt or resource. A server's log messages reach
// the legacy sessions that asked for their level (logging/setLevel).
//
// The HTTP transport validates Origin (403) and forwards no inbound
// header, Authorization included, anywhere.
package gateway
