package supervision

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// reapInterval is how often the reaper looks for zombies without a
// SIGCHLD: signals coalesce, and a pass can miss an orphan whose group or
// cgroup was not yet known.
const reapInterval = 10 * time.Second

// reaper is the process-wide state behind every Subreaper.
var reaper struct {
	mu   sync.Mutex
	refs int
	stop chan struct{}
	done chan struct{}
}

// Subreaper is one holder of the process's child-subreaper attribute.
type Subreaper struct{ once sync.Once }

// StartSubreaper makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): the orphans of its servers' processes become
// its children rather than init's, and a goroutine reaps them as they
// exit. It reaps only zombies it can tell are its servers' (in one of
// their cgroups or process groups, or seen carrying a marker) and never a
// child StartProcess started, so exec.Cmd.Wait of every child, this
// package's or any other code's, gets its own status: it waits for
// specific pids with WNOHANG, never for any child. An orphan it cannot
// place (a child of some other code that daemonized) stays a zombie until
// the process exits.
//
// The attribute is the process's, not the caller's: start it only in a
// program that is the host (the CLI does), not from a library the
// embedder did not ask. Calls nest; the last Close clears it and stops the
// goroutine.
func StartSubreaper() (*Subreaper, error) {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if reaper.refs == 0 {
		if err := prctlSubreaper(1); err != nil {
			return nil, fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
		}
		kin.setReaping(true)
		reaper.stop, reaper.done = make(chan struct{}), make(chan struct{})
		go reapLoop(reaper.stop, reaper.done)
	}
	reaper.refs++
	return &Subreaper{}, nil
}

// Close gives up this hold; the last one stops reaping, returning once the
// goroutine has exited, and clears the attribute. Idempotent.
func (s *Subreaper) Close() {
	s.once.Do(func() {
		reaper.mu.Lock()
		defer reaper.mu.Unlock()
		if reaper.refs--; reaper.refs > 0 {
			return
		}
		close(reaper.stop)
		<-reaper.done
		_ = prctlSubreaper(0)
		kin.setReaping(false)
	})
}

func prctlSubreaper(on uintptr) error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, on, 0); errno != 0 {
		return errno
	}
	return nil
}

func reapLoop(stop, done chan struct{}) {
	defer close(done)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		reapOrphans()
		select {
		case <-stop:
			return
		case <-sig:
		case <-tick.C:
		}
	}
}

// reapOrphans reaps the zombies among this process's children that are
// adopted orphans of its servers, and returns how many.
func reapOrphans() int {
	kin.spawn.Lock() // no leader is between fork and registration
	defer kin.spawn.Unlock()
	self := os.Getpid()
	n := 0
	eachProcess(func(pid int, st procInfo) bool {
		if st.ppid != self || st.state != 'Z' || kin.isLeader(pid) {
			return true
		}
		ours := kin.takeMarked(pid, st.start) || kin.isGroup(st.pgrp)
		if !ours {
			cg, _ := cgroupOf(strconv.Itoa(pid))
			ours = cg != "" && kin.underRoot(cg)
		}
		if !ours {
			return true
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
			n++
		}
		return true
	})
	return n
}
