// Command conformance is the MCP client that the official conformance runner
// (@modelcontextprotocol/conformance, client mode) launches against its test
// servers. It drives an embedded mcpvisor Host, so what the runner checks is
// the host's own Streamable HTTP transport, handshake and tool calls.
//
// The runner starts one test server per scenario and runs
//
//	<command> [flags] <server-url>
//
// with the scenario's name in MCP_CONFORMANCE_SCENARIO (and, for some auth
// scenarios, JSON data in MCP_CONFORMANCE_CONTEXT). This program registers
// that URL as one http server, waits for it to be ready (initialize,
// notifications/initialized, tools/list), does what the scenario expects of
// a client, closes the host and exits 0; on any failure it prints the error
// (and the server's log) on stderr and exits 1. See conformance/README.md
// for how `make conformance` runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// serverName is the one server's name: its tools are mcp__conformance__<tool>.
const serverName = "conformance"

// clientMetadataURL is this client's Client ID Metadata Document: a client
// that has one offers it to every authorization server that supports them.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// expectedCall is one tool call: the server's name for the tool and the
// arguments object.
type expectedCall struct {
	tool string
	args string
}

func main() {
	os.Exit(run())
}

func run() int {
	timeout := flag.Duration("timeout", 25*time.Second, "bound on the whole run (the runner kills the client at 30 s by default)")
	ready := flag.Duration("ready", 10*time.Second, "bound on the handshake and tool listing")
	cli := flag.String("cli", "", "run the scenario through the mcpvisor `BINARY` (tools, then call) instead of an embedded host")
	browse := flag.Bool("browse", false, "be the browser: GET the URL argument and follow its redirects (what $BROWSER runs in -cli mode)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: MCP_CONFORMANCE_SCENARIO=<scenario> %s [flags] <server-url>\n", filepath.Base(os.Args[0]))
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		return 2
	}
	url := flag.Arg(flag.NArg() - 1) // the runner appends the URL last
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if *browse {
		return browseTo(url)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logger.Info("conformance client", "scenario", scenario, "url", url)

	dataDir, err := os.MkdirTemp("", "mcpvisor-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	defer os.RemoveAll(dataDir)

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	if *cli != "" {
		err = driveCLI(ctx, *cli, dataDir, url, *ready)
	} else {
		err = drive(ctx, logger, dataDir, url, *ready)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: scenario %q: %v\n", scenario, err)
		dumpServerLog(dataDir)
		return 1
	}
	fmt.Printf("scenario %q: ok\n", scenario)
	return 0
}

// drive opens a host on the one server, runs the scenario and closes the
// host (which ends the session: DELETE, then the connections).
func drive(ctx context.Context, logger *slog.Logger, dataDir, url string, ready time.Duration) (err error) {
	oauth, err := oauthConfig(os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	cfg := &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{
		OAuth:          oauth,
		Name:           serverName,
		Type:           "http",
		URL:            url,
		AllowPrivate:   true, // the runner's servers listen on localhost
		Enabled:        true,
		StartupTimeout: mcpvisor.Duration(ready),
	}}}
	host, err := mcpvisor.Open(ctx, mcpvisor.Options{
		Config:  cfg,
		DataDir: dataDir,
		Logger:  logger,
		// One restart at most: a second initialize would blur what the
		// scenario's server records, and a broken transport should fail
		// fast with its own error rather than after the whole budget.
		Restart: mcpvisor.RestartPolicy{MaxRestarts: 1, InitialInterval: 200 * time.Millisecond},
		// The runner's authorization servers redirect at once, with no
		// page: the browser step is one GET whose redirect is read.
		SignIn: followRedirect,
		OnEvent: func(ev mcpvisor.Event) {
			logger.Debug("event", "server", ev.Server, "kind", ev.Kind, "state", ev.State, "method", ev.Method, "err", ev.Err)
		},
		// A person who submits a form without touching it: the host fills
		// in the schema's defaults (SEP-1034) before answering accept.
		// URL-mode requests are declined: nobody is there to open them.
		Elicitation: func(_ context.Context, req *mcpvisor.ElicitationRequest) (mcpvisor.ElicitationResponse, error) {
			logger.Info("elicitation", "mode", req.Mode, "message", req.Message, "fields", len(req.Fields))
			if req.Mode == mcpvisor.ElicitURL {
				return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitDecline}, nil
			}
			return mcpvisor.ElicitationResponse{Action: mcpvisor.ElicitAccept}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("open host: %w", err)
	}
	defer func() {
		if cerr := host.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close host: %w", cerr)
		}
	}()

	readyCtx, cancelReady := context.WithTimeout(ctx, ready)
	werr := host.WaitReady(readyCtx, serverName)
	cancelReady()
	if werr != nil {
		return fmt.Errorf("server not ready: %w", werr)
	}
	tools := host.Tools()
	fmt.Printf("connected: %d tool(s)%s\n", len(tools), statusLine(host))
	for _, t := range tools {
		fmt.Printf("  %s: %s\n", t.Name, t.InputSchema)
	}

	// Every scenario gets the same generic client: list, then call each
	// tool once, with the arguments the runner's context gives for it, else
	// with arguments made up from its schema. Nothing here depends on the
	// scenario's name.
	calls, err := contextCalls(os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	if err != nil {
		return err
	}
	for _, c := range append(calls, genericCalls(tools, calls)...) {
		if err := call(ctx, host, tools, c); err != nil {
			return err
		}
	}
	return nil
}

// followRedirect is the browser step of a sign-in with nobody at the
// browser: it GETs the authorization URL and returns the query of the
// redirect the authorization server answers with.
func followRedirect(ctx context.Context, p mcpvisor.SignInPrompt) (neturl.Values, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The authorization URL itself, not the one-time start URL on the
	// host's listener: this browser hands the redirect's query back.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.AuthorizationURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := neturl.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode/100 != 3 {
		return nil, fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	fmt.Printf("signed in to %s at %s\n", p.Server, resp.Request.URL.Host)
	return loc.Query(), nil
}

// oauthConfig is the server's oauth configuration: this client's metadata
// document, plus the credentials the runner's context hands out (the
// scenario-specific input the suite requires: pre-registered client
// credentials, a signing key, an identity provider's token, a workload
// assertion). Which grant those credentials are for is configuration a
// user would write; the context's keys say it, except that a client id and
// secret serve both a pre-registered browser sign-in and the client
// credentials grant, told apart by the scenario.
func oauthConfig(scenario, raw string) (*mcpvisor.OAuthConfig, error) {
	// The runner's authorization servers listen on localhost too, on
	// other ports than the MCP server's: allowPrivate covers only the
	// server's own origin.
	cfg := &mcpvisor.OAuthConfig{ClientMetadataURL: clientMetadataURL, AllowPrivate: true}
	if raw == "" {
		return cfg, nil
	}
	var c struct {
		ClientID         string `json:"client_id"`
		ClientSecret     string `json:"client_secret"`
		PrivateKeyPEM    string `json:"private_key_pem"`
		SigningAlg       string `json:"signing_algorithm"`
		IDPClientID      string `json:"idp_client_id"`
		IDPIDToken       string `json:"idp_id_token"`
		IDPTokenEndpoint string `json:"idp_token_endpoint"`
		ValidJWT         string `json:"valid_jwt"`
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	cfg.ClientID, cfg.ClientSecret = c.ClientID, c.ClientSecret
	switch {
	case c.PrivateKeyPEM != "":
		cfg.GrantType, cfg.PrivateKey, cfg.SigningAlg = "client_credentials", c.PrivateKeyPEM, c.SigningAlg
	case c.IDPIDToken != "":
		cfg.GrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
		cfg.IDPTokenEndpoint, cfg.IDPClientID, cfg.IDToken = c.IDPTokenEndpoint, c.IDPClientID, c.IDPIDToken
	case c.ValidJWT != "":
		cfg.GrantType, cfg.Assertion = "urn:ietf:params:oauth:grant-type:jwt-bearer", c.ValidJWT
	case scenario == "auth/client-credentials-basic":
		cfg.GrantType = "client_credentials"
	}
	return cfg, nil
}

// call makes one tool call and prints its result. A refusal by the server
// (a JSON-RPC error, or a tool's own isError) is the server's answer and
// is printed; a failure of the host or the transport fails the run.
func call(ctx context.Context, host *mcpvisor.Host, tools []mcpvisor.Tool, c expectedCall) error {
	name := "mcp__" + serverName + "__" + c.tool
	if !hasTool(tools, name) {
		return fmt.Errorf("tool %s not listed by the server", c.tool)
	}
	start := time.Now()
	res, err := host.Call(ctx, name, json.RawMessage(c.args))
	elapsed := time.Since(start).Round(time.Millisecond)
	var refused *protocol.Error
	if errors.As(err, &refused) {
		fmt.Printf("call %s %s -> refused by the server: %v (%v)\n", c.tool, c.args, err, elapsed)
		return nil
	}
	if err != nil {
		return fmt.Errorf("call %s %s (after %v): %w%s", c.tool, c.args, elapsed, err, statusLine(host))
	}
	fmt.Printf("call %s %s -> %q (isError=%v, %v)\n", c.tool, c.args, res.Wire(), res.IsError, elapsed)
	return nil
}

// contextCalls reads the tool calls the runner asks for in its context
// (MCP_CONFORMANCE_CONTEXT: {"toolCalls":[{"name":…,"arguments":{…}}]}),
// in order.
func contextCalls(raw string) ([]expectedCall, error) {
	if raw == "" {
		return nil, nil
	}
	var ctx struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	var calls []expectedCall
	for _, c := range ctx.ToolCalls {
		args := string(c.Arguments)
		if args == "" {
			args = "{}"
		}
		calls = append(calls, expectedCall{tool: c.Name, args: args})
	}
	return calls, nil
}

// genericCalls is what every scenario gets: each listed tool, called once
// with arguments made up from its input schema, as the runner's own
// reference client does.
func genericCalls(tools []mcpvisor.Tool, given []expectedCall) []expectedCall {
	var calls []expectedCall
	for _, t := range tools {
		if slices.ContainsFunc(given, func(c expectedCall) bool { return c.tool == t.Tool }) {
			continue
		}
		calls = append(calls, expectedCall{tool: t.Tool, args: sampleArgs(t.InputSchema)})
	}
	return calls
}

// sampleArgs builds an arguments object holding every required property of
// an input schema: its default, else its first enum value, else a value of
// its type.
func sampleArgs(schema []byte) string {
	var s struct {
		Properties map[string]struct {
			Type    any               `json:"type"`
			Default json.RawMessage   `json:"default"`
			Enum    []json.RawMessage `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	args := map[string]json.RawMessage{}
	for _, name := range s.Required {
		p := s.Properties[name]
		switch {
		case len(p.Default) > 0:
			args[name] = p.Default
		case len(p.Enum) > 0:
			args[name] = p.Enum[0]
		default:
			typ, _ := p.Type.(string)
			if list, ok := p.Type.([]any); ok && len(list) > 0 {
				typ, _ = list[0].(string)
			}
			args[name] = json.RawMessage(sampleOf(typ))
		}
	}
	out, err := json.Marshal(args)
	if err != nil {
		return "{}"
	}
	return string(out)
}

func sampleOf(typ string) string {
	switch typ {
	case "number", "integer":
		return "1"
	case "boolean":
		return "true"
	case "array":
		return "[]"
	case "object":
		return "{}"
	case "null":
		return "null"
	default:
		return `"test"`
	}
}

func hasTool(tools []mcpvisor.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// statusLine describes the server's state for an error message, e.g.
// " (server state failed: http: transport not yet available)".
func statusLine(host *mcpvisor.Host) string {
	for _, st := range host.Status() {
		if st.Name != serverName {
			continue
		}
		s := fmt.Sprintf(" (server state %v, protocol %q", st.State, st.ProtocolVersion)
		if st.LastError != "" {
			s += ": " + st.LastError
		}
		return s + ")"
	}
	return ""
}

// dumpServerLog copies the server's log file (lifecycle, log messages) to
// stderr, which the runner shows when the client fails.
func dumpServerLog(dataDir string) {
	data, err := os.ReadFile(filepath.Join(dataDir, "logs", serverName+".log"))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "conformance: server log:", err)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "--- %s.log ---\n%s--- end of log ---\n", serverName, data)
}
