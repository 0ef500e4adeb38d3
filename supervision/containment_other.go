//go:build !linux

package supervision

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Outside Linux there are no cgroups, no CLONE_INTO_CGROUP and no /proc to
// find marked processes in: a Cell is the process group alone, and limits
// are not enforced.

type cgroupTree struct{ root, path string }

func newCgroupTree(any) (*cgroupTree, string) { return nil, "cgroups are Linux only" }

func (*cgroupTree) newCell(string, Limits) (*cgroupCell, LimitsEnforcement, error) {
	return nil, LimitsEnforcement{}, errors.ErrUnsupported
}

func (*cgroupTree) close() error { return nil }

type cgroupCell struct{ dir string }

func (*cgroupCell) remove() error { return nil }

func (c *Cell) prepare(*syscall.SysProcAttr) (func(), error) { return func() {}, nil }
func (c *Cell) unprepare(*syscall.SysProcAttr)               {}
func cloneRefused(error) bool                                { return false }

func (c *Cell) started(pid int, _ bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.placement.PGID = pid
	const not = "not enforced: resource limits need Linux"
	if c.limits.Memory > 0 {
		c.enforced.Memory = not
	}
	if c.limits.CPU > 0 {
		c.enforced.CPU = not
	}
	if c.limits.Processes > 0 {
		c.enforced.Processes = not
	}
}

func (c *Cell) signal(syscall.Signal)           {}
func (c *Cell) running() bool                   { return false }
func (c *Cell) release(time.Duration) error     { return nil }
func (c *Cell) outOfMemory(ExitInfo, bool) bool { return false }
func bootID() string                            { return "" }

func reclaim(ps []Placement) []Reclaimed {
	out := make([]Reclaimed, len(ps))
	for i, p := range ps {
		if p.PGID > 0 {
			// No start times to tell a recycled group id from the one
			// recorded: nothing is signalled.
			out[i].Err = fmt.Errorf("%w: reclaiming process group %d needs Linux", errors.ErrUnsupported, p.PGID)
		}
	}
	return out
}
