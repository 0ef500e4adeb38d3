package config

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpvisor/mcpvisor/supervision"
)

// Limits bound the resources of a stdio server's processes, all of
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
type Limits struct {
	// Memory is in bytes; the file may also give a size with a unit:
	// "512MiB", "2GiB", "64M" (powers of 1024), "1GB" (of 1000).
	Memory int64 `json:"memory,omitempty"`
	// CPU is a number of CPUs' time: 0.5 is half of one.
	CPU float64 `json:"cpu,omitempty"`
	// Processes counts processes and threads.
	Processes int `json:"processes,omitempty"`
}

// decodeLimits decodes "limits". A key it does not know is an error, not a
// warning: a misspelt limit silently not enforced is worse than a server
// that does not start.
func decodeLimits(sc *Server, m jsonMember) (*Limits, []*Error) {
	if kind := jsonKind(m.value); kind != "an object" {
		return nil, []*Error{sc.errorf(m.key, "want an object (memory, cpu, processes), got %s", kind)}
	}
	l := &Limits{}
	var errs []*Error
	seen := map[string]bool{}
	for _, f := range objectMembers(m.value) {
		field := m.key + "." + f.key
		if seen[f.key] {
			errs = append(errs, sc.errorf(m.key, "key %q is given more than once", f.key))
			continue
		}
		seen[f.key] = true
		v := bytes.TrimSpace(f.value)
		switch f.key {
		case "memory":
			var err error
			switch jsonKind(v) {
			case "a number":
				l.Memory, err = supervision.ParseBytes(string(v))
			case "a string":
				var s string
				_ = json.Unmarshal(v, &s)
				l.Memory, err = supervision.ParseBytes(s)
			default:
				errs = append(errs, sc.errorf(field, "want a size (a number of bytes, or a string such as \"512MiB\"), got %s", jsonKind(v)))
				continue
			}
			if err != nil {
				errs = append(errs, sc.errorf(field, "%v", err))
			}
		case "cpu":
			n, err := strconv.ParseFloat(string(v), 64)
			if jsonKind(v) != "a number" || err != nil {
				errs = append(errs, sc.errorf(field, "want a number of CPUs such as 0.5, got %s", jsonKind(v)))
				continue
			}
			l.CPU = n
		case "processes":
			if err := decodeIntField(sc, jsonMember{field, v}, &l.Processes); err != nil {
				errs = append(errs, err)
			}
		default:
			errs = append(errs, sc.errorf(field, `unknown limit (want "memory", "cpu" or "processes")`))
		}
	}
	return l, errs
}

// validateLimits reports limits that cannot be enforced as written.
func (c Server) validateLimits() []*Error {
	if c.Limits == nil {
		return nil
	}
	if err := c.Limits.runtime().Validate(); err != nil {
		return []*Error{c.errorf("limits", "%v", err)}
	}
	return nil
}

// runtime is l as supervision enforces it; nil is no limit.
func (l *Limits) runtime() supervision.Limits {
	if l == nil {
		return supervision.Limits{}
	}
	return supervision.Limits(*l)
}
