//go:build !unix

package main

import (
	"io"
	"os"
	"sync/atomic"
)

// gateStdin is os.Stdin here: a read blocked when the server stops reading
// may still take one more line.
func gateStdin(*atomic.Bool) io.Reader { return os.Stdin }
