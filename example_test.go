package mcpvisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/mcpvisor/mcpvisor"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mcpvisor-example-")
	defer os.RemoveAll(dir)

	host, err := mcpvisor.Open(ctx, mcpvisor.Options{
		Config:  &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{Name: "notes", Command: bin.notes, Enabled: true}}},
		DataDir: dir,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()

	res, err := host.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a":2,"b":40}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Type, res.Wire())
	// Output: string 42
}
