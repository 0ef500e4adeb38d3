package supervision

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContainmentMode names how a server's processes are held together, so that
// stopping the server, or the next start of a host that crashed, takes all
// of them.
type ContainmentMode string

const (
	// ContainCgroup: each server runs in a cgroup v2 of its own, under a
	// subtree the host creates in its own cgroup. The child is cloned
	// straight into it (CLONE_INTO_CGROUP), so nothing it starts is ever
	// outside; stopping the server kills the whole cgroup (cgroup.kill),
	// processes that called setsid or double-forked included.
	ContainCgroup ContainmentMode = "cgroup"
	// ContainProcessGroup: each server leads a process group of its own,
	// and its processes carry a marker in their environment (EnvMarker).
	// Stopping the server signals the group and every process that carries
	// the marker; a process that both leaves the group (setsid) and clears
	// its environment escapes.
	ContainProcessGroup ContainmentMode = "process-group"
)

// EnvContainment in the host's environment, set to "process-group", forces
// the process-group fallback as ContainmentOptions.ProcessGroupsOnly does
// (for tests, and hosts whose cgroup must not be touched).
const EnvContainment = "MCPVISOR_CONTAINMENT"

// EnvMarker is set in the environment of every server started in a Cell:
// its value, unique to the incarnation, is how the processes it leaves are
// recognised when they are no longer in its process group.
const EnvMarker = "MCPVISOR_CELL"

// ContainmentOptions configure NewContainment. The zero value uses a cgroup
// where one can be created, process groups otherwise.
type ContainmentOptions struct {
	// ProcessGroupsOnly never uses cgroups.
	ProcessGroupsOnly bool
	// Logger receives what was decided and why (the fallback's reason, the
	// host moved into a leaf cgroup). nil: discarded.
	Logger *slog.Logger
}

// Containment is a host's way of holding its servers: a cgroup v2 subtree
// when the host may create one (Linux, a writable cgroup2 hierarchy: the
// host runs as root, as a systemd service with Delegate=yes, or in a
// container with cgroup delegation), process groups otherwise. It hands out
// one Cell per process started. Its methods are safe for concurrent use.
type Containment struct {
	mode     ContainmentMode
	fallback string      // why process groups, when they are the mode
	tree     *cgroupTree // nil: process groups
	logger   *slog.Logger
	token    string // random: the prefix of every cell's marker
	seq      atomic.Uint64

	mu     sync.Mutex
	closed bool
}

// NewContainment finds out which containment is possible and prepares it:
// in cgroup mode it creates the host's subtree, a child of the cgroup the
// host runs in, named mcpvisor-<random>. It never fails: what cannot be
// had falls back to process groups, with the reason in Fallback. Close
// removes the subtree.
func NewContainment(opts ContainmentOptions) *Containment {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Containment{mode: ContainProcessGroup, logger: logger, token: randomHex(8)}
	switch {
	case opts.ProcessGroupsOnly:
		c.fallback = "process groups were asked for"
	case strings.EqualFold(os.Getenv(EnvContainment), string(ContainProcessGroup)):
		c.fallback = EnvContainment + "=" + string(ContainProcessGroup) + " is set"
	default:
		tree, why := newCgroupTree(logger)
		if tree == nil {
			c.fallback = why
			break
		}
		c.mode, c.tree = ContainCgroup, tree
		kin.addRoot(tree.path)
	}
	if c.mode == ContainProcessGroup {
		logger.Info("servers contained by process groups", "reason", c.fallback)
	} else {
		logger.Info("servers contained by cgroups", "cgroup", c.tree.root)
	}
	return c
}

// Mode is the containment in force for the cells handed out from now on.
func (c *Containment) Mode() ContainmentMode { return c.mode }

// Fallback says why servers are held by process groups; "" in cgroup mode.
func (c *Containment) Fallback() string { return c.fallback }

// Root is the host's cgroup subtree, a directory under the cgroup2 mount;
// "" with process groups.
func (c *Containment) Root() string {
	if c.tree == nil {
		return ""
	}
	return c.tree.root
}

// NewCell prepares the containment of one process about to be started for
// the server name, with limits: in cgroup mode a cgroup of its own under
// the host's subtree, with the limits written to it. It fails only for
// limits that do not validate; a cgroup that cannot be created leaves the
// cell to process groups, with the reason in Cell.Fallback. Pass the cell
// in ProcessSpec.Cell; the Process then owns it (StartProcess releases it
// if the start fails, Stop once everything in it is gone). A cell that is
// never passed to StartProcess must be released with Discard.
func (c *Containment) NewCell(name string, limits Limits) (*Cell, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	n := c.seq.Add(1)
	cell := &Cell{
		name:     name,
		marker:   c.token + "-" + strconv.FormatUint(n, 10) + "-" + randomHex(4),
		limits:   limits,
		mode:     ContainProcessGroup,
		fallback: c.fallback,
		logger:   c.logger,
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if c.tree != nil && !closed {
		cg, enforced, err := c.tree.newCell(cellName(name, n), limits)
		if err != nil {
			cell.fallback = err.Error()
			c.logger.Warn("server contained by its process group only", "server", name, "reason", err)
		} else {
			cell.cgroup, cell.enforced, cell.mode, cell.fallback = cg, enforced, ContainCgroup, ""
		}
	}
	cell.placement = Placement{Mode: cell.mode, Marker: cell.marker, BootID: bootID()}
	if cell.cgroup != nil {
		cell.placement.Cgroup = cell.cgroup.dir
	}
	return cell, nil
}

// Close kills whatever is still running in the host's subtree (nothing,
// once every Process was stopped) and removes it. Cells handed out later
// are process-group cells. Idempotent.
func (c *Containment) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	if c.tree == nil {
		return nil
	}
	err := c.tree.close()
	kin.removeRoot(c.tree.path)
	return err
}

// cellName is the cgroup directory name of a server's incarnation n:
// "srv-" keeps it clear of the interface files' names (memory.max), and
// only [A-Za-z0-9_-] of the server's name are kept.
func cellName(server string, n uint64) string {
	var b strings.Builder
	b.WriteString("srv-")
	for _, r := range server {
		if b.Len() >= 68 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	b.WriteString("-" + strconv.FormatUint(n, 10))
	return b.String()
}

// Cell holds one started process and everything it starts: a cgroup of its
// own, or its process group and its environment marker. Its methods are
// safe for concurrent use.
type Cell struct {
	name     string
	marker   string
	limits   Limits
	logger   *slog.Logger
	mode     ContainmentMode
	fallback string
	cgroup   *cgroupCell // nil: process group only
	enforced LimitsEnforcement

	mu        sync.Mutex
	placement Placement
	marked    map[int]uint64 // process-group mode: marked processes found by the last signal → start time
}

// Mode is how this cell holds its processes.
func (c *Cell) Mode() ContainmentMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode
}

// Fallback says why this cell is not a cgroup; "" when it is one.
func (c *Cell) Fallback() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fallback
}

// Limits are the limits the cell was made with.
func (c *Cell) Limits() Limits { return c.limits }

// Enforcement says how each limit is enforced; complete once the process
// has started (the rlimit fallback is set then).
func (c *Cell) Enforcement() LimitsEnforcement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enforced
}

// Placement is what a host journals to find the cell's processes after a
// crash: before the start, its cgroup and marker; after, its process group
// too.
func (c *Cell) Placement() Placement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.placement
}

// Discard releases a cell that was never started: it removes its cgroup.
func (c *Cell) Discard() {
	if c.cgroup != nil {
		_ = c.cgroup.remove()
	}
}

// Placement locates what one server incarnation runs, in terms that stay
// valid after the host that started it died: enough for Reclaim to find
// and kill every process it left, and nothing else.
type Placement struct {
	Mode ContainmentMode
	// Cgroup is the cell's cgroup directory, absolute; "" in process-group
	// mode.
	Cgroup string
	// Marker is EnvMarker's value in the processes' environment.
	Marker string
	// PGID is the process group the server led (its pid); 0 before start.
	PGID int
	// LeaderStart is the leader's start time, in clock ticks after boot
	// (field 22 of /proc/<pid>/stat): every member of its group started at
	// or after it, which a recycled group id does not.
	LeaderStart uint64
	// Session is the session of the group; a recycled group id in another
	// session is not ours.
	Session int
	// BootID is the kernel's boot id: after a reboot nothing is left.
	BootID string
}

// String reads like "cgroup /sys/fs/cgroup/x" or "process group 4242".
func (p Placement) String() string {
	if p.Cgroup != "" {
		return "cgroup " + p.Cgroup
	}
	if p.PGID > 0 {
		return fmt.Sprintf("process group %d", p.PGID)
	}
	return "marker " + p.Marker
}

// Reclaimed is what Reclaim did for one Placement.
type Reclaimed struct {
	// Killed counts the processes it killed.
	Killed int
	// Err: what it could not do. ErrGroupSurvived when some outlived
	// SIGKILL (try again later); ErrInvalidPlacement for a cgroup that is
	// not one a Containment made, so a corrupt record kills nothing.
	Err error
}

// Reclaim kills every process that dead hosts' servers left at ps, waits,
// bounded, until they are gone, and removes their cgroups: one result per
// placement, in order. A process counts as a placement's if it is in its
// cgroup (a directory mcpvisor-*/srv-* on a cgroup2 mount, or nothing is
// killed), or carries its marker in its environment, or is in its process
// group and session and started no earlier than its leader; on another
// boot nothing does, and a process of a live server of this process never
// does. It reads /proc once whatever the number of placements. Call it
// before starting the servers that replace them.
func Reclaim(ps ...Placement) []Reclaimed { return reclaim(ps) }

// randomHex returns 2n hex digits from crypto/rand.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
