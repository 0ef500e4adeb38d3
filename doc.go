// Package mcpvisor is an MCP host runtime: it starts, supervises and talks
// to many MCP servers, and routes namespaced tool calls to them.
//
// Every server is an actor that owns its process and its life: the
// handshake, restarts, timers and every frame that is not a call's answer
// pass its mailbox, so a server that hangs, floods, stops reading or
// crashes affects only its own calls; status and every other server stay
// fast. A call to a ready server skips the mailbox by design: the caller
// writes its request and takes its response through the connection's
// pending table, at close to a raw pipe's speed (docs/design.md, "What
// the mailbox serialises"). Crashed servers are
// restarted with exponential backoff and jitter, up to a restart intensity
// limit; stdio servers run in their own process group and are stopped with
// the spec's ladder (close stdin, SIGTERM, SIGKILL, to the whole group), so
// no process outlives [Host.Close].
//
// Tools are named mcp__<server>__<tool>. A [Result] keeps its type: JSON
// when the server sent structuredContent, text otherwise.
//
//	cfg, err := mcpvisor.LoadConfig(".mcp.json")
//	host, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg})
//	defer host.Close()
//	res, err := host.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a":2,"b":40}`))
//	fmt.Println(res.Wire()) // 42
//
// The host remembers, in a Badger journal in its data directory: the
// server registry (the config file's servers and those added with
// [Host.Register]), each server's last tool catalog, the events servers
// push, the tool groups granted to sessions ([Session]) and the history of
// transitions and calls. A change is durable when the method that made it
// returns. See [Journal].
//
// Every call, whoever makes it (Host.Call, a [Session], the gateway, the
// sidecar), and every resources/read, prompts/get and forwarded request,
// passes through one pipeline of [CallMiddleware] stages: tracing, the
// history, the embedder's own stages (Options.CallMiddleware), grants,
// argument checks, the host's own tools, per-request handlers, result
// shaping, tasks and input rounds, then the server. Tool, ServerStatus,
// Event and Result marshal to JSON as MCP spells them (camelCase, with the
// host's own fields such as server and available beside MCP's).
// [Host.Subscribe] follows the host's events from any time on.
//
// All Host methods are safe for concurrent use. Errors match the Err*
// sentinels of this package with errors.Is.
package mcpvisor
