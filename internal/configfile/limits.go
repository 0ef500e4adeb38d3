package configfile

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mcpvisor/mcpvisor/supervision"
)

// Limits is a stdio server's "limits" object, mcpvisor's own field: bounds
// on the resources of the server's processes, each off when absent or 0.
//
//	"limits": {"memory": "512MiB", "cpu": 0.5, "processes": 64}
//
// "memory" is a number of bytes or a size with a unit (supervision.ParseBytes),
// "cpu" a number of CPUs, "processes" a count of processes and threads. How
// each is enforced, and what the fallbacks without cgroup controllers
// really limit, is supervision.Limits'.
type Limits struct {
	Memory    int64   `json:"memory,omitempty"`
	CPU       float64 `json:"cpu,omitempty"`
	Processes int     `json:"processes,omitempty"`
}

// Runtime is l for the runtime; nil is no limit.
func (l *Limits) Runtime() supervision.Limits {
	if l == nil {
		return supervision.Limits{}
	}
	return supervision.Limits(*l)
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
	if err := c.Limits.Runtime().Validate(); err != nil {
		return []*Error{c.errorf("limits", "%v", err)}
	}
	return nil
}
