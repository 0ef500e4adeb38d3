// Command conformance-server is the MCP server that the official conformance
// runner (@modelcontextprotocol/conformance, server mode) tests: mcpvisor's
// gateway in front of one stdio server, so what the runner checks is the
// gateway's Streamable HTTP transport, handshake and tool routing.
//
//	conformance-server --listen 127.0.0.1:PORT --data DIR -- node .../server-everything/dist/index.js stdio
//
// It opens a Host with the command as one stdio server named "everything",
// always on and without prefix (every session sees its tools and prompts
// under their own names, without calling activate_tools), waits until the
// server is ready, mounts the gateway's Handler at /mcp, prints "listening
// on http://ADDR/mcp" and serves until SIGINT or SIGTERM.
// --protocol-version pins the era the host speaks to the server
// (2025-11-25: legacy; 2026-07-28: modern; default: detected); the --also
// servers' eras are always detected.
//
// It is a test fixture: /mcp has no authentication, so listen on loopback
// only. `mcpvisor serve` is the gateway with a bearer token. See
// conformance/README.md for how `make conformance` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
)

// serverName is the one server's name, and its always-on tool group.
const serverName = "everything"

var noPrefix = false

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve /mcp on (loopback: there is no authentication)")
	data := flag.String("data", "", "data directory (logs, journal); \"\": a temporary one, removed on exit")
	ready := flag.Duration("ready", 60*time.Second, "how long to wait for the server to be ready")
	logLevel := flag.String("log-level", "info", "debug, info, warn or error (logs go to stderr)")
	var also []string
	flag.Func("also", "`NAME=COMMAND` (its arguments split on spaces): one more stdio server, also always on and without prefix (repeatable)", func(v string) error {
		if name, command, ok := strings.Cut(v, "="); !ok || name == "" || strings.TrimSpace(command) == "" {
			return fmt.Errorf("want NAME=COMMAND, got %q", v)
		}
		also = append(also, v)
		return nil
	})
	inputTimeout := flag.Duration("input-timeout", gateway.DefaultInputTimeout, "how long a call bridged to a modern client waits for its retry")
	version := flag.String("protocol-version", "", "the revision to speak to the server (not the --also ones): \"\" detects its era; 2025-11-25 (legacy) or 2026-07-28 (modern) pins it")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: conformance-server [flags] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-server:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger, *listen, *data, *version, *ready, *inputTimeout, flag.Args(), also); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-server:", err)
		os.Exit(1)
	}
}

// run serves the gateway until ctx is cancelled, then shuts down the HTTP
// server, the gateway and the host, in that order.
func run(ctx context.Context, logger *slog.Logger, listen, dataDir, version string, ready, inputTimeout time.Duration, command, also []string) error {
	if dataDir == "" {
		dir, err := os.MkdirTemp("", "mcpvisor-conformance-server-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dataDir = dir
	}
	cfg := &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{
		Name:           serverName,
		Type:           "stdio",
		Command:        command[0],
		Args:           command[1:],
		Enabled:        true,
		StartupTimeout: mcpvisor.Duration(ready),
		// Transparent: the server's tools and prompts keep their names.
		Prefix:          &noPrefix,
		ProtocolVersion: version,
		// The server logs everything to the host; each session gets what
		// its logging/setLevel asks for.
		LogLevel: "debug",
	}}}
	names := []string{serverName}
	for _, a := range also {
		name, command, _ := strings.Cut(a, "=")
		argv := strings.Fields(command)
		cfg.Servers = append(cfg.Servers, mcpvisor.ServerConfig{
			Name: name, Type: "stdio", Command: argv[0], Args: argv[1:], Enabled: true,
			StartupTimeout: mcpvisor.Duration(ready), Prefix: &noPrefix,
		})
		names = append(names, name)
	}
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{
		Config:   cfg,
		DataDir:  dataDir,
		Logger:   logger,
		AlwaysOn: names,
		// As mcpvisor serve: elicitations and sampling reach the client
		// whose call they belong to.
		Inbox: true, CallSampling: true, CallRoots: true,
	})
	if err != nil {
		return err
	}
	defer h.Close()
	readyCtx, cancel := context.WithTimeout(ctx, ready)
	err = h.WaitReady(readyCtx, names...)
	cancel()
	if err != nil {
		return fmt.Errorf("servers not ready: %w", err)
	}

	g := gateway.New(h, gateway.Options{Logger: logger, InputTimeout: inputTimeout})
	defer g.Close()

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		// GET streams stay open until the gateway ends them: close it
		// first so Shutdown does not wait out its whole bound on them.
		_ = g.Close()
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(shutCtx)
		cancel()
		<-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
