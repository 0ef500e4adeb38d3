package supervision

import (
	"strings"
	"sync"
)

// kin is what this process knows of the processes its servers are made of,
// for the subreaper to tell an adopted orphan of a server from a child
// some other code of the process started (whose exit status its own
// exec.Cmd.Wait must get). It is process-wide, as children are.
var kin = newKinship()

type kinship struct {
	// spawn is held shared by StartProcess from before the fork until the
	// child is registered as a leader, and exclusively by a reaping pass:
	// a leader that exits at once is never taken for an orphan.
	spawn sync.RWMutex

	mu      sync.Mutex
	leaders map[int]bool   // children StartProcess started, until exec.Cmd.Wait reaped them
	groups  map[int]int    // process groups of servers not yet stopped → how many Processes lead one
	roots   map[string]int // cgroup subtrees of live Containments
	marked  map[int]uint64 // processes found carrying a marker → start time, while reaping
	reaping bool           // a Subreaper is active
}

func newKinship() *kinship {
	return &kinship{leaders: map[int]bool{}, groups: map[int]int{}, roots: map[string]int{}, marked: map[int]uint64{}}
}

func (k *kinship) addLeader(pid int) {
	k.mu.Lock()
	k.leaders[pid] = true
	k.groups[pid]++
	k.mu.Unlock()
}

// leaderReaped: exec.Cmd.Wait has the status; the group stays known until
// the Process is stopped.
func (k *kinship) leaderReaped(pid int) {
	k.mu.Lock()
	delete(k.leaders, pid)
	k.mu.Unlock()
}

func (k *kinship) groupStopped(pgid int) {
	k.mu.Lock()
	if k.groups[pgid]--; k.groups[pgid] <= 0 {
		delete(k.groups, pgid)
	}
	k.mu.Unlock()
}

func (k *kinship) isLeader(pid int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leaders[pid]
}

func (k *kinship) isGroup(pgid int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.groups[pgid] > 0
}

func (k *kinship) addRoot(dir string) {
	k.mu.Lock()
	k.roots[dir]++
	k.mu.Unlock()
}

func (k *kinship) removeRoot(dir string) {
	k.mu.Lock()
	if k.roots[dir]--; k.roots[dir] <= 0 {
		delete(k.roots, dir)
	}
	k.mu.Unlock()
}

// underRoot reports whether cgroup dir is inside a live Containment's
// subtree.
func (k *kinship) underRoot(dir string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for root := range k.roots {
		if strings.HasPrefix(dir, root+"/") {
			return true
		}
	}
	return false
}

// mark remembers a process found carrying a marker, for the subreaper to
// reap once it is a zombie (it is in no group or cgroup of ours when it
// called setsid in process-group mode). Without a subreaper such a process
// is not our child once orphaned, and nothing is kept.
func (k *kinship) mark(pid int, start uint64) {
	k.mu.Lock()
	if k.reaping {
		k.marked[pid] = start
	}
	k.mu.Unlock()
}

func (k *kinship) setReaping(on bool) {
	k.mu.Lock()
	k.reaping = on
	if !on {
		clear(k.marked)
	}
	k.mu.Unlock()
}

// takeMarked reports whether pid, started at start, was found carrying a
// marker, and forgets it.
func (k *kinship) takeMarked(pid int, start uint64) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.marked[pid]
	if ok {
		delete(k.marked, pid)
	}
	return ok && s == start
}
