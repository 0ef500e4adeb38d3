// Package testbin builds the example MCP servers once per test binary, so
// integration tests run real subprocesses built from this repository.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Main builds every package of bins (import path → where to store the
// binary's path) into a temporary directory, runs the tests, checks that
// no goroutine outlived them, removes the binaries and exits.
func Main(m *testing.M, bins map[string]*string) {
	dir, err := os.MkdirTemp("", "mcpvisor-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for pkg, dst := range bins {
		*dst = filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", *dst, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", pkg, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	// Every test closes what it started: nothing may be left running.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}
