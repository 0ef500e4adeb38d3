// Command notes is a small, well-behaved MCP stdio server: arithmetic tools
// and an in-memory note store (persisted to the file named by NOTES_FILE, if
// set). It is a demo peer for mcpvisor and a reference for how a polite
// server behaves. See README.md.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

const version = "1.0.0"

func main() {
	store, err := openStore(os.Getenv("NOTES_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "notes:", err)
		os.Exit(1)
	}
	srv := mcpserve.New(mcpserve.Options{
		Name:         "notes",
		Title:        "Notes",
		Version:      version,
		Instructions: "Arithmetic (add, multiply, divide) and a key/value note store (note_put, note_get, note_list, note_delete).",
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	for _, t := range tools(store) {
		srv.AddTool(t)
	}
	where := "in memory"
	if store.path != "" {
		where = "in " + store.path
	}
	fmt.Fprintf(os.Stderr, "notes %s: MCP stdio server ready, %d notes kept %s\n", version, store.len(), where)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "notes:", err)
		os.Exit(1)
	}
}
