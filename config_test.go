package mcpvisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
)

// cfgLookup is a variable lookup over a fixed map, for tests that must not
// depend on the environment they run in.
func cfgLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// cfgUnsetenv unsets names for the test and restores them afterwards.
func cfgUnsetenv(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Setenv(name, "") // registers the restore
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

// cfgErrLines splits a joined error into its one-line parts.
func cfgErrLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestLoadConfigExamples(t *testing.T) {
	tests := []struct {
		file  string
		set   map[string]string
		unset []string
		want  *Config
	}{{
		file:  "claude-code.mcp.json",
		set:   map[string]string{"GITHUB_TOKEN": "ghp_test", "DATABASE_URL": "postgres://db/app", "HOME": "/home/test"},
		unset: []string{"PROJECT_ROOT", "LOG_LEVEL", "INTERNAL_MCP_URL"},
		want: &Config{
			Path: "testdata/config/claude-code.mcp.json",
			Servers: []ServerConfig{{
				Name: "filesystem", Type: "stdio", Enabled: true,
				Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "${PROJECT_ROOT:-.}"},
			}, {
				Name: "github", Type: "http", Enabled: true,
				URL:     "https://api.githubcopilot.com/mcp/",
				Headers: map[string]string{"Authorization": "Bearer ${GITHUB_TOKEN}"},
			}, {
				Name: "sentry", Type: "sse", Enabled: true, URL: "https://mcp.sentry.dev/sse",
				OAuth: &OAuthConfig{ClientID: "mcpvisor-example", CallbackPort: 8080},
			}, {
				Name: "postgres", Type: "stdio", Enabled: true,
				Command: "${HOME}/bin/postgres-mcp", Args: []string{"--dsn", "${DATABASE_URL}"},
				Env: map[string]string{"LOG_LEVEL": "${LOG_LEVEL:-info}"},
			}, {
				Name: "internal-api", Type: "http", Enabled: true,
				URL:           "${INTERNAL_MCP_URL:-http://localhost:9100/mcp}",
				HeadersHelper: "/opt/bin/mcp-headers.sh",
			}},
		},
	}, {
		file: "vscode-mcp.json",
		set:  map[string]string{"PERPLEXITY_API_KEY": "pplx-test"},
		want: &Config{
			Path: "testdata/config/vscode-mcp.json",
			Servers: []ServerConfig{{
				Name: "perplexity", Type: "stdio", Enabled: true,
				Command: "npx", Args: []string{"-y", "server-perplexity-ask"},
				// PERPLEXITY_MODEL comes from the envFile, testdata/config/.env.
				Env: map[string]string{"PERPLEXITY_API_KEY": "${env:PERPLEXITY_API_KEY}", "PERPLEXITY_MODEL": "sonar"},
			}, {
				Name: "fetch", Type: "stdio", Enabled: true, Command: "uvx", Args: []string{"mcp-server-fetch"},
			}, {
				Name: "github", Type: "http", Enabled: true, URL: "https://api.githubcopilot.com/mcp/",
			}},
			Inputs: []ConfigInput{{ID: "perplexity-key", Type: "promptString", Description: "Perplexity API Key", Password: true}},
		},
	}, {
		file: "vscode-input.json",
		want: &Config{
			Path: "testdata/config/vscode-input.json",
			Servers: []ServerConfig{{
				Name: "perplexity", Type: "stdio", Enabled: true,
				Command: "npx", Args: []string{"-y", "server-perplexity-ask"},
				Env: map[string]string{"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
			}},
			Inputs: []ConfigInput{{ID: "perplexity-key", Type: "promptString", Description: "Perplexity API Key", Password: true}},
		},
	}, {
		file: "gemini-settings.json",
		set:  map[string]string{"EXTERNAL_API_KEY": "ext", "MY_API_TOKEN": "tok", "DB_CONNECTION_STRING": "postgres://db"},
		want: &Config{
			Path: "testdata/config/gemini-settings.json",
			Servers: []ServerConfig{{
				Name: "pythonTools", Type: "stdio", Enabled: true,
				Command: "python", Args: []string{"-m", "my_mcp_server", "--port", "8080"},
				Cwd: "./mcp-servers/python",
				// Gemini CLI expands $VAR as ${VAR}.
				Env:          map[string]string{"DATABASE_URL": "${DB_CONNECTION_STRING}", "API_KEY": "${EXTERNAL_API_KEY}"},
				Timeout:      Duration(15 * time.Second),
				IncludeTools: []string{"safe_tool", "file_reader"},
			}, {
				Name: "httpServer", Type: "http", Enabled: true,
				URL: "http://localhost:3000/mcp", Timeout: Duration(5 * time.Second),
			}, {
				Name: "sseServer", Type: "sse", Enabled: true,
				URL: "http://localhost:8080/sse", Timeout: Duration(30 * time.Second),
			}, {
				Name: "dockerized", Type: "stdio", Enabled: true,
				Command:      "docker",
				Args:         []string{"run", "-i", "--rm", "-e", "API_KEY", "ghcr.io/example/mcp-server:latest"},
				Env:          map[string]string{"API_KEY": "${MY_API_TOKEN}"},
				ExcludeTools: []string{"delete_everything"},
			}, {
				Name: "googleCloudServer", Type: "http", Enabled: true, URL: "https://my-gcp-service.run.app/mcp",
			}},
			Warnings: []string{
				`server "googleCloudServer": field "authProviderType" is not supported by mcpvisor, ignored`,
				`server "googleCloudServer": field "targetAudience" is not supported by mcpvisor, ignored`,
				`server "googleCloudServer": field "targetServiceAccount" is not supported by mcpvisor, ignored`,
			},
		},
	}, {
		file: "cursor-mcp.json",
		set:  map[string]string{"SEARCH_API_KEY": "s", "NOTES_TOKEN": "n"},
		want: &Config{
			Path: "testdata/config/cursor-mcp.json",
			Servers: []ServerConfig{{
				Name: "web-search", Type: "stdio", Enabled: true,
				Command: "npx", Args: []string{"-y", "web-search-mcp"},
				Env: map[string]string{"SEARCH_API_KEY": "${env:SEARCH_API_KEY}"},
			}, {
				Name: "remote-notes", Type: "http", Enabled: true, URL: "https://notes.example.com/mcp",
				Headers: map[string]string{"Authorization": "Bearer ${env:NOTES_TOKEN}"},
			}, {
				Name: "legacy-events", Type: "sse", Enabled: true, URL: "http://10.0.0.9:3001/sse",
			}},
			Warnings: []string{
				`server "legacy-events": url http://10.0.0.9:3001/sse is a private address, which mcpvisor refuses by default: add "allowPrivate": true to the entry`,
			},
		},
	}, {
		file:  "mcpvisor.json",
		set:   map[string]string{"TICKETS_TOKEN": "t"},
		unset: []string{"NOTES_DB", "EXPERIMENTAL_KEY"},
		want: &Config{
			Path: "testdata/config/mcpvisor.json",
			Servers: []ServerConfig{{
				Name: "notes", Type: "stdio", Enabled: true,
				Command: "notes-mcp", Args: []string{"--db", "${NOTES_DB:-/var/lib/notes/notes.db}"},
				Env:            map[string]string{"NOTES_LOG": "warn"},
				Cwd:            "/srv/notes",
				Description:    "Personal notes, read and search",
				FriendlyName:   "Notes",
				Timeout:        Duration(30 * time.Second),
				StartupTimeout: Duration(10 * time.Second),
				IncludeTools:   []string{"search", "read"},
				MaxTools:       8,
				MaxDescription: 1024,
				InheritEnv:     true,
			}, {
				Name: "tickets", Type: "http", Enabled: true,
				URL:            "http://127.0.0.1:9100/mcp",
				Headers:        map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}"},
				AllowPrivate:   true,
				ExcludeTools:   []string{"delete_ticket"},
				MaxDescription: -1,
				Timeout:        Duration(90 * time.Second),
			}, {
				Name: "experimental", Type: "stdio", Enabled: false,
				Command: "uvx", Args: []string{"experimental-mcp", "--key", "${EXPERIMENTAL_KEY}"},
			}},
			Warnings: []string{
				`server "experimental": field "args[2]": variable EXPERIMENTAL_KEY is not set and has no default (the server is disabled)`,
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			for k, v := range tt.set {
				t.Setenv(k, v)
			}
			cfgUnsetenv(t, tt.unset...)
			got, err := LoadConfig("testdata/config/" + tt.file)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LoadConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadConfigBrokenExamples(t *testing.T) {
	tests := []struct {
		file     string
		want     []string
		warnings []string
	}{{
		file: "missing.json",
		want: []string{"config: open testdata/config/missing.json: no such file or directory"},
	}, {
		file: "broken-syntax.json",
		want: []string{`config: testdata/config/broken-syntax.json:5:7: invalid character '"' after object key:value pair`},
	}, {
		file: "broken-entries.json",
		want: []string{
			`config: server "dark": field "command": cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`,
			`config: server "no-command": field "command": required for a stdio server`,
			`config: server "bare-host": field "url": want an absolute http or https url, like "https://host/mcp"`,
			`config: server "websocket": field "type": unknown type "ws" (want "stdio", "http" or "sse")`,
			`config: server "websocket": field "url": want an http or https url, got scheme "wss"`,
			`config: server "typed": field "args[1]": want a string, got a number`,
			`config: server "typed": field "env.PORT": want a string, got a number`,
			`config: server "typed": field "timeout": want milliseconds (a number) or a duration string like "30s", got a boolean`,
			`config: server "typed": field "maxTools": must be 0 (no cap) or more, got -1`,
			`config: server "typed": field "excludeTools": "write" is also in "includeTools"`,
			`config: server "bad name": invalid server name: "bad name" has ' ' (allowed: letters, digits, '_' and '-')`,
		},
	}, {
		file: "broken-duplicate.json",
		want: []string{
			`config: server "search": field "command": given more than once`,
			`config: server "notes": defined more than once in "mcpServers"`,
		},
	}, {
		file: "broken-both-keys.json",
		want: []string{`config: both "mcpServers" and "servers" list servers; use one`},
	}, {
		file:     "broken-unknown-input.json",
		want:     []string{`config: server "perplexity": field "env.PERPLEXITY_API_KEY": ${input:perplexity_key} names no input in "inputs"`},
		warnings: []string{`server "perplexity": unknown field "sandboxEnabled" ignored`},
	}, {
		file: "broken-codex.toml",
		want: []string{`config: testdata/config/broken-codex.toml:5:38: not TOML, which Codex's config.toml is: expected a comma (',') or array terminator (']'), but got end of file`},
	}, {
		file: "broken-continue.yaml",
		want: []string{`config: testdata/config/broken-continue.yaml:6:14: not YAML, which Continue's YAML is: mapping value is not allowed in this context`},
	}, {
		file: "broken-no-servers.json",
		want: []string{`config: no MCP servers found in testdata/config/broken-no-servers.json: want one of "mcpServers", "servers" (VS Code) or "context_servers" (Zed)`},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := "testdata/config/" + tt.file
			got, err := LoadConfig(path)
			if err == nil {
				t.Fatalf("LoadConfig = %+v, want an error", got)
			}
			if got == nil {
				t.Fatal("LoadConfig returned a nil *Config with its error")
			}
			if diff := cmp.Diff(&Config{Path: path, Warnings: tt.warnings}, got); diff != "" {
				t.Errorf("the Config returned with the error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, cfgErrLines(err)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
			if tt.file != "missing.json" && !errors.Is(err, ErrConfig) {
				t.Errorf("errors.Is(%v, ErrConfig) = false", err)
			}
		})
	}
}

func TestLoadConfigMissingFileIsNotExist(t *testing.T) {
	_, err := LoadConfig("testdata/config/missing.json")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("errors.Is(%v, os.ErrNotExist) = false", err)
	}
	if errors.Is(err, ErrConfig) {
		t.Errorf("a missing file is not an invalid config, got %v", err)
	}
}

// TestParseConfigErrors covers every validation rule with its message.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		env  map[string]string
		want []string
	}{
		// File structure.
		{"top level array", `[]`, nil, []string{`config: top level is an array, want an object`}},
		{"no servers key", `{"theme": "dark"}`, nil,
			[]string{`config: no MCP servers found: want one of "mcpServers", "servers" (VS Code) or "context_servers" (Zed)`}},
		{"syntax error position", "{\n  \"mcpServers\": {\n    \"a\": {,}\n  }\n}", nil,
			[]string{`config: line 3, column 11: invalid character ',' looking for beginning of object key string`}},
		{"truncated", `{"mcpServers": {`, nil, []string{`config: line 1, column 16: unexpected end of JSON input`}},
		{"mcpServers array", `{"mcpServers": [{"command": "x"}]}`, nil,
			[]string{`config: "mcpServers" is an array, want an object of servers keyed by name`}},
		{"mcpServers twice", `{"mcpServers": {}, "mcpServers": {"a": {"command": "x"}}}`, nil,
			[]string{`config: "mcpServers" is given more than once`}},
		{"both keys", `{"mcpServers": {"a": {"command": "x"}}, "servers": {"b": {"command": "y"}}}`, nil,
			[]string{`config: both "mcpServers" and "servers" list servers; use one`}},
		{"duplicate server", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, nil,
			[]string{`config: server "a": defined more than once in "mcpServers"`}},
		{"duplicate server under servers", `{"servers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, nil,
			[]string{`config: server "a": defined more than once in "servers"`}},
		{"entry not an object", `{"mcpServers": {"a": "npx a-mcp"}}`, nil,
			[]string{`config: server "a": entry is a string, want an object`}},
		{"entry null", `{"mcpServers": {"a": null}}`, nil,
			[]string{`config: server "a": entry is null, want an object`}},

		// Names.
		{"name with dot", `{"mcpServers": {"my.server": {"command": "x"}}}`, nil,
			[]string{`config: server "my.server": invalid server name: "my.server" has '.' (allowed: letters, digits, '_' and '-')`}},
		{"name with separator", `{"mcpServers": {"a__b": {"command": "x"}}}`, nil,
			[]string{`config: server "a__b": invalid server name: "a__b" contains "__", the namespace separator`}},
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, nil,
			[]string{`config: invalid server name: empty`}},

		// Transport.
		{"stdio without command", `{"mcpServers": {"a": {"args": ["x"]}}}`, nil,
			[]string{`config: server "a": field "command": required for a stdio server`}},
		{"blank command", `{"mcpServers": {"a": {"command": "  "}}}`, nil,
			[]string{`config: server "a": field "command": required for a stdio server`}},
		{"stdio with url only", `{"mcpServers": {"a": {"type": "stdio", "url": "https://x.example/mcp"}}}`, nil,
			[]string{`config: server "a": field "command": required for a stdio server (the entry has a "url": set "type" to "http" or "sse")`}},
		{"http without url", `{"mcpServers": {"a": {"type": "http"}}}`, nil,
			[]string{`config: server "a": field "url": required for an http server`}},
		{"sse without url", `{"mcpServers": {"a": {"type": "sse", "command": "x"}}}`, nil,
			[]string{`config: server "a": field "url": required for an sse server`}},
		{"command and url", `{"mcpServers": {"a": {"command": "x", "url": "https://x.example/mcp"}}}`, nil,
			[]string{`config: server "a": field "command": cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`}},
		{"command and url, typed http", `{"mcpServers": {"a": {"type": "http", "command": "x", "url": "https://x.example/mcp"}}}`, nil,
			[]string{`config: server "a": field "command": cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`}},
		{"unknown type", `{"mcpServers": {"a": {"type": "websocket", "command": "x"}}}`, nil,
			[]string{`config: server "a": field "type": unknown type "websocket" (want "stdio", "http" or "sse")`}},
		{"type not a string", `{"mcpServers": {"a": {"type": 1, "command": "x"}}}`, nil,
			[]string{`config: server "a": field "type": want a string, got a number`}},
		{"httpUrl and url", `{"mcpServers": {"a": {"httpUrl": "https://x.example/mcp", "url": "https://x.example/sse"}}}`, nil,
			[]string{`config: server "a": field "httpUrl": cannot be combined with "url"; give one`}},
		{"httpUrl with type sse", `{"mcpServers": {"a": {"type": "sse", "httpUrl": "https://x.example/mcp"}}}`, nil,
			[]string{
				`config: server "a": field "httpUrl": is a streamable HTTP url, but "type" is "sse"`,
				`config: server "a": field "url": required for an sse server`,
			}},

		// URLs.
		{"url without scheme", `{"mcpServers": {"a": {"url": "mcp.example.com/mcp"}}}`, nil,
			[]string{`config: server "a": field "url": want an absolute http or https url, like "https://host/mcp"`}},
		{"url with other scheme", `{"mcpServers": {"a": {"type": "http", "url": "ftp://x.example/mcp"}}}`, nil,
			[]string{`config: server "a": field "url": want an http or https url, got scheme "ftp"`}},
		{"url without host", `{"mcpServers": {"a": {"type": "http", "url": "http:///mcp"}}}`, nil,
			[]string{`config: server "a": field "url": url has no host`}},
		{"url unparsable", `{"mcpServers": {"a": {"type": "http", "url": "http://x.example:port/mcp"}}}`, nil,
			[]string{`config: server "a": field "url": invalid url: invalid port ":port" after host`}},
		{"url from a set variable", `{"mcpServers": {"a": {"type": "http", "url": "${MCP_URL}"}}}`,
			map[string]string{"MCP_URL": "localhost:9100"},
			[]string{`config: server "a": field "url": want an http or https url, got scheme "localhost"`}},
		{"url default checked", `{"mcpServers": {"a": {"type": "http", "url": "${MCP_URL:-http://}"}}}`, nil,
			[]string{`config: server "a": field "url": url has no host`}},
		{"url unset host, bad scheme", `{"mcpServers": {"a": {"type": "http", "url": "ftp://${MCP_HOST}/mcp"}}}`, nil,
			[]string{`config: server "a": field "url": want an http or https url, got scheme "ftp"`}},
		{"url unset host, no host", `{"mcpServers": {"a": {"enabled": false, "type": "http", "url": "${SCHEME}:///mcp"}}}`, nil,
			[]string{`config: server "a": field "url": url has no host`}},

		// Variables: an unset one is a warning (TestParseConfigWarnings),
		// a malformed reference an error.
		{"unterminated reference", `{"mcpServers": {"a": {"command": "x", "args": ["${HOME"]}}}`, nil,
			[]string{`config: server "a": field "args[0]": unterminated variable reference "${HOME"`}},
		{"unterminated in a disabled server", `{"mcpServers": {"a": {"disabled": true, "command": "x", "env": {"K": "${K:-v"}}}}`, nil,
			[]string{`config: server "a": field "env.K": unterminated variable reference "${K"`}},
		{"invalid reference", `{"mcpServers": {"a": {"command": "x", "args": ["${foo bar}"]}}}`, nil,
			[]string{`config: server "a": field "args[0]": invalid variable reference "${foo bar}" (want ${NAME} or ${NAME:-default})`}},

		// Field types.
		{"command not a string", `{"mcpServers": {"a": {"command": ["npx", "x"]}}}`, nil,
			[]string{`config: server "a": field "command": want a string, got an array`}},
		{"args not an array", `{"mcpServers": {"a": {"command": "x", "args": "--verbose"}}}`, nil,
			[]string{`config: server "a": field "args": want an array of strings, got a string`}},
		{"args element null", `{"mcpServers": {"a": {"command": "x", "args": ["a", null]}}}`, nil,
			[]string{`config: server "a": field "args[1]": want a string, got null`}},
		{"env not an object", `{"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}`, nil,
			[]string{`config: server "a": field "env": want an object of strings, got an array`}},
		{"env value boolean", `{"mcpServers": {"a": {"command": "x", "env": {"DEBUG": true}}}}`, nil,
			[]string{`config: server "a": field "env.DEBUG": want a string, got a boolean`}},
		{"env key twice", `{"mcpServers": {"a": {"command": "x", "env": {"A": "1", "A": "2"}}}}`, nil,
			[]string{`config: server "a": field "env": key "A" is given more than once`}},
		{"env key with =", `{"mcpServers": {"a": {"command": "x", "env": {"A=B": "1"}}}}`, nil,
			[]string{`config: server "a": field "env": invalid variable name "A=B"`}},
		{"headers value number", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "headers": {"X-Retries": 3}}}}`, nil,
			[]string{`config: server "a": field "headers.X-Retries": want a string, got a number`}},
		{"header name invalid", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "headers": {"Bad Header": "x"}}}}`, nil,
			[]string{`config: server "a": field "headers": invalid header name "Bad Header"`}},
		{"header value with line break", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "headers": {"X-A": "1\r\nX-B: 2"}}}}`, nil,
			[]string{`config: server "a": field "headers.X-A": contains a line break`}},
		{"NUL bytes", `{"mcpServers": {"a": {"command": "x\u0000", "args": ["\u0000"], "env": {"K": "\u0000"}, "cwd": "\u0000"}}}`, nil,
			[]string{
				`config: server "a": field "command": contains a NUL byte`,
				`config: server "a": field "args[0]": contains a NUL byte`,
				`config: server "a": field "env.K": contains a NUL byte`,
				`config: server "a": field "cwd": contains a NUL byte`,
			}},
		{"field twice", `{"mcpServers": {"a": {"command": "x", "command": "y"}}}`, nil,
			[]string{`config: server "a": field "command": given more than once`}},
		{"enabled not a bool", `{"mcpServers": {"a": {"command": "x", "enabled": "yes"}}}`, nil,
			[]string{`config: server "a": field "enabled": want true or false, got a string`}},
		{"enabled contradicts disabled", `{"mcpServers": {"a": {"command": "x", "enabled": true, "disabled": true}}}`, nil,
			[]string{`config: server "a": field "disabled": true contradicts "enabled": true`}},
		{"enabled false contradicts disabled false", `{"mcpServers": {"a": {"command": "x", "enabled": false, "disabled": false}}}`, nil,
			[]string{`config: server "a": field "disabled": false contradicts "enabled": false`}},

		// Limits and filters.
		{"negative maxTools", `{"mcpServers": {"a": {"command": "x", "maxTools": -3}}}`, nil,
			[]string{`config: server "a": field "maxTools": must be 0 (no cap) or more, got -3`}},
		{"fractional maxTools", `{"mcpServers": {"a": {"command": "x", "maxTools": 1.5}}}`, nil,
			[]string{`config: server "a": field "maxTools": want an integer, got 1.5`}},
		{"maxTools string", `{"mcpServers": {"a": {"command": "x", "maxTools": "5"}}}`, nil,
			[]string{`config: server "a": field "maxTools": want an integer, got a string`}},
		{"maxDescription below -1", `{"mcpServers": {"a": {"command": "x", "maxDescription": -2}}}`, nil,
			[]string{`config: server "a": field "maxDescription": must be -1 (no cap), 0 (the default) or a number of bytes, got -2`}},
		{"negative timeout string", `{"mcpServers": {"a": {"command": "x", "timeout": "-5s"}}}`, nil,
			[]string{`config: server "a": field "timeout": must not be negative, got "-5s"`}},
		{"negative timeout number", `{"mcpServers": {"a": {"command": "x", "timeout": -5}}}`, nil,
			[]string{`config: server "a": field "timeout": must not be negative, got -5`}},
		{"startupTimeout without unit", `{"mcpServers": {"a": {"command": "x", "startupTimeout": "10"}}}`, nil,
			[]string{`config: server "a": field "startupTimeout": invalid duration "10" (want milliseconds as a number, or a string like "30s" or "1m30s")`}},
		{"include and exclude overlap", `{"mcpServers": {"a": {"command": "x", "includeTools": ["read", "write", "list"], "excludeTools": ["list", "write", "write"]}}}`, nil,
			[]string{
				`config: server "a": field "excludeTools": "list" is also in "includeTools"`,
				`config: server "a": field "excludeTools": "write" is also in "includeTools"`,
			}},
		{"empty tool name", `{"mcpServers": {"a": {"command": "x", "includeTools": ["read", ""], "excludeTools": [""]}}}`, nil,
			[]string{
				`config: server "a": field "includeTools[1]": empty tool name`,
				`config: server "a": field "excludeTools[0]": empty tool name`,
			}},
		{"includeTools element number", `{"mcpServers": {"a": {"command": "x", "includeTools": [1]}}}`, nil,
			[]string{`config: server "a": field "includeTools[0]": want a string, got a number`}},

		// All problems come back at once.
		{"errors across servers", `{"mcpServers": {"a": {"type": "http"}, "ok": {"command": "x"}, "b": {"maxTools": -1}}}`, nil,
			[]string{
				`config: server "a": field "url": required for an http server`,
				`config: server "b": field "command": required for a stdio server`,
				`config: server "b": field "maxTools": must be 0 (no cap) or more, got -1`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Parse([]byte(tt.json), config.Options{Lookup: cfgLookup(tt.env)})
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", got)
			}
			if diff := cmp.Diff(tt.want, cfgErrLines(err)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("errors.Is(err, ErrConfig) = false for %v", err)
			}
		})
	}
}

// TestDisabledServerIsValidated is seed 002's finding 4: a server that is
// switched off is still reviewed, so a block written ahead of time is
// correct when it is switched on.
func TestDisabledServerIsValidated(t *testing.T) {
	for _, off := range []string{`"enabled": false`, `"disabled": true`} {
		t.Run(off, func(t *testing.T) {
			data := `{"mcpServers": {"dark": {` + off + `, "command": "dark-mcp", "url": "https://dark.example/mcp"},
				"bare": {` + off + `, "type": "http", "url": "dark.example"}}}`
			_, err := ParseConfig([]byte(data))
			want := []string{
				`config: server "dark": field "command": cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`,
				`config: server "bare": field "url": want an absolute http or https url, like "https://host/mcp"`,
			}
			if diff := cmp.Diff(want, cfgErrLines(err)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigWarnings(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string
	}{
		{"unknown field", `{"mcpServers": {"a": {"command": "x", "foo": 1, "Command": "y"}}}`, []string{
			`server "a": unknown field "foo" ignored`,
			`server "a": unknown field "Command" ignored`,
		}},
		{"unsupported fields", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "dev": {"watch": "src/**"}, "autoApprove": ["read"]}}}`, []string{
			`server "a": field "dev" is not supported by mcpvisor, ignored: mcpvisor does not watch the server's files or attach a debugger`,
			`server "a": field "autoApprove" is not supported by mcpvisor, ignored: it lists tools to run without confirmation; ` +
				`mcpvisor does not confirm a server's tool calls itself (its approval inbox holds only its own host tools that change servers): ` +
				`whether to confirm a call is up to the client calling through it`,
		}},
		{"unsupported fields set to nothing", `{"mcpServers": {"a": {"command": "x", "trust": false, "autoApprove": [], "dev": {}}}}`, nil},
		{"unknown and unsupported oauth fields", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "oauth": {"clientId": "c", "client_id": "c", "tokenUrl": "https://x.example/token"}}}}`, []string{
			`server "a": unknown field "oauth.client_id" ignored`,
			`server "a": field "oauth.tokenUrl" is not supported by mcpvisor, ignored: the endpoints are discovered, or read from "authServerMetadataUrl"`,
		}},
		{"oauth on stdio", `{"mcpServers": {"s": {"command": "x", "oauth": {"clientSecret": "${UNSET_A}"}, "headersHelper": "echo {}"}}}`, []string{
			`server "s": field "oauth" is not used by a stdio server, ignored`,
			`server "s": field "headersHelper" is not used by a stdio server, ignored`,
		}},
		{"headersHelper is shell text", `{"mcpServers": {"h": {"url": "https://x.example/mcp", "headersHelper": "get-headers --user $USER"}}}`, nil},
		// An unset variable is the environment's, not the file's: its
		// server cannot start, the others can (TestUnsetVariableStopsOnlyItsServer).
		{"unset variable, enabled", `{"mcpServers": {"a": {"command": "x", "env": {"TOKEN": "${A_TOKEN}"}}}}`, []string{
			`server "a": field "env.TOKEN": variable A_TOKEN is not set and has no default (the server cannot start until it is set)`,
		}},
		{"unset variables, every field", `{"mcpServers": {"a": {"command": "${BIN}/x", "args": ["${ARG}", "${ARG}${ARG}"], "cwd": "${DIR}"}}}`, []string{
			`server "a": field "command": variable BIN is not set and has no default (the server cannot start until it is set)`,
			`server "a": field "args[0]": variable ARG is not set and has no default (the server cannot start until it is set)`,
			`server "a": field "args[1]": variable ARG is not set and has no default (the server cannot start until it is set)`,
			`server "a": field "cwd": variable DIR is not set and has no default (the server cannot start until it is set)`,
		}},
		{"unset header variable", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`, []string{
			`server "a": field "headers.Authorization": variable TOKEN is not set and has no default (the server cannot start until it is set)`,
		}},
		{"url unset host, shape ok", `{"mcpServers": {"a": {"type": "http", "url": "https://${MCP_HOST}/mcp"}}}`, []string{
			`server "a": field "url": variable MCP_HOST is not set and has no default (the server cannot start until it is set)`,
		}},
		{"unset variable in a disabled server", `{"mcpServers": {"a": {"disabled": true, "command": "x", "env": {"K": "${A_KEY}"}, "args": ["${A_ARG:-}"]}}}`, []string{
			`server "a": field "env.K": variable A_KEY is not set and has no default (the server is disabled)`,
		}},
		{"bare $NAME", `{"mcpServers": {"a": {"command": "sh", "args": ["-c", "echo $HOME"], "env": {"DB": "$DB_URL", "PRICE": "$5", "OK": "${HOME:-x}"}, "cwd": "$PWD/x"}}}`, []string{
			`server "a": field "env.DB": $DB_URL is not expanded, only ${DB_URL} is`,
			`server "a": field "cwd": $PWD is not expanded, only ${PWD} is`,
		}},
		{"fields the transport does not use", `{"mcpServers": {
			"s": {"command": "x", "headers": {"A": "${UNSET_A}"}, "allowPrivate": true},
			"h": {"url": "https://x.example/mcp", "args": ["a"], "env": {"A": "${UNSET_A}"}, "cwd": "/", "inheritEnv": true}}}`, []string{
			`server "s": field "headers" is not used by a stdio server, ignored`,
			`server "s": field "allowPrivate" is not used by a stdio server, ignored`,
			`server "h": field "args" is not used by an http server, ignored`,
			`server "h": field "env" is not used by an http server, ignored`,
			`server "h": field "cwd" is not used by an http server, ignored`,
			`server "h": field "inheritEnv" is not used by an http server, ignored`,
		}},
		{"empty mcpServers", `{"mcpServers": {}}`, nil},
		{"inputs and other top-level keys ignored", `{"inputs": [{"id": "x"}], "theme": "dark", "servers": {"a": {"command": "x"}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Parse([]byte(tt.json), config.Options{Lookup: cfgLookup(map[string]string{"HOME": "/home/u"})})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigFields(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []ServerConfig
	}{
		{"stdio is the default", `{"mcpServers": {"a": {"command": "x"}}}`,
			[]ServerConfig{{Name: "a", Type: "stdio", Enabled: true, Command: "x"}}},
		{"type aliases", `{"mcpServers": {
			"a": {"type": "streamable-http", "url": "https://x.example/mcp"},
			"b": {"type": "streamableHttp", "url": "https://x.example/mcp"},
			"c": {"type": "SSE", "url": "https://x.example/events"}}}`,
			[]ServerConfig{
				{Name: "a", Type: "http", Enabled: true, URL: "https://x.example/mcp"},
				{Name: "b", Type: "http", Enabled: true, URL: "https://x.example/mcp"},
				{Name: "c", Type: "sse", Enabled: true, URL: "https://x.example/events"},
			}},
		{"type inferred from url", `{"mcpServers": {
			"a": {"url": "https://x.example/mcp"},
			"b": {"url": "https://x.example/sse/?v=1"},
			"c": {"url": "https://x.example/v1/sse#x"},
			"d": {"url": "https://x.example/assets"}}}`,
			[]ServerConfig{
				{Name: "a", Type: "http", Enabled: true, URL: "https://x.example/mcp"},
				{Name: "b", Type: "sse", Enabled: true, URL: "https://x.example/sse/?v=1"},
				{Name: "c", Type: "sse", Enabled: true, URL: "https://x.example/v1/sse#x"},
				{Name: "d", Type: "http", Enabled: true, URL: "https://x.example/assets"},
			}},
		{"httpUrl", `{"mcpServers": {"a": {"httpUrl": "https://x.example/mcp"}, "b": {"type": "http", "httpUrl": "https://x.example/mcp"}}}`,
			[]ServerConfig{
				{Name: "a", Type: "http", Enabled: true, URL: "https://x.example/mcp"},
				{Name: "b", Type: "http", Enabled: true, URL: "https://x.example/mcp"},
			}},
		{"enabled and disabled", `{"mcpServers": {
			"a": {"command": "x", "enabled": false},
			"b": {"command": "x", "disabled": true},
			"c": {"command": "x", "disabled": false},
			"d": {"command": "x", "enabled": false, "disabled": true},
			"e": {"command": "x", "enabled": true, "disabled": false}}}`,
			[]ServerConfig{
				{Name: "a", Type: "stdio", Command: "x"},
				{Name: "b", Type: "stdio", Command: "x"},
				{Name: "c", Type: "stdio", Enabled: true, Command: "x"},
				{Name: "d", Type: "stdio", Command: "x"},
				{Name: "e", Type: "stdio", Enabled: true, Command: "x"},
			}},
		{"null is absent, empty is nil", `{"mcpServers": {"a": {"command": "x", "args": [], "env": {}, "headers": null, "includeTools": [], "enabled": null, "timeout": null}}}`,
			[]ServerConfig{{Name: "a", Type: "stdio", Enabled: true, Command: "x"}}},
		{"servers key", `{"servers": {"a": {"command": "x"}}, "mcpServers": {}}`,
			[]ServerConfig{{Name: "a", Type: "stdio", Enabled: true, Command: "x"}}},
		{"mcpServers with empty servers", `{"mcpServers": {"a": {"command": "x"}}, "servers": null}`,
			[]ServerConfig{{Name: "a", Type: "stdio", Enabled: true, Command: "x"}}},
		{"file order kept", `{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}, "mid": {"command": "m"}, "beta": {"command": "b"}}}`,
			[]ServerConfig{
				{Name: "zeta", Type: "stdio", Enabled: true, Command: "z"},
				{Name: "alpha", Type: "stdio", Enabled: true, Command: "a"},
				{Name: "mid", Type: "stdio", Enabled: true, Command: "m"},
				{Name: "beta", Type: "stdio", Enabled: true, Command: "b"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Parse([]byte(tt.json), config.Options{Lookup: cfgLookup(nil)})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Servers); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseConfigJSONC(t *testing.T) {
	data := "\xef\xbb\xbf{\n" +
		"  // a line comment with \"quotes\" and a trailing comma,\n" +
		"  \"mcpServers\": { /* a block\n comment */\n" +
		"    \"a\": {\"url\": \"https://x.example/mcp//path\", \"headers\": {\"X\": \"a\\\"// not a comment\",},},\n" +
		"    \"b\": {\"command\": \"x\", \"args\": [\"/*\", \"*/\", \",]\",  ] },\n" +
		"  },\n" +
		"}\n"
	got, err := ParseConfig([]byte(data))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	want := []ServerConfig{
		{Name: "a", Type: "http", Enabled: true, URL: "https://x.example/mcp//path", Headers: map[string]string{"X": `a"// not a comment`}},
		{Name: "b", Type: "stdio", Enabled: true, Command: "x", Args: []string{"/*", "*/", ",]"}},
	}
	if diff := cmp.Diff(want, got.Servers); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}

	// Positions still point into the file as written.
	_, err = ParseConfig([]byte("{ /* c */ \"mcpServers\": {\n  // c\n  \"a\": {\"command\": \"x\"} /* unterminated\n}}"))
	want2 := []string{`config: line 3, column 25: invalid character '/' after object key:value pair`}
	if diff := cmp.Diff(want2, cfgErrLines(err)); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}

	if _, err := ParseConfig([]byte(`{"mcpServers": {}} // no newline at the end`)); err != nil {
		t.Errorf("a line comment at the end of the file: %v", err)
	}
}

func TestParseConfigNamesTheFile(t *testing.T) {
	_, err := config.Parse([]byte("null"), config.Options{Path: "mcp.json", Lookup: cfgLookup(nil)})
	want := []string{`config: mcp.json: top level is null, want an object`}
	if diff := cmp.Diff(want, cfgErrLines(err)); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
}

func TestDurationUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    Duration
		wantErr string
	}{
		{in: `1500`, want: Duration(1500 * time.Millisecond)},
		{in: `0`, want: 0},
		{in: `2.5`, want: Duration(2500 * time.Microsecond)},
		{in: `1e3`, want: Duration(time.Second)},
		{in: `"30s"`, want: Duration(30 * time.Second)},
		{in: `"1m30s"`, want: Duration(90 * time.Second)},
		{in: `"250ms"`, want: Duration(250 * time.Millisecond)},
		{in: `"0"`, want: 0},
		{in: `null`, want: Duration(7)}, // unchanged
		{in: `-1`, wantErr: `duration: must not be negative, got -1`},
		{in: `"-1s"`, wantErr: `duration: must not be negative, got "-1s"`},
		{in: `"30"`, wantErr: `duration: invalid duration "30" (want milliseconds as a number, or a string like "30s" or "1m30s")`},
		{in: `"soon"`, wantErr: `duration: invalid duration "soon" (want milliseconds as a number, or a string like "30s" or "1m30s")`},
		{in: `1e300`, wantErr: `duration: too large, got 1e300 milliseconds`},
		{in: `true`, wantErr: `duration: want milliseconds (a number) or a duration string like "30s", got a boolean`},
		{in: `{}`, wantErr: `duration: want milliseconds (a number) or a duration string like "30s", got an object`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			d := Duration(7)
			err := json.Unmarshal([]byte(tt.in), &d)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Unmarshal(%s) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if d != tt.want {
				t.Errorf("Unmarshal(%s) = %v, want %v", tt.in, d, tt.want)
			}
		})
	}
}

func TestDurationMarshal(t *testing.T) {
	tests := []struct {
		in   Duration
		want string
	}{
		{0, `"0s"`},
		{Duration(30 * time.Second), `"30s"`},
		{Duration(90 * time.Second), `"1m30s"`},
		{Duration(1500 * time.Microsecond), `"1.5ms"`},
		{Duration(2 * time.Hour), `"2h0m0s"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal(%v) = %s, want %s", time.Duration(tt.in), got, tt.want)
			}
			var back Duration
			if err := json.Unmarshal(got, &back); err != nil || back != tt.in {
				t.Errorf("round trip of %s = %v, %v; want %v", got, back, err, tt.in)
			}
		})
	}
}

func TestServerConfigJSONRoundTrip(t *testing.T) {
	full := ServerConfig{
		Name:           "notes",
		Type:           "stdio",
		Command:        "notes-mcp",
		Args:           []string{"--db", "${NOTES_DB:-notes.db}"},
		Env:            map[string]string{"B": "2", "A": "1"},
		Cwd:            "/srv/notes",
		Enabled:        false,
		Description:    "Notes",
		FriendlyName:   "My notes",
		Timeout:        Duration(90 * time.Second),
		StartupTimeout: Duration(1500 * time.Millisecond),
		IncludeTools:   []string{"read"},
		ExcludeTools:   []string{"write"},
		MaxTools:       3,
		MaxDescription: -1,
		InheritEnv:     true,
	}
	got, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"type":"stdio","command":"notes-mcp","args":["--db","${NOTES_DB:-notes.db}"],"env":{"A":"1","B":"2"},` +
		`"cwd":"/srv/notes","enabled":false,"description":"Notes","friendlyName":"My notes","timeout":"1m30s",` +
		`"startupTimeout":"1.5s","includeTools":["read"],"excludeTools":["write"],"maxTools":3,"maxDescription":-1,"inheritEnv":true}`
	if string(got) != wantJSON {
		t.Errorf("Marshal =\n%s\nwant\n%s", got, wantJSON)
	}

	remote := ServerConfig{Name: "tickets", Type: "http", Enabled: true, URL: "https://x.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${T}"}, AllowPrivate: true}
	inferred := ServerConfig{Name: "events", URL: "https://x.example/sse", Enabled: true}
	oauthServer := ServerConfig{Name: "sentry", Type: "sse", Enabled: true, URL: "https://mcp.sentry.dev/sse",
		OAuth: &OAuthConfig{ClientID: "abc", ClientSecret: "${S}", Scopes: "read write", CallbackPort: 8080, GrantType: "jwt_bearer",
			Assertion: "${A}", DPoP: new(true), ClientMetadataURL: "https://c.example/c.json"},
		HeadersHelper: "get-headers"}
	off := false
	pinned := ServerConfig{Name: "bare", Type: "stdio", Enabled: true, Command: "x", Prefix: &off, ProtocolVersion: "2025-06-18"}
	cases := []ServerConfig{full, remote, inferred, oauthServer, pinned}
	data, err := os.ReadFile("testdata/config/mcpvisor.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, config.Options{Path: "mcpvisor.json", Lookup: cfgLookup(map[string]string{"TICKETS_TOKEN": "t"})})
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, cfg.Servers...)
	for _, sc := range cases {
		t.Run(sc.Name, func(t *testing.T) {
			data, err := json.Marshal(sc)
			if err != nil {
				t.Fatal(err)
			}
			back := ServerConfig{Name: sc.Name}
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", data, err)
			}
			want := sc
			if tr, ok := sc.Transport(); ok {
				want.Type = string(tr)
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip through %s (-want +got):\n%s", data, diff)
			}
		})
	}
}

func TestServerConfigUnmarshalJSON(t *testing.T) {
	var sc ServerConfig
	if err := json.Unmarshal([]byte(`{"command": "x", "unknown": 1}`), &sc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ServerConfig{Type: "stdio", Command: "x", Enabled: true}, sc); diff != "" {
		t.Errorf("Unmarshal (-want +got):\n%s", diff)
	}

	err := json.Unmarshal([]byte(`{"args": [1], "enabled": "no"}`), &sc)
	want := []string{
		`config: field "args[0]": want a string, got a number`,
		`config: field "enabled": want true or false, got a string`,
	}
	if diff := cmp.Diff(want, cfgErrLines(err)); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("errors.Is(%v, ErrConfig) = false", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		sc   ServerConfig
		want []string
	}{
		{"minimal stdio", ServerConfig{Name: "a", Command: "x"}, nil},
		{"inferred http", ServerConfig{Name: "a", URL: "https://x.example/mcp"}, nil},
		{"type alias", ServerConfig{Name: "a", Type: "streamable-http", URL: "https://x.example/mcp"}, nil},
		{"url from an unset variable", ServerConfig{Name: "a", Type: "http", URL: "${MCP_URL}"}, nil},
		{"url host from an unset variable", ServerConfig{Name: "a", Type: "sse", URL: "https://${HOST}:${PORT}/sse"}, nil},
		{"url checked with its default", ServerConfig{Name: "a", Type: "http", URL: "${MCP_URL:-localhost}"},
			[]string{`config: server "a": field "url": want an absolute http or https url, like "https://host/mcp"`}},
		{"no name", ServerConfig{Command: "x"}, []string{`config: invalid server name: empty`}},
		{"negative durations", ServerConfig{Name: "a", Command: "x", Timeout: -1, StartupTimeout: Duration(-time.Second)},
			[]string{
				`config: server "a": field "timeout": must not be negative, got "-1ns"`,
				`config: server "a": field "startupTimeout": must not be negative, got "-1s"`,
			}},
		{"every problem at once", ServerConfig{Name: "a b", Type: "http", Command: "x", URL: "https://x.example/mcp", MaxTools: -1,
			Env: map[string]string{"": "v"}, IncludeTools: []string{"t"}, ExcludeTools: []string{"t"}},
			[]string{
				`config: server "a b": invalid server name: "a b" has ' ' (allowed: letters, digits, '_' and '-')`,
				`config: server "a b": field "command": cannot be combined with "url": a server either runs a command (stdio) or connects to a url (http, sse)`,
				`config: server "a b": field "env": invalid variable name ""`,
				`config: server "a b": field "maxTools": must be 0 (no cap) or more, got -1`,
				`config: server "a b": field "excludeTools": "t" is also in "includeTools"`,
			}},
		{"url with userinfo and no host", ServerConfig{Name: "a", URL: "https://user:${PASSWORD}@/mcp"},
			[]string{`config: server "a": field "url": url has no host`}},
		{"empty header name", ServerConfig{Name: "a", URL: "https://x.example/mcp", Headers: map[string]string{"": "x"}},
			[]string{`config: server "a": field "headers": invalid header name ""`}},
		{"nul in url", ServerConfig{Name: "a", URL: "https://x.example/\x00"},
			[]string{`config: server "a": field "url": contains a NUL byte`}},
		{"oauth", ServerConfig{Name: "a", URL: "https://x.example/mcp", OAuth: &OAuthConfig{ClientID: "c", CallbackPort: 8080}, HeadersHelper: "h"}, nil},
		{"oauth with problems", ServerConfig{Name: "a", URL: "https://x.example/mcp", OAuth: &OAuthConfig{CallbackPort: 70000, GrantType: "client_credentials"}},
			[]string{
				`config: server "a": field "oauth.clientId": required for the client_credentials grant`,
				`config: server "a": field "oauth.callbackPort": want a port number from 1 to 65535, got 70000`,
			}},
		{"oauth unchecked on stdio", ServerConfig{Name: "a", Command: "x", OAuth: &OAuthConfig{CallbackPort: 70000}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sc.Validate()
			if diff := cmp.Diff(tt.want, cfgErrLines(err)); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("errors.Is(%v, ErrConfig) = false", err)
			}
		})
	}
	if err := (ServerConfig{Name: "a.b", Command: "x"}).Validate(); !errors.Is(err, actors.ErrInvalidServerName) {
		t.Errorf("errors.Is(%v, actors.ErrInvalidServerName) = false", err)
	}
}

// TestTimeoutFloor: a timeout shorter than MinTimeout ("1ns", or half a
// millisecond as a number) is a load-time error naming the server and the
// field, not a server whose every call fails at once (issue 22, finding
// 5: it was accepted silently). 0 (the default) and MinTimeout itself pass.
func TestTimeoutFloor(t *testing.T) {
	for _, tc := range []struct {
		name, entry string
		want        []string
	}{
		{"1ns", `{"command": "x", "timeout": "1ns"}`,
			[]string{`config: server "a": field "timeout": 1ns is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`}},
		{"half a millisecond", `{"command": "x", "startupTimeout": 0.5}`,
			[]string{`config: server "a": field "startupTimeout": 0.5 milliseconds: 500µs is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`}},
		{"every field", `{"command": "x", "timeout": "999us", "startupTimeout": "1us", "maxTotalTimeout": "10ns"}`,
			[]string{
				`config: server "a": field "timeout": 999µs is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`,
				`config: server "a": field "startupTimeout": 1µs is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`,
				`config: server "a": field "maxTotalTimeout": 10ns is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`,
			}},
		{"at the floor", `{"command": "x", "timeout": "1ms", "startupTimeout": 1}`, nil},
		{"zero is the default", `{"command": "x", "timeout": 0, "startupTimeout": "0s"}`, nil},
		{"a disabled server too", `{"command": "x", "timeout": "1ns", "disabled": true}`,
			[]string{`config: server "a": field "timeout": 1ns is shorter than 1ms, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(`{"mcpServers": {"a": ` + tc.entry + `}}`))
			if diff := cmp.Diff(tc.want, cfgErrLines(err)); diff != "" {
				t.Errorf("ParseConfig (-want +got):\n%s", diff)
			}
			if err != nil {
				if !errors.Is(err, ErrConfig) {
					t.Errorf("errors.Is(%v, ErrConfig) = false", err)
				}
				if len(cfg.Servers) != 0 {
					t.Errorf("servers returned with the error: %+v", cfg.Servers)
				}
			}
		})
	}
	// The API's paths: Validate, and the spec Register builds.
	sc := ServerConfig{Name: "a", Command: "x", Enabled: true, Timeout: Duration(time.Nanosecond)}
	if err := sc.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `field "timeout": 1ns is shorter than 1ms`) {
		t.Errorf("Validate: %v", err)
	}
	if _, err := serverSpec(sc, nil, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `field "timeout"`) {
		t.Errorf("spec: %v", err)
	}
}

// TestToolFilterNamespacedName: includeTools and excludeTools take the
// server's own tool names; mcp__<server>__<tool> there would match no tool
// (includeTools: the server would expose none, silently), so it is an
// error that names the own name to write.
func TestToolFilterNamespacedName(t *testing.T) {
	_, err := ParseConfig([]byte(`{"mcpServers": {"fs": {"command": "x", "includeTools": ["list", "mcp__fs__read"], "excludeTools": ["mcp__fs__rm"]}}}`))
	want := []string{
		`config: server "fs": field "includeTools[1]": "mcp__fs__read" is the namespaced name: includeTools takes the server's own tool names, here "read"`,
		`config: server "fs": field "excludeTools[0]": "mcp__fs__rm" is the namespaced name: excludeTools takes the server's own tool names, here "rm"`,
	}
	if diff := cmp.Diff(want, cfgErrLines(err)); diff != "" {
		t.Errorf("ParseConfig (-want +got):\n%s", diff)
	}
	// Another server's prefix is a name like any other.
	if _, err := ParseConfig([]byte(`{"mcpServers": {"fs": {"command": "x", "includeTools": ["mcp__git__log"]}}}`)); err != nil {
		t.Errorf("another server's prefix: %v", err)
	}
	if err := (ServerConfig{Name: "fs", Command: "x", IncludeTools: []string{"mcp__fs__read"}}).Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("Validate: %v", err)
	}
}

func ExampleParseConfig() {
	cfg, err := ParseConfig([]byte(`{
		"mcpServers": {
			"notes": {"command": "notes-mcp", "args": ["--db", "${NOTES_DB:-notes.db}"], "timeout": "30s"},
			"tickets": {"type": "http", "url": "http://127.0.0.1:9100/mcp", "allowPrivate": true, "colour": "blue"},
			"draft": {"disabled": true, "command": "draft-mcp"}
		}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, sc := range cfg.Servers {
		fmt.Println(sc.Name, sc.Type, sc.Enabled)
	}
	fmt.Println(cfg.Warnings)
	// Output:
	// notes stdio true
	// tickets http true
	// draft stdio false
	// [server "tickets": unknown field "colour" ignored]
}

// FuzzParseConfig checks that no input panics the parser, the comment
// stripper or the expander, that every error is an ErrConfig, and that what
// parses survives a JSON round trip.
func FuzzParseConfig(f *testing.F) {
	for _, name := range []string{"claude-code.mcp.json", "vscode-mcp.json", "gemini-settings.json", "cursor-mcp.json", "mcpvisor.json", "broken-entries.json"} {
		data, err := os.ReadFile("testdata/config/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"mcpServers": {"a": {"command": "${A:-${B:-x}}", "url": "${U}://${H}@/p"}}} // c`))
	f.Add([]byte(`{"servers": {"a": {"command": "\u0000", "headers": {"A\u0000": "\r"}}}}`))
	f.Add([]byte("{/* \"x\" */ \"servers\": {\"a\": {\"url\": \"http://h/sse\",},},}"))
	f.Add([]byte(`{"mcpServers": {"a": {"url": "https://h/mcp", "headersHelper": "h ${A}", "oauth": {"scopes": ["x", "y"], "callbackPort": 1, "grantType": "jwt_bearer", "assertion": "${EMPTY:-j}", "clientMetadataUrl": "https://c/${A}"}}}}`))
	lookup := cfgLookup(map[string]string{"A": "1", "EMPTY": ""})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, config.Options{Path: "fuzz.json", Lookup: lookup})
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error is not an ErrConfig: %v", err)
			}
			return
		}
		for _, sc := range cfg.Servers {
			out, err := json.Marshal(sc)
			if err != nil {
				t.Fatalf("Marshal(%+v): %v", sc, err)
			}
			back := ServerConfig{Name: sc.Name}
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", out, err)
			}
			if diff := cmp.Diff(sc, back); diff != "" {
				t.Fatalf("round trip through %s (-want +got):\n%s", out, diff)
			}
			if sc.Enabled {
				if _, err := serverSpec(sc, lookup, nil); err != nil && !onlyUnset(err) {
					t.Fatalf("an enabled server that loads has no Spec, and not for an unset variable: %v", err)
				}
			}
		}
	})
}

// onlyUnset reports whether every error of err is an unset variable: a
// file with one loads (with a warning), and only that server fails when
// the host starts it.
func onlyUnset(err error) bool {
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, "is not set and has no default") {
			return false
		}
	}
	return true
}

// "prefix" and "protocolVersion" reach the runtime's spec, and bad values
// are config errors naming the server and the field.
func TestPrefixAndProtocolVersion(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"mcpServers": {
		"plain": {"command": "x"},
		"on": {"command": "x", "prefix": true},
		"bare": {"command": "x", "prefix": false, "protocolVersion": "2025-06-18"},
		"modern": {"url": "https://x.example/mcp", "protocolVersion": "2026-07-28"}}}`), config.Options{Lookup: cfgLookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Prefixed, Unprefixed bool
		Version              string
	}
	var got []view
	for _, sc := range cfg.Servers {
		spec, err := serverSpec(sc, nil, nil)
		if err != nil {
			t.Fatalf("%s: spec: %v", sc.Name, err)
		}
		got = append(got, view{sc.Prefixed(), spec.Unprefixed, spec.ProtocolVersion})
	}
	want := []view{{true, false, ""}, {true, false, ""}, {false, true, "2025-06-18"}, {true, false, "2026-07-28"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prefix and protocolVersion (-want +got):\n%s", diff)
	}
	data, err := json.Marshal(cfg.Servers[2])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"prefix":false`) || !strings.Contains(string(data), `"protocolVersion":"2025-06-18"`) {
		t.Errorf("Marshal = %s, want \"prefix\":false and the protocolVersion", data)
	}

	for _, tt := range []struct{ name, entry, want string }{
		{"prefix a string", `{"command": "x", "prefix": "no"}`, `config: server "s": field "prefix": want true or false, got a string`},
		{"prefix an object", `{"command": "x", "prefix": {}}`, `config: server "s": field "prefix": want true or false, got an object`},
		{"unknown version", `{"command": "x", "protocolVersion": "2026-01-01"}`,
			`config: server "s": field "protocolVersion": unknown protocol version "2026-01-01" (want one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, or leave it out to detect the era)`},
		{"version not a string", `{"command": "x", "protocolVersion": true}`, `config: server "s": field "protocolVersion": want a string, got a boolean`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(`{"mcpServers": {"s": `+tt.entry+`}}`), config.Options{Lookup: cfgLookup(nil)})
			if diff := cmp.Diff([]string{tt.want}, cfgErrLines(err)); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("errors.Is(%v, ErrConfig) = false", err)
			}
			var sc ServerConfig
			if err := json.Unmarshal([]byte(tt.entry), &sc); err == nil {
				err = sc.Validate()
				if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(tt.want, `config: server "s": `)) {
					t.Errorf("UnmarshalJSON+Validate error = %v, want %q", err, tt.want)
				}
			}
		})
	}
}

// TestLoadConfigClients loads each agent tool's documented file, as the
// tool documents it (testdata/clients/<tool>/ at the path the tool
// reads), and checks what mcpvisor makes of it.
func TestLoadConfigClients(t *testing.T) {
	t.Setenv("HOME", "/home/test")
	for k, v := range map[string]string{"API_KEY": "k", "MY_SERVICE_TOKEN": "s", "MEMORY_FILE": "/tmp/m.json",
		"AUTH_TOKEN": "a", "ROO_MEMORY_FILE": "/tmp/r.json", "MEMORY_FILE_PATH": "/tmp/c.json", "REMOTE_TOKEN": "r"} {
		t.Setenv(k, v)
	}
	cfgUnsetenv(t, "PROJECT_ROOT", "API_BASE_URL", "FIGMA_OAUTH_TOKEN")
	abs := func(dir string) string {
		p, err := filepath.Abs(filepath.Join("testdata/clients", dir))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	sep := string(os.PathSeparator)
	const confirm = "mcpvisor does not confirm a server's tool calls itself (its approval inbox holds only its own host tools that change servers): " +
		"whether to confirm a call is up to the client calling through it"
	alwaysAllow := func(server string) string {
		return fmt.Sprintf(`server %q: field "alwaysAllow" is not supported by mcpvisor, ignored: it lists tools to run without confirmation; %s`, server, confirm)
	}
	memory := []string{"-y", "@modelcontextprotocol/server-memory"}
	filesystem := func(dir string) []string { return []string{"-y", "@modelcontextprotocol/server-filesystem", dir} }
	thinking := []string{"-y", "@modelcontextprotocol/server-sequential-thinking"}

	tests := []struct {
		file string
		want Config
	}{{
		file: "claude-code/.mcp.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem("${PROJECT_ROOT:-/tmp}")},
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					Env: map[string]string{"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH:-/tmp/memory.json}"}},
				{Name: "api-server", Type: "http", Enabled: true, URL: "${API_BASE_URL:-http://localhost:8080}/mcp",
					Headers: map[string]string{"Authorization": "Bearer ${API_KEY}"}},
			},
		},
	}, {
		file: "claude-desktop/claude_desktop_config.json",
		want: Config{Servers: []ServerConfig{
			{Name: "filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem("/tmp")},
			{Name: "everything", Type: "stdio", Enabled: true, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}},
		}},
	}, {
		file: "cursor/.cursor/mcp.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					// ${userHome} and ${pathSeparator} are resolved; the envFile is read.
					Env: map[string]string{"MEMORY_FILE_PATH": "/home/test" + sep + ".cursor-memory.json",
						"MEMORY_LOG_LEVEL": "info", "MEMORY_OWNER": "the cursor example"}},
				{Name: "filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem(abs("cursor"))},
				{Name: "remote-server", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"API_KEY": "${env:MY_SERVICE_TOKEN}"}},
			},
		},
	}, {
		file: "vscode/.vscode/mcp.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					Env: map[string]string{"MEMORY_FILE_PATH": "${input:memory-file}"}},
				{Name: "filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem(abs("vscode"))},
				{Name: "sequential-thinking", Type: "stdio", Enabled: true, Command: "npx", Args: thinking},
				{Name: "my-remote", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp"},
			},
			Inputs: []ConfigInput{{ID: "memory-file", Type: "promptString", Description: "Where the memory server keeps its knowledge graph"}},
		},
	}, {
		file: "gemini/.gemini/settings.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					Env: map[string]string{"MEMORY_FILE_PATH": "${MEMORY_FILE}"}, Timeout: Duration(30 * time.Second)},
				{Name: "sequentialThinking", Type: "stdio", Enabled: true, Command: "npx", Args: thinking, Cwd: "./",
					IncludeTools: []string{"sequentialthinking"}},
				{Name: "httpServer", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp", Timeout: Duration(5 * time.Second)},
				{Name: "sseServer", Type: "sse", Enabled: true, URL: "http://localhost:8080/sse", Timeout: Duration(30 * time.Second)},
			},
			Warnings: []string{
				`server "sequentialThinking": field "trust" is not supported by mcpvisor, ignored: in Gemini CLI it skips confirming this server's tool calls; ` + confirm,
			},
		},
	}, {
		file: "codex/.codex/config.toml",
		want: Config{
			Servers: []ServerConfig{
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					Env:            map[string]string{"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH:-}", "MEMORY_LOG": "warn"},
					StartupTimeout: Duration(20 * time.Second), Timeout: Duration(45 * time.Second)},
				{Name: "sequential-thinking", Type: "stdio", Enabled: true, Command: "npx", Args: thinking,
					IncludeTools: []string{"sequentialthinking"}},
				{Name: "figma", Type: "http", Enabled: false, URL: "http://127.0.0.1:3845/mcp",
					Headers: map[string]string{"Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}", "X-Figma-Region": "us-east-1"}},
				// disabled_tools is applied after enabled_tools.
				{Name: "chrome_devtools", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp",
					IncludeTools: []string{"open"}, ExcludeTools: []string{"screenshot"},
					StartupTimeout: Duration(20 * time.Second), Timeout: Duration(45 * time.Second)},
			},
			Warnings: []string{
				`server "figma": field "headers.Authorization": variable FIGMA_OAUTH_TOKEN is not set and has no default (the server is disabled)`,
			},
		},
	}, {
		file: "zed/settings.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory},
				{Name: "sequential-thinking", Type: "stdio", Enabled: true, Command: "npx", Args: thinking},
				{Name: "remote-mcp-server", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"Authorization": "Bearer <token>"}},
			},
			Warnings: []string{
				`server "mcp-server-context7": a Zed extension ("source": "extension"), which only Zed can run: skipped`,
			},
		},
	}, {
		file: "windsurf/mcp_config.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem("/tmp")},
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					ExcludeTools: []string{"delete_entities", "delete_relations"}},
				{Name: "remote-http-mcp", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"API_KEY": "Bearer ${env:AUTH_TOKEN}"}},
			},
		},
	}, {
		file: "cline/cline_mcp_settings.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory, Timeout: Duration(time.Minute)},
				{Name: "sequential-thinking", Type: "stdio", Enabled: true, Command: "npx", Args: thinking, Timeout: Duration(2 * time.Minute)},
				// Cline reads a url without a type as SSE.
				{Name: "remote-server", Type: "sse", Enabled: true, URL: "http://localhost:8080/sse",
					Headers: map[string]string{"Authorization": "Bearer your-token"}},
				{Name: "streamable-server", Type: "http", Enabled: false, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"Authorization": "Bearer your-token"}, Timeout: Duration(time.Minute)},
			},
			Warnings: []string{
				alwaysAllow("memory"),
				alwaysAllow("remote-server"),
				alwaysAllow("streamable-server"),
			},
		},
	}, {
		file: "roo/.roo/mcp.json",
		want: Config{
			Servers: []ServerConfig{
				{Name: "filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem("/tmp"), Cwd: "/tmp",
					ExcludeTools: []string{"write_file", "edit_file"}, Timeout: Duration(time.Minute)},
				{Name: "memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					Env: map[string]string{"MEMORY_FILE_PATH": "${env:ROO_MEMORY_FILE}"}},
				{Name: "modern-remote-server", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"X-API-Key": "your-secure-api-key"}},
			},
			Warnings: []string{
				alwaysAllow("filesystem"),
				`server "memory": field "watchPaths" is not supported by mcpvisor, ignored: mcpvisor does not restart a server when files change`,
				alwaysAllow("modern-remote-server"),
			},
		},
	}, {
		file: "continue/.continue/config.yaml",
		want: Config{
			Servers: []ServerConfig{
				// ${{ secrets.NAME }} is the environment variable NAME.
				{Name: "Memory", Type: "stdio", Enabled: true, Command: "npx", Args: memory,
					Env: map[string]string{"MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}"}},
				{Name: "Filesystem", Type: "stdio", Enabled: true, Command: "npx", Args: filesystem("/tmp"),
					StartupTimeout: Duration(30 * time.Second)},
				{Name: "Remote", Type: "http", Enabled: true, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
			},
		},
	}, {
		file: "continue/.continue/mcpServers/sequential-thinking.yaml",
		want: Config{
			Servers: []ServerConfig{{Name: "Sequential-thinking", Type: "stdio", Enabled: true, Command: "npx", Args: thinking}},
			Warnings: []string{
				`server "Sequential thinking" is named "Sequential-thinking" (server names hold only letters, digits, '_' and '-')`,
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata/clients", tt.file)
			got, err := LoadConfig(path)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			tt.want.Path = path
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("LoadConfig (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("every file is tested", func(t *testing.T) {
		var files []string
		err := filepath.WalkDir("testdata/clients", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() != ".env" {
				files = append(files, filepath.ToSlash(strings.TrimPrefix(p, "testdata/clients/")))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var tested []string
		for _, tt := range tests {
			tested = append(tested, tt.file)
		}
		slices.Sort(files)
		slices.Sort(tested)
		if diff := cmp.Diff(tested, files); diff != "" {
			t.Errorf("testdata/clients (-tested +present):\n%s", diff)
		}
	})
}

func TestMergeConfigs(t *testing.T) {
	a := &Config{Path: "a.json",
		Servers:  []ServerConfig{{Name: "one", Command: "a1"}, {Name: "two", Command: "a2"}},
		Inputs:   []ConfigInput{{ID: "key", Type: "promptString"}, {ID: "region", Type: "promptString"}},
		Warnings: []string{`server "one": unknown field "x" ignored`}}
	b := &Config{Path: "b.json",
		Servers: []ServerConfig{{Name: "two", Command: "b2"}, {Name: "three", Command: "b3"}},
		Inputs:  []ConfigInput{{ID: "key", Type: "promptString"}, {ID: "region", Type: "pickString", Options: []string{"eu"}}}}
	c := &Config{Path: "c.json", Servers: []ServerConfig{{Name: "two", Command: "c2"}}}
	got := MergeConfigs(a, nil, b, c)
	want := &Config{
		Servers: []ServerConfig{{Name: "one", Command: "a1"}, {Name: "two", Command: "c2"}, {Name: "three", Command: "b3"}},
		Inputs:  []ConfigInput{{ID: "key", Type: "promptString"}, {ID: "region", Type: "pickString", Options: []string{"eu"}}},
		Warnings: []string{
			`a.json: server "one": unknown field "x" ignored`,
			`server "two": defined in a.json and again in b.json; the entry in b.json is used`,
			`input "region": defined in a.json and again, differently, in b.json; the one in b.json is used`,
			`server "two": defined in b.json and again in c.json; the entry in c.json is used`,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergeConfigs (-want +got):\n%s", diff)
	}

	one := MergeConfigs(a)
	if diff := cmp.Diff(a.Warnings, one.Warnings); diff != "" {
		t.Errorf("one config's warnings are not prefixed (-want +got):\n%s", diff)
	}
	if got := MergeConfigs(); got == nil || len(got.Servers) > 0 {
		t.Errorf("MergeConfigs() = %+v, want an empty Config", got)
	}
}

func TestLoadConfigs(t *testing.T) {
	t.Setenv("TICKETS_TOKEN", "t")
	cfgUnsetenv(t, "EXPERIMENTAL_KEY", "SEARCH_API_KEY", "NOTES_TOKEN")
	t.Setenv("SEARCH_API_KEY", "s")
	t.Setenv("NOTES_TOKEN", "n")
	got, err := LoadConfigs("testdata/config/mcpvisor.json", "testdata/config/cursor-mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range got.Servers {
		names = append(names, sc.Name)
	}
	if diff := cmp.Diff([]string{"notes", "tickets", "experimental", "web-search", "remote-notes", "legacy-events"}, names); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if len(got.Warnings) != 2 || !strings.HasPrefix(got.Warnings[0], "testdata/config/mcpvisor.json: ") ||
		!strings.HasPrefix(got.Warnings[1], "testdata/config/cursor-mcp.json: ") {
		t.Errorf("warnings %q, want one of each file, prefixed with its path", got.Warnings)
	}

	got, err = LoadConfigs("testdata/config/mcpvisor.json", "testdata/config/broken-unknown-input.json", "testdata/config/broken-syntax.json")
	want := []string{
		`config: server "perplexity": field "env.PERPLEXITY_API_KEY": ${input:perplexity_key} names no input in "inputs"`,
		`config: testdata/config/broken-syntax.json:5:7: invalid character '"' after object key:value pair`,
	}
	if diff := cmp.Diff(want, cfgErrLines(err)); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
	if got == nil || len(got.Servers) > 0 || !slices.Contains(got.Warnings, `testdata/config/broken-unknown-input.json: server "perplexity": unknown field "sandboxEnabled" ignored`) {
		t.Errorf("LoadConfigs with errors = %+v, want no servers and every file's warnings", got)
	}
}

// A config input is looked up as "input:ID" when the server starts, and
// one without an answer is an error naming it.
func TestSpecInput(t *testing.T) {
	sc := ServerConfig{Name: "a", Command: "x", Env: map[string]string{"KEY": "${input:api-key}"}}
	spec, err := serverSpec(sc, cfgLookup(map[string]string{"input:api-key": "s3cret"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(spec.Env, "KEY=s3cret") {
		t.Errorf("Env = %q, want KEY=s3cret", spec.Env)
	}
	_, err = serverSpec(sc, nil, nil)
	if diff := cmp.Diff([]string{`config: server "a": field "env.KEY": input "api-key" has no answer`}, cfgErrLines(err)); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
}
