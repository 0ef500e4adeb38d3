package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mcpvisor/mcpvisor"
)

// hostContender is mcpvisor embedded: one Host supervising every server,
// called with Host.Call. Over HTTP, every server is an "http" server with
// the same URL (the one echo server) and allowPrivate, for loopback.
type hostContender struct{ http bool }

func (hostContender) name() string { return Mcpvisor }

func (ct hostContender) connect(ctx context.Context, env *Env, n int, _ bool) (client, error) {
	h, err := ct.start(ctx, env, n)
	if err != nil {
		return nil, err
	}
	c := &hostClient{benchHost: h, tools: make([]string, n)}
	for i := range c.tools {
		c.tools[i] = "mcp__" + serverName(i) + "__echo"
	}
	return c, nil
}

// start opens a host of n servers, named serverName(i), with the default
// options, and returns it once every server is ready.
func (ct hostContender) start(ctx context.Context, env *Env, n int) (*benchHost, error) {
	return ct.startWith(ctx, env, n, mcpvisor.Options{})
}

// startWith is start with opts, whose Config it sets.
func (ct hostContender) startWith(ctx context.Context, env *Env, n int, opts mcpvisor.Options) (*benchHost, error) {
	servers := make([]mcpvisor.ServerConfig, n)
	for i := range servers {
		servers[i] = mcpvisor.ServerConfig{Name: serverName(i), Command: env.Server, Enabled: true}
		if ct.http {
			servers[i] = mcpvisor.ServerConfig{Name: serverName(i), Type: "http", URL: env.httpURL, AllowPrivate: true, Enabled: true}
		}
	}
	opts.Config = &mcpvisor.Config{Servers: servers}
	h, err := openHost(ctx, env, opts)
	if err != nil {
		return nil, err
	}
	if err := h.WaitReady(ctx); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// benchHost is a Host with its own data directory, removed by close.
type benchHost struct {
	*mcpvisor.Host
	dataDir string
	cleanup func()
}

// openHost opens a host whose logs go nowhere and whose data directory is
// temporary. Open returns at once; servers start in the background.
func openHost(ctx context.Context, env *Env, opts mcpvisor.Options) (*benchHost, error) {
	dir, cleanup, err := env.tempDir("mcpbench-host-")
	if err != nil {
		return nil, err
	}
	opts.DataDir = dir
	opts.Logger = slog.New(slog.DiscardHandler)
	h, err := mcpvisor.Open(ctx, opts)
	if err != nil {
		cleanup()
		return nil, err
	}
	return &benchHost{Host: h, dataDir: dir, cleanup: cleanup}, nil
}

func (h *benchHost) close() error {
	err := h.Host.Close()
	h.cleanup()
	return err
}

type hostClient struct {
	*benchHost
	tools []string
}

func (c *hostClient) call(ctx context.Context, server int) error {
	return c.callTool(ctx, c.tools[server], echoArgs)
}

// callTool calls tool; a result that is an error is one too.
func (h *benchHost) callTool(ctx context.Context, tool string, args json.RawMessage) error {
	res, err := h.Call(ctx, tool, args)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: tool error: %s", tool, res.Text)
	}
	return nil
}
