// Command embed shows mcpvisor embedded in a Go program: open a host on a
// config, wait for a server, list its tools and call one, then do the same
// as a model's session would: activate the server's tool group first.
//
//	make consumer
//
// builds and runs it as a module of its own, against a module zip of
// mcpvisor (see README.md).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	notes := os.Getenv("NOTES_BIN")
	if notes == "" {
		notes = "bin/notes"
	}
	cfg := &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{
		Name:    "notes",
		Type:    "stdio",
		Command: notes,
		Enabled: true,
	}}}
	host, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: os.TempDir() + "/mcpvisor-embed"})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	if err := host.WaitReady(ctx, "notes"); err != nil {
		log.Fatal(err)
	}
	for _, t := range host.Tools() {
		fmt.Printf("%-24s destructive=%v\n", t.Name, t.Destructive)
	}
	res, err := host.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a": 2, "b": 40}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("2 + 40 =", res.Wire())

	// A model's session sees only the groups it activated (lazy loading);
	// the grant is durable, and survives a restart of the host.
	chat := host.Session("chat-1", "")
	fmt.Print(chat.Catalog()) // the "MCP servers" block for its system prompt
	if err := chat.Activate(ctx, "notes"); err != nil {
		log.Fatal(err)
	}
	res, err = chat.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a": 1, "b": 1}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("session sees %d tool(s); 1 + 1 = %s\n", len(chat.Tools()), res.Wire())
	if err := chat.End(ctx); err != nil { // the session is over: its grants go
		log.Fatal(err)
	}
}
