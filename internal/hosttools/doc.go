// Package hosttools is the machinery of the host's own tools: activate_tools,
// search_tools, and the config group's register_mcp, delete_mcp,
// toggle_item and list_items. It holds their definitions, decodes and
// checks their arguments, describes each call for approval, asks the
// approvers, runs the call and answers it as a CallToolResult.
//
// It works against Host, the few operations of the host it serves, and
// reads the runtime (statuses, catalogs, tool views) directly:
//
//	ts := hosttools.New(hosttools.Options{Runtime: rt, Host: adapter})
//	raw, err := ts.Run(ctx, hosttools.Call{Scope: scope, Tool: hosttools.List})
//
// The root package mcpvisor keeps the public surface (the tool names,
// Host.HostTools, the approval API) and answers the pipeline's host-tool
// stage with Run.
package hosttools
