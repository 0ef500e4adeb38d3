// Command gosdkproxy is the proxy an embedder of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk v1.8.0) would write to put a stdio
// MCP server behind Streamable HTTP: one client session with the server over
// mcp.CommandTransport, and one mcp.Server that lists the server's tools as
// its own and forwards each call to that session, served by
// mcp.StreamableHTTPHandler with its defaults (a session per client, every
// session sharing the one upstream). It is a contender of the bench's
// gateway-peers scenario.
//
//	gosdkproxy -addr 127.0.0.1:0 -- COMMAND [ARGS...]
//
// It prints the endpoint, http://ADDR/mcp, as its first line once it
// listens and serves until SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "where to listen")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gosdkproxy [-addr ADDR] -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	if err := run(*addr, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "gosdkproxy:", err)
		os.Exit(1)
	}
}

func run(addr string, command []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client := mcp.NewClient(&mcp.Implementation{Name: "gosdkproxy", Version: "1"}, nil)
	upstream, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command[0], command[1:]...)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", command[0], err)
	}
	defer upstream.Close()

	server := mcp.NewServer(&mcp.Implementation{Name: "gosdkproxy", Version: "1"}, nil)
	for tool, err := range upstream.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing tools: %w", err)
		}
		server.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return upstream.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("http://%s/mcp\n", ln.Addr())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
