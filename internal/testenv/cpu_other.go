//go:build !unix

package testenv

import "time"

// ProcessCPU is not told here.
func ProcessCPU() (time.Duration, bool) { return 0, false }
