package hosttools

func definitions() []*tool {
	return []*tool{
		{
			name: Activate, title: "Activate tools", idempotent: true,
			schema: `{"type":"object","properties":{"groups":{"type":"array","items":{"type":"string"},"minItems":1,` +
				`"description":"Tool groups: server names (all of a server's tools), \"config\" for the tools that manage servers, ` +
				`or single tools by their full names (mcp__<server>__<tool>, as search_tools lists them)."}},"required":["groups"],"additionalProperties":false}`,
			desc:    activateDescription,
			prepare: prepareActivate,
		},
		{
			name: Search, title: "Search tools", readOnly: true, idempotent: true,
			schema: `{"type":"object","properties":{` +
				`"query":{"type":"string","description":"What the tool should do, in a few words."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to return (default 10, at most 50)."}},` +
				`"required":["query"],"additionalProperties":false}`,
			desc:    searchDescription,
			prepare: prepareSearch,
		},
		{
			name: Register, title: "Register an MCP server", config: true, openWorld: true,
			schema: `{"type":"object","properties":{` +
				`"name":{"type":"string","description":"Unique name; its tools are called mcp__<name>__<tool>."},` +
				`"transport":{"type":"string","enum":["stdio","http","sse"]},` +
				`"command":{"type":"string","description":"stdio: the executable to run."},` +
				`"args":{"type":"array","items":{"type":"string"},"description":"stdio: its arguments."},` +
				`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"stdio: extra environment variables."},` +
				`"url":{"type":"string","description":"http/sse: the server's URL."},` +
				`"api_key":{"type":"string","description":"http/sse: sent as Authorization: Bearer <key>."},` +
				`"headers":{"type":"object","additionalProperties":{"type":"string"},"description":"http/sse: extra request headers."},` +
				`"description":{"type":"string","description":"What the server provides, shown in list_items and the catalog."},` +
				`"friendly_name":{"type":"string","description":"A display name."}},` +
				`"required":["name","transport"],"additionalProperties":false}`,
			desc: func(*Toolset) string {
				return "Add an MCP server, or replace the one of that name, and connect to it at once: stdio (command, args, env) or http/sse (url, api_key, headers). " +
					"The answer says whether it came up and lists its tools; activate its name with activate_tools to call them."
			},
			prepare: prepareRegister,
		},
		{
			name: Delete, title: "Delete an MCP server", config: true, destructive: true, idempotent: true,
			schema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`,
			desc: func(*Toolset) string {
				return "Remove an MCP server for good: its configuration is discarded and its process stopped at once. Irreversible; to turn a server off and keep it, use toggle_item."
			},
			prepare: prepareDelete,
		},
		{
			name: Toggle, title: "Enable or disable an item", config: true, idempotent: true,
			schema: `{"type":"object","properties":{"kind":{"type":"string","enum":["mcp"]},"id":{"type":"string","description":"The server's name."},` +
				`"enabled":{"type":"boolean"}},"required":["kind","id","enabled"],"additionalProperties":false}`,
			desc: func(*Toolset) string {
				return "Enable or disable an MCP server (kind \"mcp\", id = its name). Takes effect at once and is remembered across restarts."
			},
			prepare: prepareToggle,
		},
		{
			name: List, title: "List items", config: true, readOnly: true, idempotent: true,
			schema: `{"type":"object","properties":{"type":{"type":"string","enum":["mcp"]}},"additionalProperties":false}`,
			desc: func(*Toolset) string {
				return "List the MCP servers (type \"mcp\"): name, friendly name, description, transport, enabled, state, number of tools and last error."
			},
			prepare: prepareList,
		},
	}
}
