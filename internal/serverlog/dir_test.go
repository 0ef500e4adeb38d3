package serverlog

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func openDirT(t *testing.T, opts Options) *Dir {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Now == nil {
		opts.Now = fixedClock
	}
	d, err := OpenDir(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(fds)
}

// The servers of a host that are not logging hold no descriptor: neither
// once their files are opened nor once their lines are written.
func TestIdleFilesHoldNoDescriptor(t *testing.T) {
	const servers = 500
	before := openFDs(t)
	d := openDirT(t, Options{})
	files := make([]*File, servers)
	for i := range files {
		files[i] = d.Open(fmt.Sprintf("s%03d", i))
	}
	if got := openFDs(t); got != before {
		t.Errorf("%d servers opened: %d descriptors, want %d as before", servers, got, before)
	}
	for i, f := range files {
		f.Write("lifecycle", fmt.Sprintf("server %d starting", i))
	}
	for _, f := range files {
		syncT(t, f) // its line is in the file: nothing more to write
	}
	if got := openFDs(t); got != before {
		t.Errorf("%d servers idle after a line each: %d descriptors, want %d as before", servers, got, before)
	}
	for i, f := range files {
		want := []string{fmt.Sprintf("%s [lifecycle] server %d starting", stamp, i)}
		if diff := cmp.Diff(want, readLines(t, f.Path())); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", f.Path(), diff)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := openFDs(t); got != before {
		t.Errorf("after Close: %d descriptors, want %d", got, before)
	}
}

// Files sharing a Dir keep their own lines, in order, under concurrent
// writers.
func TestDirManyFilesConcurrently(t *testing.T) {
	const servers, writers, each = 40, 4, 200
	d := openDirT(t, Options{Queue: writers * each})
	files := make([]*File, servers)
	for i := range files {
		files[i] = d.Open(fmt.Sprintf("s%02d", i))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				for s, f := range files {
					f.Write("stderr", fmt.Sprintf("s%02d w%d %d", s, w, i))
				}
			}
		})
	}
	wg.Wait()
	d.Close() // writes what is queued
	for s, f := range files {
		if f.Dropped() != 0 {
			t.Fatalf("%s dropped %d with a queue big enough for all", f.Path(), f.Dropped())
		}
		next := make([]int, writers)
		lines := readLines(t, f.Path())
		for _, line := range lines {
			var gotS, w, i int
			if _, err := fmt.Sscanf(line[len(stamp)+tagWidth+2:], "s%d w%d %d", &gotS, &w, &i); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if gotS != s || i != next[w] {
				t.Fatalf("%s: line %q after writer %d's %d", f.Path(), line, w, next[w]-1)
			}
			next[w]++
		}
		if len(lines) != writers*each {
			t.Errorf("%s: %d lines, want %d", f.Path(), len(lines), writers*each)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// Once the Dir is closed, a File's lines wait for its own Close.
func TestWriteAfterDirClose(t *testing.T) {
	d := openDirT(t, Options{})
	f := d.Open("late")
	f.Write("lifecycle", "before")
	d.Close()
	d.Close() // idempotent
	f.Write("lifecycle", "after")
	got, err := f.Tail(10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{stamp + " [lifecycle] before", stamp + " [lifecycle] after"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tail (-want +got):\n%s", diff)
	}
	f.Write("lifecycle", "last")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(want, stamp+" [lifecycle] last"), readLines(t, f.Path())); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
}
