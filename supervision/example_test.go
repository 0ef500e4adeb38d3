//go:build unix

package supervision_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpvisor/mcpvisor/supervision"
)

func ExampleStartProcess() {
	p, err := supervision.StartProcess(supervision.ProcessSpec{
		Command: "cat",
		Env:     supervision.MergeEnv(supervision.BaseEnv(os.Environ()), map[string]string{"API_KEY": "per-server"}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	io.WriteString(p.Stdin(), `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	line, _ := bufio.NewReader(p.Stdout()).ReadString('\n')
	fmt.Print(line)

	// Close stdin, then SIGTERM, then SIGKILL, to the whole process group.
	if err := p.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println(p.Exit())
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"ping"}
	// exit status 0
}

func ExampleRestarter() {
	r := supervision.NewRestarter(supervision.RestartPolicy{
		InitialInterval:     time.Second,
		RandomizationFactor: -1, // no jitter, for a stable example
		MaxRestarts:         5,
		Window:              time.Minute,
	})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for {
		delay, giveUp := r.Failed(now)
		if giveUp {
			fmt.Println("failed after", r.Restarts(), "restarts")
			break
		}
		fmt.Println("restart in", delay)
		now = now.Add(delay)
	}
	// Output:
	// restart in 1s
	// restart in 2s
	// restart in 4s
	// restart in 8s
	// restart in 16s
	// failed after 5 restarts
}
