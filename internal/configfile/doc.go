// Package configfile reads the configuration file format: the JSON (with
// comments) that agent tools write to name their MCP servers, and the
// ${NAME} references in it.
//
// It knows the shapes those tools use: a top-level "mcpServers" object
// (Claude Code, Cursor, Gemini CLI) or "servers" object (VS Code), type
// aliases ("streamable-http"), Gemini CLI's "httpUrl", "api_key" for
// "apiKey", "enabled" and "disabled", Claude Code's "oauth" object and
// "headersHelper", mcpvisor's own fields ("prefix", "protocolVersion",
// "includeTools" and the like), and the fields other tools define that are
// ignored with a warning. Its errors are one line each, naming the
// server and the field, and wrap ErrInvalid.
//
//	f, err := configfile.Parse("mcp.json", data, configfile.Options{Lookup: os.LookupEnv})
//	if err != nil {
//		return err // every problem, joined
//	}
//	for _, s := range f.Servers {
//		t, _ := s.Transport()
//		fmt.Println(s.Name, t, s.Enabled)
//	}
//
// The root package's Config and ServerConfig are the public face of what
// Parse returns; the root package also turns an entry into the runtime's
// spec, expanding its references with Expand.
package configfile
