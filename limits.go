package mcpvisor

import (
	"github.com/mcpvisor/mcpvisor/internal/configfile"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// ServerLimits bound the resources of a stdio server's processes, all of
// them together: the entry's "limits" object, mcpvisor's own field. Each
// limit is off when absent or 0; none is set by default.
//
//	"limits": {"memory": "512MiB", "cpu": 0.5, "processes": 64}
//
// Where the host runs each server in a cgroup v2 of its own with the
// controllers delegated (ServerStatus.Containment says), they are the
// cgroup's memory.max, cpu.max and pids.max, and a server killed by the
// OOM killer is reported out of memory and restarted by its policy.
// Elsewhere (docs/processes.md):
//
//   - memory is RLIMIT_AS on the server's process, inherited by what it
//     starts: each process's virtual address space on its own, where an
//     allocation past the limit fails rather than the process being
//     killed; runtimes that reserve much address space up front (Node,
//     the JVM, Go) may not start under a low value;
//   - cpu and processes are not enforced (RLIMIT_CPU is a lifetime budget
//     of CPU seconds, not a rate; RLIMIT_NPROC counts every process of the
//     user), and the status says so.
type ServerLimits struct {
	// Memory is in bytes; the file may also give a size with a unit:
	// "512MiB", "2GiB", "64M" (powers of 1024), "1GB" (of 1000).
	Memory int64 `json:"memory,omitempty"`
	// CPU is a number of CPUs' time: 0.5 is half of one.
	CPU float64 `json:"cpu,omitempty"`
	// Processes counts processes and threads.
	Processes int `json:"processes,omitempty"`
}

// runtime is l for the runtime's ServerSpec; nil is no limit.
func (l *ServerLimits) runtime() supervision.Limits {
	return (*configfile.Limits)(l).Runtime()
}
