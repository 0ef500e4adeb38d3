package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// toolDialect is the agent tool whose file a configuration is. The tools
// agree on most of the format; a toolDialect decides the few things they do
// not: the file's syntax, where its servers are, the unit of a number
// "timeout", what a "url" without a "type" speaks, and which variable
// spellings are resolved when the file loads.
type toolDialect string

const (
	// dialectJSON is the common format: Claude Code's .mcp.json, Claude
	// Desktop's claude_desktop_config.json, mcpvisor's own fields. A number
	// "timeout" is milliseconds; a "url" without a "type" is sse when its
	// path ends in /sse, http otherwise.
	dialectJSON toolDialect = "json"
	// dialectVSCode is VS Code's .vscode/mcp.json: "servers" and "inputs";
	// ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome},
	// ${pathSeparator} and ${/} are resolved when the file loads.
	dialectVSCode toolDialect = "vscode"
	// dialectCursor is Cursor's .cursor/mcp.json: as JSON, with VS Code's
	// predefined variables resolved when the file loads.
	dialectCursor toolDialect = "cursor"
	// dialectGemini is Gemini CLI's settings.json: $VAR is ${VAR}, a "url"
	// without a "type" is sse ("httpUrl" is http), and a tool in both
	// "includeTools" and "excludeTools" is excluded.
	dialectGemini toolDialect = "gemini"
	// dialectWindsurf is Windsurf's mcp_config.json ("serverUrl").
	dialectWindsurf toolDialect = "windsurf"
	// dialectCline is Cline's cline_mcp_settings.json: a number "timeout"
	// is seconds, and a "url" without a "type" is sse.
	dialectCline toolDialect = "cline"
	// dialectRoo is Roo Code's .roo/mcp.json or mcp_settings.json, read as
	// Cline's.
	dialectRoo toolDialect = "roo"
	// dialectZed is Zed's settings.json: servers in "context_servers".
	dialectZed toolDialect = "zed"
	// dialectCodex is Codex's config.toml: [mcp_servers.NAME] tables in
	// Codex's field names, and a tool in both "enabled_tools" and
	// "disabled_tools" is excluded.
	dialectCodex toolDialect = "codex"
	// dialectContinue is Continue's YAML: a config.yaml or a block in
	// .continue/mcpServers, its "mcpServers" a list of named blocks;
	// ${{ secrets.NAME }} is ${NAME}.
	dialectContinue toolDialect = "continue"
)

// syntax is a file's concrete syntax.
type syntax int

const (
	syntaxJSON syntax = iota // JSON with comments and trailing commas
	syntaxTOML
	syntaxYAML
)

func (d toolDialect) syntax() syntax {
	switch d {
	case dialectCodex:
		return syntaxTOML
	case dialectContinue:
		return syntaxYAML
	}
	return syntaxJSON
}

// file names the dialect's file for messages.
func (d toolDialect) file() string {
	switch d {
	case dialectVSCode:
		return "VS Code's .vscode/mcp.json"
	case dialectCursor:
		return "Cursor's .cursor/mcp.json"
	case dialectGemini:
		return "Gemini CLI's settings.json"
	case dialectWindsurf:
		return "Windsurf's mcp_config.json"
	case dialectCline:
		return "Cline's cline_mcp_settings.json"
	case dialectRoo:
		return "Roo Code's .roo/mcp.json"
	case dialectZed:
		return "Zed's settings.json"
	case dialectCodex:
		return "Codex's config.toml"
	case dialectContinue:
		return "Continue's YAML"
	}
	return "an mcpServers JSON file"
}

// predefinedVariables reports whether VS Code's predefined variables
// (${workspaceFolder} and the like) are resolved in the dialect's files.
func (d toolDialect) predefinedVariables() bool {
	return d == dialectVSCode || d == dialectCursor
}

// timeoutUnit is what a number "timeout" counts.
func (d toolDialect) timeoutUnit() time.Duration {
	if d == dialectCline || d == dialectRoo {
		return time.Second
	}
	return time.Millisecond
}

// urlType is the type of an entry with a "url", no "type" and no
// "command", when the dialect fixes it; "" infers it from the url.
func (d toolDialect) urlType() string {
	switch d {
	case dialectGemini, dialectCline, dialectRoo:
		return "sse"
	}
	return ""
}

// excludeWins reports whether a tool the dialect's file both includes
// and excludes is excluded, as Gemini CLI and Codex document, rather than
// an error.
func (d toolDialect) excludeWins() bool {
	return d == dialectGemini || d == dialectCodex
}

// allowPrivateFix is how the dialect writes "allowPrivate": true in an
// entry, for the warning about a loopback or private url.
func (d toolDialect) allowPrivateFix(server string) string {
	switch d.syntax() {
	case syntaxTOML:
		return "add allowPrivate = true to [mcp_servers." + server + "]"
	case syntaxYAML:
		return "add allowPrivate: true to the entry"
	}
	return `add "allowPrivate": true to the entry`
}

// dialectFromPath tells the dialect from a file's path: its extension
// (.toml is Codex's, .yaml and .yml Continue's) and the names the tools
// give their files. ok is false when the path says nothing (a JSON file of
// another name), and the content decides (dialectFromContent).
func dialectFromPath(path string) (d toolDialect, ok bool) {
	if path == "" {
		return dialectJSON, false
	}
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch strings.ToLower(filepath.Ext(base)) {
	case ".toml":
		return dialectCodex, true
	case ".yaml", ".yml":
		return dialectContinue, true
	}
	switch {
	case base == "mcp.json" && dir == ".vscode":
		return dialectVSCode, true
	case base == "mcp.json" && dir == ".cursor":
		return dialectCursor, true
	case base == "settings.json" && dir == ".gemini":
		return dialectGemini, true
	case base == "mcp.json" && dir == ".roo", base == "mcp_settings.json":
		return dialectRoo, true
	case base == "cline_mcp_settings.json":
		return dialectCline, true
	case base == "mcp_config.json":
		return dialectWindsurf, true
	case base == "settings.json" && (dir == ".zed" || dir == "zed"):
		return dialectZed, true
	}
	return dialectJSON, false
}

// geminiSettings are top-level keys of Gemini CLI's settings.json.
var geminiSettings = []string{"general", "ui", "model", "tools", "context", "security", "mcp", "selectedAuthType"}

// dialectFromContent tells the dialect of a JSON file whose path said
// nothing from its top-level members: "context_servers" is Zed's,
// "servers" VS Code's, Gemini CLI's settings or an entry's "httpUrl" or
// "trust" Gemini CLI's, "alwaysAllow" or "autoApprove" Cline's,
// "watchPaths" Roo Code's, "serverUrl" Windsurf's.
func dialectFromContent(top []jsonMember) toolDialect {
	var servers []jsonMember
	has := map[string]bool{}
	for _, m := range top {
		has[m.key] = true
		if m.key == "mcpServers" && jsonKind(m.value) == "an object" {
			servers = objectMembers(m.value)
		}
	}
	switch {
	case has["context_servers"]:
		return dialectZed
	case has["servers"] && !has["mcpServers"]:
		return dialectVSCode
	case slices.ContainsFunc(geminiSettings, func(k string) bool { return has[k] }):
		return dialectGemini
	}
	fields := map[string]bool{}
	for _, s := range servers {
		if jsonKind(s.value) == "an object" {
			for _, f := range objectMembers(s.value) {
				fields[f.key] = true
			}
		}
	}
	switch {
	case fields["httpUrl"] || fields["trust"]:
		return dialectGemini
	case fields["watchPaths"]:
		return dialectRoo
	case fields["alwaysAllow"] || fields["autoApprove"]:
		return dialectCline
	case fields["serverUrl"]:
		return dialectWindsurf
	}
	return dialectJSON
}

// toolDirs are the directories agent tools keep a project's settings in:
// a file there belongs to the directory above.
var toolDirs = []string{".vscode", ".cursor", ".gemini", ".roo", ".continue", ".codex", ".zed"}

// workspaceFolder is the project a configuration file at path belongs
// to, as an absolute path: the directory holding the file, or the one
// above it when that is a tool's own (.vscode, .cursor, .gemini, .roo,
// .continue, .codex, .zed, or .continue/mcpServers). For path "" it is the
// working directory.
func workspaceFolder(path string) (string, error) {
	if path == "" {
		return os.Getwd()
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	if filepath.Base(dir) == "mcpServers" && filepath.Base(filepath.Dir(dir)) == ".continue" {
		dir = filepath.Dir(dir)
	}
	if slices.Contains(toolDirs, filepath.Base(dir)) {
		dir = filepath.Dir(dir)
	}
	return dir, nil
}

// serverKeys are the top-level members that hold a JSON or YAML file's
// servers, in the order they are looked for.
var serverKeys = []string{"mcpServers", "servers", "context_servers"}

// noServersError is the error for a file that names none of the keys
// that hold servers.
func noServersError(name string, d toolDialect) *Error {
	where := "no MCP servers found"
	if name != "" {
		where += " in " + name
	}
	switch d.syntax() {
	case syntaxTOML:
		return &Error{msg: where + ": want [mcp_servers.NAME] tables, as in Codex's config.toml"}
	case syntaxYAML:
		return &Error{msg: where + `: want an "mcpServers" list, as in Continue's config.yaml`}
	}
	return &Error{msg: where + `: want one of "mcpServers", "servers" (VS Code) or "context_servers" (Zed)`}
}
