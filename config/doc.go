// Package config reads the configuration files that agent tools write
// to name their MCP servers, and the ${NAME} references in them.
//
// Each tool's documented file loads unchanged. The file's dialect, told from its
// path or else its content, decides the few things the tools do
// not agree on:
//
//   - the syntax: JSON with comments and trailing commas; Codex's TOML
//     (*.toml); Continue's YAML (*.yaml, *.yml), read with
//     github.com/goccy/go-yaml. TOML and YAML are turned into the JSON
//     they stand for, members in document order, so that one decoder reads
//     all three and its errors name fields alike;
//   - where the servers are: "mcpServers" (Claude Code, Claude Desktop,
//     Cursor, Gemini CLI, Windsurf, Cline, Roo Code), "servers" (VS Code,
//     with its "inputs"), "context_servers" (Zed, in both of its shapes),
//     [mcp_servers.NAME] tables (Codex), a list of named blocks (Continue);
//   - the fields' names and units: Gemini CLI's "httpUrl", Windsurf's
//     "serverUrl", "disabledTools", Codex's snake_case fields, Continue's
//     "requestOptions" and "connectionTimeout"; a number "timeout" is
//     seconds for Cline and Roo Code, milliseconds elsewhere; a "url"
//     without a "type" is SSE for Gemini CLI, Cline and Roo Code;
//   - what is resolved when the file loads: VS Code's predefined
//     variables (VS Code, Cursor) and "envFile"; the other spellings
//     (Gemini CLI's $NAME, Continue's ${{ secrets.NAME }}) become ${NAME}.
//
// mcpvisor's own fields ("prefix", "protocolVersion", "includeTools" and
// the like) are read in every dialect; fields other tools define are
// ignored with a warning each. Errors are one line each, naming the server
// and the field, and wrap ErrInvalid (*Error).
//
//	cfg, err := config.Load(".mcp.json")
//	for _, w := range cfg.Warnings { // also when err != nil
//		log.Print(w)
//	}
//	if err != nil {
//		return err // every problem, joined; each an *Error naming server and field
//	}
//	for _, s := range cfg.Servers {
//		t, _ := s.Transport()
//		fmt.Println(s.Name, t, s.Enabled)
//	}
//
// A Server is the entry as declared, its ${...} references kept as
// written; Server.Expand is the same entry as the host runs it, the
// references resolved. The root package mcpvisor re-exports these types
// (ServerConfig is Server, Config is Config, LoadConfig is Load) and turns
// an expanded entry into the runtime's actors.ServerSpec; this package
// imports neither, so that a tool that only reads or writes configuration
// files does not pull in the runtime.
package config
