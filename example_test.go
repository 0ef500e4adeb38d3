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

// A stage of the call pipeline, here one that refuses a tool by policy and
// counts the calls it lets through. It sees every call: Host.Call, a
// session's, the gateway's and the sidecar's.
func ExampleCallMiddleware() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mcpvisor-example-")
	defer os.RemoveAll(dir)

	passed := 0
	policy := func(next mcpvisor.CallFunc) mcpvisor.CallFunc {
		return func(ctx context.Context, c *mcpvisor.Call) (*mcpvisor.Result, error) {
			if c.Server == "notes" && c.Name == "note_delete" {
				return &mcpvisor.Result{Type: mcpvisor.ResultString, Text: "deleting notes is not allowed here", IsError: true}, nil
			}
			passed++
			return next(ctx, c)
		}
	}
	host, err := mcpvisor.Open(ctx, mcpvisor.Options{
		Config:         &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{{Name: "notes", Command: bin.notes, Enabled: true}}},
		DataDir:        dir,
		Logger:         slog.New(slog.DiscardHandler),
		CallMiddleware: []mcpvisor.CallMiddleware{policy},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer host.Close()

	res, _ := host.Call(ctx, "mcp__notes__note_delete", json.RawMessage(`{"key":"a"}`))
	fmt.Println(res.IsError, res.Wire())
	res, _ = host.Call(ctx, "mcp__notes__add", json.RawMessage(`{"a":2,"b":40}`))
	fmt.Println(res.Wire(), passed)
	// Output:
	// true deleting notes is not allowed here
	// 42 1
}
