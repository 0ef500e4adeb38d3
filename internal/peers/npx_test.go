package peers_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peers"
)

// TestNPX runs a reference server as a config file names it, through the
// npx stand-in: it answers initialize and lists its tools.
func TestNPX(t *testing.T) {
	npx := filepath.Join(peers.NPX(t), "npx")
	cmd := exec.Command(npx, "-y", "@modelcontextprotocol/server-sequential-thinking@latest")
	cmd.Stdin = strings.NewReader(initialize + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // stdin's end stops the server
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v; stderr: %s", err, stderr.String())
		}
	case <-time.After(peers.ReadyTimeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the server did not exit at the end of its input; stderr: %s", stderr.String())
	}
	var tools []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not JSON-RPC on stdout: %q", sc.Text())
		}
		for _, tl := range r.Result.Tools {
			tools = append(tools, tl.Name)
		}
	}
	if len(tools) != 1 || tools[0] != "sequentialthinking" {
		t.Errorf("tools = %q, want [sequentialthinking]", tools)
	}

	out, err := exec.Command(npx, "-y", "left-pad").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 127 || !strings.Contains(string(out), "left-pad is not one of the reference servers") {
		t.Errorf("npx left-pad: %v, %q; want exit 127 naming the package", err, out)
	}
}
