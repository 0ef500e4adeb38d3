package supervision

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits bound what one server's processes may use. The zero value sets no
// limit; each field is off at zero. How each is enforced depends on the
// containment in force (LimitsEnforcement says which applied):
//
//   - Memory, in bytes. In a cgroup with the memory controller: memory.max,
//     the memory of every process of the server together (page cache
//     included); past it the kernel reclaims, then its OOM killer kills a
//     process of that cgroup only. Without: RLIMIT_AS on the server's
//     process, set right after it is started and inherited by what it
//     starts afterwards: the virtual address space of each process on its
//     own, not of the tree; an allocation past it fails (the process sees
//     ENOMEM) rather than being killed, and runtimes that reserve a large
//     address space up front (Node, the JVM, Go) may not start under a
//     low value.
//   - CPU, in CPUs (0.5 is half of one CPU's time): cpu.max, a rate over
//     every process of the server. Without the cpu controller it is not
//     enforced: RLIMIT_CPU counts CPU seconds and then kills, which is a
//     lifetime budget, not a rate.
//   - Processes, a count of processes and threads: pids.max over the
//     server's cgroup. Without the pids controller it is not enforced:
//     RLIMIT_NPROC counts every process of the user (the host's included)
//     and does not bind root.
type Limits struct {
	Memory    int64
	CPU       float64
	Processes int
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// Validate reports a limit that cannot be enforced as written.
func (l Limits) Validate() error {
	switch {
	case l.Memory < 0:
		return fmt.Errorf("%w: memory %d is negative", ErrInvalidLimits, l.Memory)
	case l.Memory > 0 && l.Memory < MinMemoryLimit:
		return fmt.Errorf("%w: memory %s is under the least, %s", ErrInvalidLimits, FormatBytes(l.Memory), FormatBytes(MinMemoryLimit))
	case l.CPU < 0 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0):
		return fmt.Errorf("%w: cpu %v is not a positive number of CPUs", ErrInvalidLimits, l.CPU)
	case l.CPU > 0 && l.CPU < MinCPULimit:
		return fmt.Errorf("%w: cpu %v is under the least, %v", ErrInvalidLimits, l.CPU, MinCPULimit)
	case l.Processes < 0:
		return fmt.Errorf("%w: processes %d is negative", ErrInvalidLimits, l.Processes)
	}
	return nil
}

// The smallest limits accepted: below them nothing useful starts, and
// cpu.max refuses a quota under 1 ms per 100 ms period.
const (
	MinMemoryLimit = 1 << 20
	MinCPULimit    = 0.01
)

// String reads like "memory 512 MiB, cpu 0.5, processes 64"; "none" when
// nothing is set.
func (l Limits) String() string {
	var parts []string
	if l.Memory > 0 {
		parts = append(parts, "memory "+FormatBytes(l.Memory))
	}
	if l.CPU > 0 {
		parts = append(parts, "cpu "+strconv.FormatFloat(l.CPU, 'g', -1, 64))
	}
	if l.Processes > 0 {
		parts = append(parts, "processes "+strconv.Itoa(l.Processes))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// LimitsEnforcement says how each limit of a started process is enforced:
// "cgroup memory.max", "RLIMIT_AS per process", or "not enforced: ...".
// A limit that is not set has an empty entry.
type LimitsEnforcement struct {
	Memory    string
	CPU       string
	Processes string
}

// Lines are the set limits with how each is enforced, one line each, e.g.
// "memory 512 MiB: cgroup memory.max".
func (e LimitsEnforcement) Lines(l Limits) []string {
	var out []string
	if l.Memory > 0 {
		out = append(out, "memory "+FormatBytes(l.Memory)+": "+e.Memory)
	}
	if l.CPU > 0 {
		out = append(out, "cpu "+strconv.FormatFloat(l.CPU, 'g', -1, 64)+": "+e.CPU)
	}
	if l.Processes > 0 {
		out = append(out, "processes "+strconv.Itoa(l.Processes)+": "+e.Processes)
	}
	return out
}

// How limits are enforced without the cgroup controller for them.
const (
	enforcedRlimitAS    = "RLIMIT_AS per process (virtual address space; an allocation past it fails)"
	notEnforcedCPU      = "not enforced: needs the cgroup v2 cpu controller (RLIMIT_CPU is a lifetime budget of CPU seconds, not a rate)"
	notEnforcedProcs    = "not enforced: needs the cgroup v2 pids controller (RLIMIT_NPROC counts every process of the user)"
	notEnforcedMemoryAS = "not enforced: RLIMIT_AS could not be set"
)

// FormatBytes reads like "512 MiB", "1.5 GiB" or "1000 B".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGTP"[exp]) + "iB"
}

// ParseBytes reads a size: a number of bytes, or a number with a unit,
// "512MiB", "512 MiB", "1.5GiB", "64M" or "2G" (K, M, G and T are powers
// of 1024, as in cgroup files and container runtimes; KB, MB, GB and TB
// powers of 1000).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok || num == "" {
		return 0, fmt.Errorf("%q is not a size (a number of bytes, or with a unit: 512MiB, 2GiB)", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size (a number of bytes, or with a unit: 512MiB, 2GiB)", s)
	}
	b := v * float64(mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(b), nil
}

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}
