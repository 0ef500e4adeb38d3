// Command embed shows mcpvisor embedded in a Go program: open a host on a
// config, wait for a server, list its tools and call one.
//
//	go build -o bin/notes ./examples/servers/notes && go run ./examples/embed
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
}
