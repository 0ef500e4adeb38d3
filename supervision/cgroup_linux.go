package supervision

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The cgroup v2 side of containment: finding the hierarchy, the host's
// subtree, one cgroup per server incarnation, limits, and killing.

const cgroup2Magic = 0x63677270 // CGROUP2_SUPER_MAGIC

// cpuPeriod is the cpu.max period, in microseconds (the kernel's default).
const cpuPeriod = 100_000

// hostLeaf is the cgroup the host moves itself into when its own cgroup
// must hold no processes ("no internal processes": a cgroup that enables
// controllers for its children may not have processes of its own).
const hostLeaf = "mcpvisor-host"

// cgroupTree is the host's subtree: parent is the cgroup the host runs in,
// root the directory created under it, each server's cell a child of root.
type cgroupTree struct {
	mount  string // the cgroup2 mount point
	parent string
	root   string
	path   string // root as /proc/<pid>/cgroup names it
	kill   bool   // cgroup.kill exists (Linux 5.14)
	logger *slog.Logger

	mu      sync.Mutex
	enabled map[string]error // controller → nil once enabled for root's children, else why not
}

// newCgroupTree creates the host's subtree under its own cgroup, or says
// why it cannot.
func newCgroupTree(logger *slog.Logger) (*cgroupTree, string) {
	parent, mount, own, err := ownCgroupDir()
	if err != nil {
		return nil, err.Error()
	}
	name := "mcpvisor-" + randomHex(6)
	root := filepath.Join(parent, name)
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, fmt.Sprintf("cannot create a cgroup in %s (%v): not delegated to this host", parent, unwrapPath(err))
	}
	t := &cgroupTree{mount: mount, parent: parent, root: root, path: path.Join(own, name), logger: logger, enabled: map[string]error{}}
	_, err = os.Stat(filepath.Join(root, "cgroup.kill"))
	t.kill = err == nil
	return t, ""
}

// ownCgroupDir finds the cgroup2 mount (/proc/self/mountinfo) and the
// host's own cgroup in it (/proc/self/cgroup, the "0::" line).
func ownCgroupDir() (dir, mount, own string, err error) {
	own, err = ownCgroupPath()
	if err != nil {
		return "", "", "", err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", "", fmt.Errorf("no cgroup v2: %v", unwrapPath(err))
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 1 || qf[0] != "cgroup2" {
			continue
		}
		root, point := unescapeMount(pf[3]), unescapeMount(pf[4])
		rel := own
		if root != "/" {
			if own != root && !strings.HasPrefix(own, root+"/") {
				continue // a bind mount of some other subtree
			}
			rel = strings.TrimPrefix(own, root)
		}
		return filepath.Join(point, rel), point, own, nil
	}
	return "", "", "", errors.New("no cgroup v2 hierarchy is mounted")
}

// ownCgroupPath is the host's cgroup v2 path, from /proc/self/cgroup.
func ownCgroupPath() (string, error) {
	p, err := cgroupOf("self")
	if err != nil {
		return "", fmt.Errorf("no cgroup v2: %v", unwrapPath(err))
	}
	if p == "" {
		return "", errors.New("the host is in no cgroup v2 (cgroup v1 only)")
	}
	if strings.HasSuffix(p, " (deleted)") || !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("the host's cgroup %q is not usable", p)
	}
	return p, nil
}

// cgroupOf is the cgroup v2 path of a process ("self" or a pid), as
// /proc/<pid>/cgroup names it; "" when it has none.
func cgroupOf(pid string) (string, error) {
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			return p, nil
		}
	}
	return "", nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// controllerFiles maps a controller to the limit it enforces.
var limitControllers = []struct {
	name string
	set  func(Limits) bool
}{
	{"memory", func(l Limits) bool { return l.Memory > 0 }},
	{"cpu", func(l Limits) bool { return l.CPU > 0 }},
	{"pids", func(l Limits) bool { return l.Processes > 0 }},
}

// newCell creates the cgroup of one incarnation with limits written, and
// says how each limit is enforced (the rlimit fallback is decided at start).
func (t *cgroupTree) newCell(name string, l Limits) (*cgroupCell, LimitsEnforcement, error) {
	var want []string
	for _, c := range limitControllers {
		if c.set(l) {
			want = append(want, c.name)
		}
	}
	missing := t.enable(want)
	dir := filepath.Join(t.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, LimitsEnforcement{}, fmt.Errorf("cannot create cgroup %s: %v", dir, unwrapPath(err))
	}
	cell := &cgroupCell{dir: dir, kill: t.kill}
	var e LimitsEnforcement
	fail := func(err error) (*cgroupCell, LimitsEnforcement, error) {
		_ = cell.remove()
		return nil, LimitsEnforcement{}, err
	}
	if l.Memory > 0 {
		if _, ok := missing["memory"]; !ok { // else RLIMIT_AS at start

			if err := cell.write("memory.max", strconv.FormatInt(l.Memory, 10)); err != nil {
				return fail(err)
			}
			// The OOM killer takes the whole server at once: a wrapper
			// whose child alone was killed is half a server.
			_ = cell.write("memory.oom.group", "1")
			e.Memory = "cgroup memory.max"
		}
	}
	if l.CPU > 0 {
		if why, ok := missing["cpu"]; ok {
			e.CPU = notEnforcedCPU + " (" + why + ")"
		} else {
			quota := max(int64(l.CPU*cpuPeriod), 1000)
			if err := cell.write("cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriod)); err != nil {
				return fail(err)
			}
			e.CPU = "cgroup cpu.max"
		}
	}
	if l.Processes > 0 {
		if why, ok := missing["pids"]; ok {
			e.Processes = notEnforcedProcs + " (" + why + ")"
		} else {
			if err := cell.write("pids.max", strconv.Itoa(l.Processes)); err != nil {
				return fail(err)
			}
			e.Processes = "cgroup pids.max"
		}
	}
	return cell, e, nil
}

// enable makes the controllers of want available to root's children, and
// returns those it could not, each with the reason. It tries each
// controller once.
func (t *cgroupTree) enable(want []string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	missing := map[string]string{}
	for _, c := range want {
		err, tried := t.enabled[c]
		if !tried {
			err = t.enableOne(c)
			t.enabled[c] = err
			if err != nil {
				t.logger.Warn("cgroup controller unavailable; its limits fall back", "controller", c, "reason", err)
			}
		}
		if err != nil {
			missing[c] = err.Error()
		}
	}
	return missing
}

func (t *cgroupTree) enableOne(c string) error {
	if !hasController(filepath.Join(t.parent, "cgroup.controllers"), c) {
		return fmt.Errorf("the %s controller is not available in cgroup %s", c, t.parent)
	}
	if !hasController(filepath.Join(t.root, "cgroup.controllers"), c) {
		err := writeFile(filepath.Join(t.parent, "cgroup.subtree_control"), "+"+c)
		if errors.Is(err, syscall.EBUSY) && t.moveHostToLeaf() {
			err = writeFile(filepath.Join(t.parent, "cgroup.subtree_control"), "+"+c)
		}
		if err != nil {
			return fmt.Errorf("cannot enable the %s controller in %s: %v", c, t.parent, err)
		}
	}
	if err := writeFile(filepath.Join(t.root, "cgroup.subtree_control"), "+"+c); err != nil {
		return fmt.Errorf("cannot enable the %s controller in %s: %v", c, t.root, err)
	}
	return nil
}

// moveHostToLeaf moves the host into parent/mcpvisor-host, so parent holds
// no processes and may enable controllers for its children (cgroup v2's
// "no internal processes" rule; how a systemd service with Delegate=yes is
// meant to use its cgroup). Only when the host is alone in parent: other
// processes there would keep the rule broken, and they are not the host's
// to move.
func (t *cgroupTree) moveHostToLeaf() bool {
	procs, err := readPids(filepath.Join(t.parent, "cgroup.procs"))
	if err != nil || len(procs) != 1 || procs[0] != os.Getpid() {
		return false
	}
	leaf := filepath.Join(t.parent, hostLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return false
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		return false
	}
	t.logger.Info("host moved into a leaf cgroup so its servers' cgroups can have controllers", "cgroup", leaf)
	return true
}

// close kills what is left in the subtree and removes it.
func (t *cgroupTree) close() error {
	entries, _ := os.ReadDir(t.root)
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			c := &cgroupCell{dir: filepath.Join(t.root, e.Name()), kill: t.kill}
			if _, err := c.killAndRemove(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(t.root); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("removing cgroup %s: %w", t.root, err))
	}
	return errors.Join(errs...)
}

// cgroupCell is one incarnation's cgroup.
type cgroupCell struct {
	dir  string
	kill bool
}

// open returns the directory for CLONE_INTO_CGROUP.
func (c *cgroupCell) open() (*os.File, error) {
	return os.OpenFile(c.dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
}

// adopt moves pid into the cell (kernels without CLONE_INTO_CGROUP).
func (c *cgroupCell) adopt(pid int) error {
	return writeFile(filepath.Join(c.dir, "cgroup.procs"), strconv.Itoa(pid))
}

func (c *cgroupCell) write(file, value string) error {
	if err := writeFile(filepath.Join(c.dir, file), value); err != nil {
		return fmt.Errorf("cgroup %s: writing %s: %w", c.dir, file, err)
	}
	return nil
}

// pids lists the processes in the cell (zombies are not).
func (c *cgroupCell) pids() []int {
	pids, _ := readPids(filepath.Join(c.dir, "cgroup.procs"))
	return pids
}

// populated reports whether a live process is in the cell.
func (c *cgroupCell) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // unreadable: assume so
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// signal sends sig to every process in the cell; SIGKILL through
// cgroup.kill, which the kernel applies to the whole cgroup at once, new
// forks included.
func (c *cgroupCell) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL && c.kill {
		if err := writeFile(filepath.Join(c.dir, "cgroup.kill"), "1"); err == nil {
			return
		}
	}
	for _, pid := range c.pids() {
		_ = syscall.Kill(pid, sig)
	}
}

// oomKills reads the OOM killer's count in the cell (memory.events).
func (c *cgroupCell) oomKills() uint64 {
	b, err := os.ReadFile(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}

// killAndRemove kills everything in the cell, waits up to d until it is
// empty, and removes it. It returns how many processes were in it.
func (c *cgroupCell) killAndRemove(d time.Duration) (int, error) {
	n := len(c.pids())
	if !c.emptyWithin(0) {
		c.signal(syscall.SIGKILL)
		if !c.emptyWithin(d) {
			return n, fmt.Errorf("cgroup %s: %w", c.dir, ErrGroupSurvived)
		}
	}
	return n, c.remove()
}

// emptyWithin polls until the cell holds no live process, for at most d,
// re-sending SIGKILL each round once it has been sent (a kernel without
// cgroup.kill may miss a fork in flight). There is no notification short
// of inotify on cgroup.events, and stopping is rare.
func (c *cgroupCell) emptyWithin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	interval := time.Millisecond
	for {
		if !c.populated() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(interval)
		if !c.kill && d > 0 {
			c.signal(syscall.SIGKILL)
		}
		interval = min(2*interval, 50*time.Millisecond)
	}
}

// remove deletes the cell's directory; one already gone is not an error.
func (c *cgroupCell) remove() error {
	var err error
	for range 20 { // EBUSY while the last exiting task is being released
		err = os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", c.dir, err)
}

// isCellDir reports whether dir looks like a cell a Containment made,
// under a cgroup2 mount: <cgroup>/mcpvisor-<hex>/srv-<name>-<n>.
func isCellDir(dir string) bool {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return false
	}
	if !strings.HasPrefix(filepath.Base(dir), "srv-") || !strings.HasPrefix(filepath.Base(filepath.Dir(dir)), "mcpvisor-") ||
		filepath.Base(filepath.Dir(dir)) == hostLeaf {
		return false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == cgroup2Magic
}

func hasController(file, c string) bool {
	b, err := os.ReadFile(file)
	return err == nil && slices.Contains(strings.Fields(string(b)), c)
}

func readPids(file string) ([]int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// writeFile writes value to a cgroup interface file (no O_CREAT, no
// truncation games: one write(2), whose error is the kernel's answer).
func writeFile(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return unwrapPath(err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return unwrapPath(err)
}

// unwrapPath drops *PathError's op and path where the message names the
// file itself.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}
