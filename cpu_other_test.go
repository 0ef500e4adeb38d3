//go:build !unix

package mcpvisor_test

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
