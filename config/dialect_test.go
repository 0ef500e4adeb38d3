package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDialectFromPath(t *testing.T) {
	tests := []struct {
		path string
		want toolDialect
		ok   bool
	}{
		{"", dialectJSON, false},
		{"mcp.json", dialectJSON, false},
		{"/p/.mcp.json", dialectJSON, false},
		{"/home/u/Library/Application Support/Claude/claude_desktop_config.json", dialectJSON, false},
		{"/p/.vscode/mcp.json", dialectVSCode, true},
		{"/p/.cursor/mcp.json", dialectCursor, true},
		{"/home/u/.gemini/settings.json", dialectGemini, true},
		{"/p/.roo/mcp.json", dialectRoo, true},
		{"/x/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json", dialectRoo, true},
		{"/x/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json", dialectCline, true},
		{"/home/u/.codeium/windsurf/mcp_config.json", dialectWindsurf, true},
		{"/home/u/.config/zed/settings.json", dialectZed, true},
		{"/p/.zed/settings.json", dialectZed, true},
		{"/p/settings.json", dialectJSON, false},
		{"/home/u/.codex/config.toml", dialectCodex, true},
		{"servers.TOML", dialectCodex, true},
		{"/home/u/.continue/config.yaml", dialectContinue, true},
		{"/p/.continue/mcpServers/playwright-mcp.yml", dialectContinue, true},
		{"/p/.continue/mcpServers/mcp.json", dialectJSON, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, ok := dialectFromPath(tt.path)
			if got != tt.want || ok != tt.ok {
				t.Errorf("dialectFromPath(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDialectFromContent(t *testing.T) {
	tests := []struct {
		name, data string
		want       toolDialect
	}{
		{"claude", `{"mcpServers": {"a": {"command": "x"}}}`, dialectJSON},
		{"vscode", `{"servers": {"a": {"command": "x"}}}`, dialectVSCode},
		{"zed", `{"theme": "One Dark", "context_servers": {"a": {"command": "x"}}}`, dialectZed},
		{"gemini settings", `{"ui": {"theme": "GitHub"}, "mcpServers": {"a": {"command": "x"}}}`, dialectGemini},
		{"gemini auth", `{"selectedAuthType": "oauth-personal", "mcpServers": {}}`, dialectGemini},
		{"gemini httpUrl", `{"mcpServers": {"a": {"httpUrl": "https://h.example/mcp"}}}`, dialectGemini},
		{"gemini trust", `{"mcpServers": {"a": {"command": "x", "trust": true}}}`, dialectGemini},
		{"cline", `{"mcpServers": {"a": {"command": "x", "autoApprove": []}}}`, dialectCline},
		{"roo", `{"mcpServers": {"a": {"command": "x", "alwaysAllow": [], "watchPaths": ["a"]}}}`, dialectRoo},
		{"windsurf", `{"mcpServers": {"a": {"serverUrl": "https://h.example/mcp"}}}`, dialectWindsurf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseFile("", []byte(tt.data), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if f.dialect != tt.want {
				t.Errorf("toolDialect = %q, want %q", f.dialect, tt.want)
			}
		})
	}
}

func TestWorkspaceFolder(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{"", wd},
		{"/p/.mcp.json", "/p"},
		{"/p/.vscode/mcp.json", "/p"},
		{"/p/.cursor/mcp.json", "/p"},
		{"/p/.gemini/settings.json", "/p"},
		{"/p/.roo/mcp.json", "/p"},
		{"/p/.codex/config.toml", "/p"},
		{"/p/.continue/config.yaml", "/p"},
		{"/p/.continue/mcpServers/x.yaml", "/p"},
		{"/p/mcpServers/x.yaml", "/p/mcpServers"},
		{"/p/sub/settings.json", "/p/sub"},
		{"mcp.json", wd},
		{".vscode/mcp.json", wd},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := workspaceFolder(tt.path)
			if err != nil || got != tt.want {
				t.Errorf("workspaceFolder(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

// parseCase is one Parse of a file's contents, with what it should give.
type parseCase struct {
	name     string
	path     string // Options.Path and the name in messages
	data     string
	vars     map[string]string
	want     []Server
	inputs   []Input
	warnings []string
	errs     []string
}

func (tt parseCase) run(t *testing.T) {
	t.Helper()
	f, err := parseFile(tt.path, []byte(tt.data), Options{Path: tt.path, Lookup: lookupOf(tt.vars)})
	if f == nil {
		t.Fatal("Parse returned a nil *parsedFile")
	}
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
		}
		if len(f.Servers) > 0 || len(f.Inputs) > 0 {
			t.Errorf("a failed Parse returned servers or inputs: %+v", f)
		}
	}
	if diff := cmp.Diff(tt.errs, got); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tt.warnings, f.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(tt.want, f.Servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tt.inputs, f.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
}

func TestParseVSCode(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	sep := string(os.PathSeparator)
	tests := []parseCase{{
		name: "predefined variables and inputs",
		path: "/proj/app/.vscode/mcp.json",
		data: `{
			"inputs": [
				{"type": "promptString", "id": "api-key", "description": "API key", "password": true},
				{"type": "pickString", "id": "region", "options": ["eu", {"label": "United States", "value": "us"}], "default": "eu"},
				{"id": "plain"}
			],
			"servers": {
				"fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}", "${userHome}${/}notes", "${workspaceFolderBasename}"],
					"env": {"API_KEY": "${input:api-key}", "REGION": "${input:region}", "SEP": "${pathSeparator}", "TOKEN": "${env:TOKEN}"}},
				"remote": {"type": "http", "url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${input:plain}"}}
			}
		}`,
		vars: map[string]string{"TOKEN": "t"},
		want: []Server{{
			Name: "fs", Type: "stdio", Enabled: true, Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/proj/app", "/home/u" + sep + "notes", "app"},
			Env:  map[string]string{"API_KEY": "${input:api-key}", "REGION": "${input:region}", "SEP": sep, "TOKEN": "${env:TOKEN}"},
		}, {
			Name: "remote", Type: "http", Enabled: true, URL: "https://h.example/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${input:plain}"},
		}},
		inputs: []Input{
			{ID: "api-key", Type: "promptString", Description: "API key", Password: true},
			{ID: "region", Type: "pickString", Default: "eu", Options: []string{"eu", "us"}},
			{ID: "plain", Type: "promptString"},
		},
	}, {
		name: "an input the file does not declare",
		path: "/proj/.vscode/mcp.json",
		data: `{"inputs": [{"type": "promptString", "id": "key"}],
			"servers": {"s": {"command": "x", "env": {"K": "${input:key}", "L": "${input:nope}"}, "disabled": true}}}`,
		errs: []string{`config: server "s": field "env.L": ${input:nope} names no input in "inputs"`},
	}, {
		name: "inputs referenced without an inputs array",
		data: `{"servers": {"s": {"command": "x", "args": ["${input:key}"]}}}`,
		errs: []string{`config: server "s": field "args[0]": ${input:key} names no input: the file has no "inputs"`},
	}, {
		name: "bad inputs",
		data: `{"inputs": [{"type": "promptString"}, {"id": "a", "type": "command", "command": "x"}, {"id": "b"}, {"id": "b"},
			{"id": "c", "type": "pickString"}, {"id": "d e"}, "x", {"id": "f", "password": "yes"}],
			"servers": {"s": {"command": "x"}}}`,
		warnings: []string{`inputs[1]: unknown field "command" ignored`},
		errs: []string{
			`config: field "inputs[0].id": required`,
			`config: field "inputs[1].type": want "promptString" or "pickString", got "command" (mcpvisor cannot run VS Code's commands)`,
			`config: field "inputs[3].id": "b" is given more than once`,
			`config: field "inputs[4].options": required for a "pickString" input`,
			`config: field "inputs[5].id": "d e" cannot be referenced as ${input:ID}: no spaces, quotes, braces, '$' or '\'`,
			`config: field "inputs[6]": want an object, got a string`,
			`config: field "inputs[7].password": want true or false, got a string`,
		},
	}, {
		name:     "predefined variables are VS Code's and Cursor's only",
		path:     "/proj/.mcp.json",
		data:     `{"mcpServers": {"s": {"command": "x", "args": ["${workspaceFolder}"]}}}`,
		want:     []Server{{Name: "s", Type: "stdio", Enabled: true, Command: "x", Args: []string{"${workspaceFolder}"}}},
		warnings: []string{`server "s": field "args[0]": variable workspaceFolder is not set and has no default (the server cannot start until it is set)`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseEnvFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "# settings\nexport A=from-file\nB='single $quoted'\nC=\"double\\nline\" \nD=plain value # a comment\n\nOWN=file\n")
	write("bad.env", "A=1\nnot a pair\n")
	path := filepath.Join(dir, ".cursor", "mcp.json")
	tests := []parseCase{{
		name: "read at load, the entry's env winning",
		path: path,
		data: `{"mcpServers": {"s": {"command": "x", "env": {"OWN": "entry"}, "envFile": "${workspaceFolder}/.env"}}}`,
		want: []Server{{Name: "s", Type: "stdio", Enabled: true, Command: "x",
			Env: map[string]string{"A": "from-file", "B": "single $quoted", "C": "double\nline", "D": "plain value", "OWN": "entry"}}},
	}, {
		name: "relative to the workspace folder",
		path: path,
		data: `{"mcpServers": {"s": {"command": "x", "envFile": ".env"}}}`,
		want: []Server{{Name: "s", Type: "stdio", Enabled: true, Command: "x",
			Env: map[string]string{"A": "from-file", "B": "single $quoted", "C": "double\nline", "D": "plain value", "OWN": "file"}}},
	}, {
		name: "from a variable",
		path: path,
		data: `{"mcpServers": {"s": {"command": "x", "envFile": "${DIR}/bad.env"}}}`,
		vars: map[string]string{"DIR": dir},
		errs: []string{`config: server "s": field "envFile": ` + filepath.Join(dir, "bad.env") + `: line 2: want KEY=VALUE`},
	}, {
		name: "missing",
		path: path,
		data: `{"mcpServers": {"s": {"command": "x", "envFile": "missing.env"}}}`,
		errs: []string{`config: server "s": field "envFile": open ` + filepath.Join(dir, "missing.env") + `: no such file or directory`},
	}, {
		name:     "missing for a disabled server",
		path:     path,
		data:     `{"mcpServers": {"s": {"command": "x", "envFile": "missing.env", "disabled": true}}}`,
		want:     []Server{{Name: "s", Type: "stdio", Command: "x"}},
		warnings: []string{`server "s": field "envFile": open ` + filepath.Join(dir, "missing.env") + `: no such file or directory (the server is disabled)`},
	}, {
		name: "not a string",
		path: path,
		data: `{"mcpServers": {"s": {"command": "x", "envFile": [".env"]}}}`,
		errs: []string{`config: server "s": field "envFile": want a string, got an array`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{in: "", want: map[string]string{}},
		{in: "A=1\r\nB = two \n", want: map[string]string{"A": "1", "B": "two"}},
		{in: "export A=1\n  # c\nA=2", want: map[string]string{"A": "2"}},
		{in: `A="x \"q\" \\ \t"`, want: map[string]string{"A": "x \"q\" \\ \t"}},
		{in: "A=\"first\nsecond\"\nB=3", want: map[string]string{"A": "first\nsecond", "B": "3"}},
		{in: "A='a # b'\nB=a#b\nC=a # b", want: map[string]string{"A": "a # b", "B": "a#b", "C": "a"}},
		{in: "A=\nB=''", want: map[string]string{"A": "", "B": ""}},
		{in: "my.key-1=v", want: map[string]string{"my.key-1": "v"}},
		{in: "A=1\nB", wantErr: "line 2: want KEY=VALUE"},
		{in: "1A=x", wantErr: "line 1: want KEY=VALUE"},
		{in: "A='open", wantErr: "line 1: unterminated single-quoted value of A"},
		{in: "A=\"open\nstill", wantErr: "line 1: unterminated double-quoted value of A"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseDotenv(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseDotenv error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseDotenv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseGemini(t *testing.T) {
	const path = "/p/.gemini/settings.json"
	tests := []parseCase{{
		name: "$VAR is ${VAR}",
		path: path,
		data: `{"mcpServers": {
			"s": {"command": "$BIN", "args": ["-v", "${PWD}:/w", "$5", "$$HOME", "cost$"], "env": {"API_KEY": "$TOKEN", "DB": "${DB:-x}"}, "cwd": "$PWD/x", "trust": true},
			"h": {"httpUrl": "https://$HOST/mcp", "headers": {"Authorization": "Bearer $TOKEN"}, "timeout": 5000}}}`,
		vars: map[string]string{"BIN": "b", "PWD": "/w", "TOKEN": "t", "HOME": "/h", "HOST": "h.example"},
		want: []Server{{
			Name: "s", Type: "stdio", Enabled: true, Command: "${BIN}",
			Args: []string{"-v", "${PWD}:/w", "$5", "$${HOME}", "cost$"},
			Env:  map[string]string{"API_KEY": "${TOKEN}", "DB": "${DB:-x}"}, Cwd: "${PWD}/x",
		}, {
			Name: "h", Type: "http", Enabled: true, URL: "https://${HOST}/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}, Timeout: Duration(5 * time.Second),
		}},
		warnings: []string{`server "s": field "trust" is not supported by mcpvisor, ignored: in Gemini CLI it skips confirming this server's tool calls; ` + confirmNote},
	}, {
		name:     "an unset $VAR",
		path:     path,
		data:     `{"mcpServers": {"s": {"command": "x", "env": {"API_KEY": "$TOKEN"}, "trust": false}}}`,
		want:     []Server{{Name: "s", Type: "stdio", Enabled: true, Command: "x", Env: map[string]string{"API_KEY": "${TOKEN}"}}},
		warnings: []string{`server "s": field "env.API_KEY": variable TOKEN is not set and has no default (the server cannot start until it is set)`},
	}, {
		name: "a url is sse, excludeTools wins",
		path: path,
		data: `{"mcpServers": {
			"events": {"url": "https://h.example/events"},
			"typed": {"type": "http", "url": "https://h.example/mcp"},
			"local": {"command": "x", "includeTools": ["a", "b"], "excludeTools": ["b"]},
			"none": {"command": "x", "includeTools": ["a"], "excludeTools": ["a"]}}}`,
		want: []Server{
			{Name: "events", Type: "sse", Enabled: true, URL: "https://h.example/events"},
			{Name: "typed", Type: "http", Enabled: true, URL: "https://h.example/mcp"},
			{Name: "local", Type: "stdio", Enabled: true, Command: "x", IncludeTools: []string{"a"}, ExcludeTools: []string{"b"}},
			{Name: "none", Type: "stdio", Enabled: true, Command: "x", ExcludeTools: []string{"a"}},
		},
	}, {
		name: "settings without servers are not a configuration",
		path: path,
		data: `{"ui": {"theme": "GitHub"}}`,
		errs: []string{`config: no MCP servers found in /p/.gemini/settings.json: want one of "mcpServers", "servers" (VS Code) or "context_servers" (Zed)`},
	}, {
		name: "settings with no servers yet",
		path: path,
		data: `{"ui": {"theme": "GitHub"}, "mcpServers": {}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseWindsurfClineRoo(t *testing.T) {
	tests := []parseCase{{
		name: "windsurf serverUrl and disabledTools",
		path: "/home/u/.codeium/windsurf/mcp_config.json",
		data: `{"mcpServers": {
			"remote": {"serverUrl": "https://h.example/mcp", "headers": {"API_KEY": "Bearer ${env:AUTH_TOKEN}"}},
			"events": {"serverUrl": "https://h.example/sse"},
			"local": {"command": "x", "disabledTools": ["rm"], "disabled": false}}}`,
		vars: map[string]string{"AUTH_TOKEN": "t"},
		want: []Server{
			{Name: "remote", Type: "http", Enabled: true, URL: "https://h.example/mcp", Headers: map[string]string{"API_KEY": "Bearer ${env:AUTH_TOKEN}"}},
			{Name: "events", Type: "sse", Enabled: true, URL: "https://h.example/sse"},
			{Name: "local", Type: "stdio", Enabled: true, Command: "x", ExcludeTools: []string{"rm"}},
		},
	}, {
		name: "windsurf conflicts",
		path: "/home/u/.codeium/windsurf/mcp_config.json",
		data: `{"mcpServers": {
			"a": {"serverUrl": "https://h.example/mcp", "url": "https://h.example/mcp"},
			"b": {"command": "x", "disabledTools": ["rm"], "excludeTools": ["mv"]}}}`,
		errs: []string{
			`config: server "a": field "serverUrl": cannot be combined with "url"; give one`,
			`config: server "b": field "disabledTools": cannot be combined with "excludeTools"; give one`,
		},
	}, {
		name: "cline timeouts are seconds, a url is sse",
		path: "/x/cline_mcp_settings.json",
		data: `{"mcpServers": {
			"s": {"command": "x", "timeout": 60, "alwaysAllow": ["read"], "autoApprove": [], "disabled": false, "type": "stdio"},
			"remote": {"url": "https://h.example/mcp", "timeout": "90s"},
			"stream": {"type": "streamableHttp", "url": "https://h.example/mcp", "timeout": 1.5, "disabled": true}}}`,
		want: []Server{
			{Name: "s", Type: "stdio", Enabled: true, Command: "x", Timeout: Duration(time.Minute)},
			{Name: "remote", Type: "sse", Enabled: true, URL: "https://h.example/mcp", Timeout: Duration(90 * time.Second)},
			{Name: "stream", Type: "http", URL: "https://h.example/mcp", Timeout: Duration(1500 * time.Millisecond)},
		},
		warnings: []string{`server "s": field "alwaysAllow" is not supported by mcpvisor, ignored: it lists tools to run without confirmation; ` + confirmNote},
	}, {
		name: "cline timeout of the wrong type",
		path: "/x/cline_mcp_settings.json",
		data: `{"mcpServers": {"s": {"command": "x", "timeout": true}}}`,
		errs: []string{`config: server "s": field "timeout": want seconds (a number) or a duration string like "30s", got a boolean`},
	}, {
		name: "roo",
		path: "/p/.roo/mcp.json",
		data: `{"mcpServers": {
			"s": {"command": "x", "args": ["${env:HOME}"], "cwd": "/w", "watchPaths": ["build/index.js"], "disabledTools": ["rm"], "timeout": 300},
			"remote": {"type": "streamable-http", "url": "https://h.example/mcp", "headers": {"X-API-Key": "k"}, "alwaysAllow": []},
			"legacy": {"type": "sse", "url": "https://h.example/base"}}}`,
		vars: map[string]string{"HOME": "/h"},
		want: []Server{
			{Name: "s", Type: "stdio", Enabled: true, Command: "x", Args: []string{"${env:HOME}"}, Cwd: "/w", ExcludeTools: []string{"rm"}, Timeout: Duration(5 * time.Minute)},
			{Name: "remote", Type: "http", Enabled: true, URL: "https://h.example/mcp", Headers: map[string]string{"X-API-Key": "k"}},
			{Name: "legacy", Type: "sse", Enabled: true, URL: "https://h.example/base"},
		},
		warnings: []string{`server "s": field "watchPaths" is not supported by mcpvisor, ignored: mcpvisor does not restart a server when files change`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseZed(t *testing.T) {
	const path = "/home/u/.config/zed/settings.json"
	tests := []parseCase{{
		name: "both shapes, extensions and remote servers",
		path: path,
		data: `// Zed's settings are JSON with comments
		{
			"theme": "One Dark",
			"context_servers": {
				"flat": {"source": "custom", "command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "enabled": true},
				"nested": {"command": {"path": "npx", "args": ["-y", "y"], "env": {"B": "2"}}, "settings": {"k": "v"}},
				"ext": {"source": "extension", "enabled": true, "settings": {"key": "secret"}},
				"remote": {"url": "https://h.example/mcp", "headers": {"Authorization": "Bearer t"}},
			},
		}`,
		want: []Server{
			{Name: "flat", Type: "stdio", Enabled: true, Command: "npx", Args: []string{"-y", "x"}, Env: map[string]string{"A": "1"}},
			{Name: "nested", Type: "stdio", Enabled: true, Command: "npx", Args: []string{"-y", "y"}, Env: map[string]string{"B": "2"}},
			{Name: "remote", Type: "http", Enabled: true, URL: "https://h.example/mcp", Headers: map[string]string{"Authorization": "Bearer t"}},
		},
		warnings: []string{
			`server "nested": field "settings" is not supported by mcpvisor, ignored: it configures a Zed extension`,
			`server "ext": a Zed extension ("source": "extension"), which only Zed can run: skipped`,
		},
	}, {
		name: "bad entries",
		path: path,
		data: `{"context_servers": {
			"a": {"source": "registry", "command": "x"},
			"b": {"command": {"args": ["x"], "cwd": "/"}},
			"c": {"command": {"path": "x", "args": "y"}}}}`,
		warnings: []string{`server "b": unknown field "command.cwd" ignored`},
		errs: []string{
			`config: server "a": field "source": want "custom" or "extension", got "registry"`,
			`config: server "b": field "command.path": required: the command to run`,
			`config: server "c": field "command.args": want an array of strings, got a string`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseCodex(t *testing.T) {
	const path = "/home/u/.codex/config.toml"
	tests := []parseCase{{
		name: "every field",
		path: path,
		data: `model = "gpt-5-codex"

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env_vars = ["LOCAL_TOKEN", { name = "REMOTE_TOKEN", source = "remote" }, { name = "OWN" }]
cwd = "/w"
startup_timeout_sec = 20
tool_timeout_sec = 45.5

[mcp_servers.docs.env]
OWN = "own"
MY_ENV_VAR = "MY_ENV_VALUE"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
env_http_headers = { "X-Team" = "FIGMA_TEAM" }
scopes = ["files:read"]
oauth = { client_id = "abc" }
startup_timeout_ms = 2500

[mcp_servers.chrome_devtools]
url = "https://h.example/mcp"
enabled_tools = ["open", "screenshot"]
disabled_tools = ["screenshot"] # applied after enabled_tools
enabled = false
name = "Chrome"
`,
		vars: map[string]string{"FIGMA_OAUTH_TOKEN": "f", "FIGMA_TEAM": "t"},
		want: []Server{{
			Name: "docs", Type: "stdio", Enabled: true, Command: "npx", Args: []string{"-y", "@upstash/context7-mcp"}, Cwd: "/w",
			Env:            map[string]string{"OWN": "own", "MY_ENV_VAR": "MY_ENV_VALUE", "LOCAL_TOKEN": "${LOCAL_TOKEN:-}", "REMOTE_TOKEN": "${REMOTE_TOKEN:-}"},
			StartupTimeout: Duration(20 * time.Second), Timeout: Duration(45500 * time.Millisecond),
		}, {
			Name: "figma", Type: "http", Enabled: true, URL: "https://mcp.figma.com/mcp",
			Headers: map[string]string{"X-Figma-Region": "us-east-1", "X-Team": "${FIGMA_TEAM}", "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}"},
			OAuth:   &OAuth{ClientID: "abc", Scopes: "files:read"}, StartupTimeout: Duration(2500 * time.Millisecond),
		}, {
			Name: "chrome_devtools", Type: "http", URL: "https://h.example/mcp", IncludeTools: []string{"open"}, ExcludeTools: []string{"screenshot"},
		}},
		warnings: []string{`server "docs": field "env_vars[1]": source "remote" is not supported by mcpvisor, ignored: REMOTE_TOKEN is read from mcpvisor's environment`},
	}, {
		name: "other spellings and unknown fields",
		path: path,
		data: `[mcp_servers.s]
command = "x"
headers = { A = "1" }
timeout = 5
required = true
tools = {}
bearer_token = "secret"
colour = "blue"
prefix = false
`,
		want: []Server{{Name: "s", Type: "stdio", Enabled: true, Command: "x", Prefix: new(bool)}},
		warnings: []string{
			`server "s": unknown field "headers" ignored (Codex's config.toml spells it "http_headers")`,
			`server "s": unknown field "timeout" ignored (Codex's config.toml spells it "tool_timeout_sec", in seconds)`,
			`server "s": field "required" is not supported by mcpvisor, ignored: a server that fails to start does not stop the others`,
			`server "s": field "bearer_token" is not supported by mcpvisor, ignored: name an environment variable that holds the token in "bearer_token_env_var"`,
			`server "s": unknown field "colour" ignored`,
		},
	}, {
		name: "conflicting headers and bad names",
		path: path,
		data: `[mcp_servers.a]
url = "https://h.example/mcp"
bearer_token_env_var = "TOKEN"
http_headers = { "authorization" = "Basic x", "X-A" = "1" }
env_http_headers = { "x-a" = "A", "X-B" = "not a name" }

[mcp_servers.b]
command = "x"
env_vars = ["OK", "BAD NAME", 3, { name = "C", source = "elsewhere" }]
startup_timeout_sec = -1
tool_timeout_sec = 0.0001
`,
		errs: []string{
			`config: server "a": field "env_http_headers.X-B": want the name of an environment variable, got "not a name"`,
			`config: server "a": field "env_http_headers.x-a": x-a is also in "http_headers"; give it once`,
			`config: server "a": field "bearer_token_env_var": cannot be combined with an Authorization header; give one`,
			`config: server "b": field "env_vars[1]": want the name of an environment variable, got "BAD NAME"`,
			`config: server "b": field "env_vars[2]": want a string, got a number`,
			`config: server "b": field "env_vars[3].source": want "local" or "remote", got "elsewhere"`,
			`config: server "b": field "startup_timeout_sec": must not be negative, got -1`,
			`config: server "b": field "tool_timeout_sec": 0.0001 seconds: 100µs is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`,
		},
	}, {
		name: "a TOML syntax error",
		path: path,
		data: "[mcp_servers.a]\ncommand = npx\n",
		errs: []string{`config: /home/u/.codex/config.toml:2:11: not TOML, which Codex's config.toml is: expected value but found "npx" instead`},
	}, {
		name: "a JSON file named .toml",
		path: path,
		data: `{"mcpServers": {"a": {"command": "x"}}}`,
		errs: []string{`config: /home/u/.codex/config.toml:1:1: not TOML, which Codex's config.toml is: expected '.' or '=', but got '{' instead`},
	}, {
		name: "a table given twice",
		path: path,
		data: "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a]\ncommand = \"y\"\n",
		errs: []string{`config: /home/u/.codex/config.toml:3:2: not TOML, which Codex's config.toml is: Key 'mcp_servers.a' has already been defined.`},
	}, {
		name: "no mcp_servers",
		path: path,
		data: `model = "o3"` + "\n[mcp]\nx = 1\n",
		errs: []string{`config: no MCP servers found in /home/u/.codex/config.toml: want [mcp_servers.NAME] tables, as in Codex's config.toml`},
	}, {
		name: "mcp_servers not a table",
		path: path,
		data: `mcp_servers = ["a"]`,
		errs: []string{`config: "mcp_servers" is an array, want an object of servers keyed by name`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseContinue(t *testing.T) {
	const path = "/p/.continue/config.yaml"
	tests := []parseCase{{
		name: "a list of named blocks",
		path: path,
		data: `name: My Config
version: 0.0.1
schema: v1
models:
  - name: Claude
    apiKey: ${{ secrets.ANTHROPIC_API_KEY }}
mcpServers:
  - name: Browser search
    command: npx
    args:
      - "@playwright/mcp@latest"
    env:
      TOKEN: ${{ secrets.TOKEN }}
      INPUT: ${{inputs.OTHER}}
    cwd: /w
    connectionTimeout: 3000
  - name: sse
    type: sse
    url: https://h.example/sse
  - name: remote
    type: streamable-http
    url: https://h.example/mcp
    requestOptions:
      headers:
        Authorization: Bearer ${{ secrets.REMOTE_TOKEN }}
      proxy: http://proxy.example
`,
		vars: map[string]string{"TOKEN": "t", "OTHER": "o", "REMOTE_TOKEN": "r"},
		want: []Server{
			{Name: "Browser-search", Type: "stdio", Enabled: true, Command: "npx", Args: []string{"@playwright/mcp@latest"},
				Env: map[string]string{"TOKEN": "${TOKEN}", "INPUT": "${OTHER}"}, Cwd: "/w", StartupTimeout: Duration(3 * time.Second)},
			{Name: "sse", Type: "sse", Enabled: true, URL: "https://h.example/sse"},
			{Name: "remote", Type: "http", Enabled: true, URL: "https://h.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
		},
		warnings: []string{
			`server "Browser search" is named "Browser-search" (server names hold only letters, digits, '_' and '-')`,
			`server "remote": field "requestOptions.proxy" is not supported by mcpvisor, ignored`,
		},
	}, {
		name: "Claude's object in YAML",
		path: "/p/.continue/mcpServers/mcp.yaml",
		data: "mcpServers:\n  memory:\n    command: npx\n",
		want: []Server{{Name: "memory", Type: "stdio", Enabled: true, Command: "npx"}},
	}, {
		name: "bad blocks",
		path: path,
		data: `mcpServers:
  - name: a b
    command: x
  - name: a-b
    command: y
  - command: z
  - name: "!!"
    command: z
  - just a string
  - name: c
    command: x
    unknown: 1
    args: x
`,
		warnings: []string{
			`server "a b" is named "a-b" (server names hold only letters, digits, '_' and '-')`,
			`server "c": unknown field "unknown" ignored`,
		},
		errs: []string{
			`config: field "mcpServers[2].name": required: the server's name`,
			`config: field "mcpServers[3].name": "!!" has no letter or digit to name a server after`,
			`config: mcpServers[4]: entry is a string, want an object with a name`,
			`config: server "a-b": defined more than once in "mcpServers"`,
			`config: server "c": field "args": want an array of strings, got a string`,
		},
	}, {
		name: "a YAML syntax error",
		path: path,
		data: "mcpServers:\n  - name: a\n    args: [1, 2\n",
		errs: []string{`config: /p/.continue/config.yaml:3:11: not YAML, which Continue's YAML is: sequence end token ']' not found`},
	}, {
		name: "mcpServers not a list",
		path: path,
		data: "mcpServers: npx\n",
		errs: []string{`config: "mcpServers" is a string, want a list of servers, each with a name`},
	}, {
		name: "no mcpServers",
		path: path,
		data: "name: x\nmodels: []\n",
		errs: []string{`config: no MCP servers found in /p/.continue/config.yaml: want an "mcpServers" list, as in Continue's config.yaml`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestParseFailures(t *testing.T) {
	tests := []parseCase{{
		name:     "unknown fields are listed with the errors",
		path:     "/p/.mcp.json",
		data:     `{"mcpServers": {"a": {"command": "x", "colour": "blue"}, "b": {"args": []}}}`,
		warnings: []string{`server "a": unknown field "colour" ignored`},
		errs:     []string{`config: server "b": field "command": required for a stdio server`},
	}, {
		name: "no server key",
		path: "/p/package.json",
		data: `{"name": "app", "version": "1.0.0"}`,
		errs: []string{`config: no MCP servers found in /p/package.json: want one of "mcpServers", "servers" (VS Code) or "context_servers" (Zed)`},
	}, {
		name: "an empty server key is fine",
		data: `{"mcpServers": {}}`,
	}, {
		name: "a null server key is fine",
		data: `{"servers": null}`,
	}, {
		name: "TOML under a JSON name",
		path: "/p/mcp.json",
		data: "[mcp_servers.a]\ncommand = \"x\"\n",
		errs: []string{`config: /p/mcp.json:1:2: invalid character 'm' looking for beginning of value (want JSON: Codex's TOML is read from a file named *.toml, Continue's YAML from *.yaml)`},
	}, {
		name: "two server keys",
		data: `{"servers": {"a": {"command": "x"}}, "context_servers": {"b": {"command": "y"}}}`,
		errs: []string{`config: both "servers" and "context_servers" list servers; use one`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestPrivateURLWarning(t *testing.T) {
	tests := []struct {
		name    string
		sc      Server
		dialect toolDialect
		want    string
	}{
		// Loopback is reached for a server of the user's own file: no
		// warning (the host refuses it for one the API or a model registers).
		{"localhost", Server{Name: "x", URL: "http://localhost:3000/mcp"}, dialectJSON, ""},
		{"loopback v4", Server{Name: "x", Type: "sse", URL: "http://127.0.0.2:8080/sse"}, dialectJSON, ""},
		{"loopback v6, TOML", Server{Name: "x", URL: "http://[::1]:3000/mcp"}, dialectCodex, ""},
		{"private, YAML", Server{Name: "x", URL: "https://10.1.2.3/mcp"}, dialectContinue,
			`server "x": url https://10.1.2.3/mcp is a private address, which mcpvisor refuses by default: add allowPrivate: true to the entry`},
		{"private, TOML", Server{Name: "x", URL: "http://192.168.1.5:3000/mcp"}, dialectCodex,
			`server "x": url http://192.168.1.5:3000/mcp is a private address, which mcpvisor refuses by default: add allowPrivate = true to [mcp_servers.x]`},
		{"link-local", Server{Name: "x", URL: "http://169.254.169.254/mcp"}, dialectJSON,
			`server "x": url http://169.254.169.254/mcp is a link-local address, which mcpvisor refuses by default: add "allowPrivate": true to the entry`},
		{"secrets left out", Server{Name: "x", URL: "http://user:pw@10.0.0.1/mcp?key=k#f"}, dialectJSON,
			`server "x": url http://10.0.0.1/mcp is a private address, which mcpvisor refuses by default: add "allowPrivate": true to the entry`},
		{"from a default", Server{Name: "x", URL: "${URL:-http://10.0.0.1:9100/mcp}"}, dialectJSON,
			`server "x": url http://10.0.0.1:9100/mcp is a private address, which mcpvisor refuses by default: add "allowPrivate": true to the entry`},
		{"allowed", Server{Name: "x", URL: "http://localhost:3000/mcp", AllowPrivate: true}, dialectJSON, ""},
		{"public", Server{Name: "x", URL: "https://8.8.8.8/mcp"}, dialectJSON, ""},
		{"a name", Server{Name: "x", URL: "https://mcp.internal/mcp"}, dialectJSON, ""},
		{"unset host", Server{Name: "x", URL: "http://${HOST}/mcp"}, dialectJSON, ""},
		{"stdio", Server{Name: "x", Command: "x", Type: "stdio", URL: "http://localhost/"}, dialectJSON, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sc.privateURLWarning(nil, tt.dialect); got != tt.want {
				t.Errorf("privateURLWarning = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDisplayNameToServerName(t *testing.T) {
	for in, want := range map[string]string{
		"Browser search": "Browser-search", "SQLite MCP": "SQLite-MCP", "a__b": "a_b", " a . b ": "a-b",
		"ok_name-1": "ok_name-1", "!!": "", "Café": "Caf",
	} {
		if got := displayNameToServerName(in); got != want {
			t.Errorf("displayNameToServerName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse checks that no input panics any of the three syntaxes'
// decoders or the dialects' rewrites, that Parse never returns a nil
// *parsedFile, and that every error wraps ErrInvalid. The agent tools'
// documented files are the seeds.
func FuzzParse(f *testing.F) {
	paths := map[string]string{}
	err := filepath.WalkDir("../testdata/clients", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != ".env" {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			paths[string(data)] = p
			f.Add(data, uint8(len(paths)))
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("[mcp_servers.a]\nenv_vars = [{ name = \"X\" }, 3]\nscopes = \"a b\"\n"), uint8(5))
	f.Add([]byte("mcpServers:\n  - name: &a x\n    command: *a\n    env: {K: ${{ secrets.K }}}\n"), uint8(10))
	names := []string{"/p/.vscode/mcp.json", "/p/.cursor/mcp.json", "/p/.gemini/settings.json", "/p/config.toml",
		"/p/config.yaml", "/p/.mcp.json", "/p/cline_mcp_settings.json", "/p/.zed/settings.json", "", "/p/mcp_config.json"}
	lookup := lookupOf(map[string]string{"A": "1", "input:key": "v"})
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		path := names[int(which)%len(names)]
		file, err := parseFile(path, data, Options{Path: path, Lookup: lookup})
		if file == nil {
			t.Fatal("Parse returned a nil *parsedFile")
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error is not an ErrInvalid: %v", err)
		}
	})
}

// FuzzParseDotenv checks that no environment file panics the parser and
// that every key it returns is one a dotenv line can set.
func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1\nexport B='x'\nC=\"a\\nb\nc\" # x\n", "# c\n\nD=v #x", "E=\"open"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		vars, err := parseDotenv(data)
		if err != nil {
			return
		}
		for k := range vars {
			if !isDotenvKey(k) {
				t.Fatalf("key %q", k)
			}
		}
	})
}

func TestOAuthURLWarnings(t *testing.T) {
	const local = "http://127.0.0.1:9000/.well-known/oauth-authorization-server"
	tests := []struct {
		name string
		sc   Server
		want []string
	}{
		{"loopback metadata", Server{Name: "x", URL: "http://localhost:3000/mcp", AllowPrivate: true, OAuth: &OAuth{AuthServerMetadataURL: local}},
			[]string{`server "x": oauth.authServerMetadataUrl http://127.0.0.1:9000/.well-known/oauth-authorization-server is a loopback address, which mcpvisor refuses for authorization requests by default (the server's allowPrivate covers its own origin only): set allowPrivate in the server's oauth object`}},
		{"private idp", Server{Name: "x", URL: "https://mcp.example/mcp", OAuth: &OAuth{IDPTokenEndpoint: "https://10.0.0.5/token?k=v"}},
			[]string{`server "x": oauth.idpTokenEndpoint https://10.0.0.5/token is a private address, which mcpvisor refuses for authorization requests by default (the server's allowPrivate covers its own origin only): set allowPrivate in the server's oauth object`}},
		{"link-local even with the opt-in", Server{Name: "x", URL: "https://mcp.example/mcp", OAuth: &OAuth{AllowPrivate: true, IDPTokenEndpoint: "http://169.254.169.254/token"}},
			[]string{`server "x": oauth.idpTokenEndpoint http://169.254.169.254/token is a link-local address, which mcpvisor refuses for authorization requests even with oauth.allowPrivate`}},
		{"opted in", Server{Name: "x", URL: "http://localhost:3000/mcp", AllowPrivate: true, OAuth: &OAuth{AllowPrivate: true, AuthServerMetadataURL: local}}, nil},
		{"the server's own origin", Server{Name: "x", URL: "http://127.0.0.1:9000/mcp", AllowPrivate: true, OAuth: &OAuth{AuthServerMetadataURL: local}}, nil},
		{"own origin, but no allowPrivate", Server{Name: "x", URL: "http://127.0.0.1:9000/mcp", OAuth: &OAuth{AuthServerMetadataURL: local}},
			[]string{`server "x": oauth.authServerMetadataUrl http://127.0.0.1:9000/.well-known/oauth-authorization-server is a loopback address, which mcpvisor refuses for authorization requests by default (the server's allowPrivate covers its own origin only): set allowPrivate in the server's oauth object`}},
		{"public", Server{Name: "x", URL: "https://mcp.example/mcp", OAuth: &OAuth{AuthServerMetadataURL: "https://as.example/.well-known/oauth-authorization-server"}}, nil},
		{"no oauth object", Server{Name: "x", URL: "http://localhost:3000/mcp"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.sc.oauthURLWarnings(nil)); diff != "" {
				t.Errorf("oauthURLWarnings (-want +got):\n%s", diff)
			}
		})
	}
}
