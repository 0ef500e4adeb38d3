// Command upstream opens an mcpvisor Host and, in the same process, spawns
// an actor of upstream protoactor-go and asks it a question. Both register
// their protobuf files in the process-wide registry at init: this program
// exits 0 only if they did so without a conflict, which protobuf-go's
// default policy turns into a panic before main runs.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/mcpvisor/mcpvisor"
	"google.golang.org/protobuf/reflect/protoregistry"
)

func main() {
	log.SetFlags(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Both copies must really be linked, or this proves nothing.
	for _, path := range []string{"actor.proto", "mcpvisor/protoactor/actor.proto"} {
		if _, err := protoregistry.GlobalFiles.FindFileByPath(path); err != nil {
			log.Fatalf("%s is not registered: %v", path, err)
		}
	}

	dataDir, err := os.MkdirTemp("", "mcpvisor-upstream-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dataDir)
	host, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: &mcpvisor.Config{}, DataDir: dataDir})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()

	system := actor.NewActorSystem()
	defer system.Shutdown()
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if q, ok := c.Message().(string); ok {
			c.Respond("pong: " + q)
		}
	}))
	reply, err := system.Root.RequestFuture(pid, "ping", 5*time.Second).Result()
	if err != nil {
		log.Fatal(err)
	}
	if reply != "pong: ping" {
		log.Fatalf("reply = %v, want pong: ping", reply)
	}
	fmt.Printf("upstream actor replied %q beside an mcpvisor host with %d tools\n", reply, len(host.Tools()))
}
