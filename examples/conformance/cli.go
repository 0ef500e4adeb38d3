package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// The scenario through the command line, as a person would run it: a
// config file naming the server, `mcpvisor tools` (which signs in with
// $BROWSER when the server asks, the browser being this program with
// -browse), then `mcpvisor call` for each tool, which finds the token the
// first command stored.

// driveCLI runs the scenario with the mcpvisor binary at bin.
func driveCLI(ctx context.Context, bin, dataDir, url string, ready time.Duration) error {
	oauth, err := oauthConfig(os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	cfg := map[string]any{"mcpServers": map[string]any{serverName: mcpvisor.ServerConfig{
		Type: "http", URL: url, AllowPrivate: true, Enabled: true,
		StartupTimeout: mcpvisor.Duration(ready), OAuth: oauth,
	}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dataDir, "mcp.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	common := []string{"--config", cfgPath, "--data", dataDir}
	out, err := mcpvisorCmd(ctx, bin, self, append([]string{"tools", "--json", "--wait", ready.String()}, common...)...)
	if err != nil {
		return err
	}
	var tools []mcpvisor.Tool
	if err := json.Unmarshal(out, &tools); err != nil {
		return fmt.Errorf("mcpvisor tools --json: %w", err)
	}
	fmt.Printf("mcpvisor tools: %d tool(s)\n", len(tools))
	calls, err := contextCalls(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	for _, c := range append(calls, genericCalls(tools, calls)...) {
		name := "mcp__" + serverName + "__" + c.tool
		if !hasTool(tools, name) {
			return fmt.Errorf("tool %s not listed by the server", c.tool)
		}
		out, err := mcpvisorCmd(ctx, bin, self, append([]string{"call", name, c.args}, common...)...)
		if err != nil {
			return err
		}
		fmt.Printf("mcpvisor call %s: %s", name, out)
	}
	return nil
}

// mcpvisorCmd runs one mcpvisor command with this program as $BROWSER and
// returns its stdout; its stderr goes to ours.
func mcpvisorCmd(ctx context.Context, bin, self string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "BROWSER="+self+" -browse")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("mcpvisor %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}

// browseTo is the browser: it GETs u and follows the redirects, to the
// loopback listener of the mcpvisor that opened it.
func browseTo(u string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	resp.Body.Close()
	fmt.Fprintf(os.Stderr, "browser: %s answered %s\n", resp.Request.URL.Host, resp.Status)
	return 0
}
