package serverlog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/serverlog"
)

func Example() {
	dir, err := os.MkdirTemp("", "serverlog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	clock := func() time.Time { return time.Date(2026, 7, 3, 12, 34, 56, 789e6, time.UTC) }

	f, err := serverlog.Open("web scraper", serverlog.Options{Dir: dir, Now: clock})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	f.Write("lifecycle", "started, pid 4242")
	f.Write("stderr", "INFO: server ready")
	f.Write("warning", "scraper: rate limit approaching")

	lines, err := f.Tail(10)
	if err != nil {
		panic(err)
	}
	fmt.Println(filepath.Base(f.Path()))
	for _, line := range lines {
		fmt.Println(line)
	}
	// Output:
	// web_scraper.log
	// 2026-07-03T12:34:56.789Z [lifecycle] started, pid 4242
	// 2026-07-03T12:34:56.789Z [stderr]    INFO: server ready
	// 2026-07-03T12:34:56.789Z [warning]   scraper: rate limit approaching
}

// One Dir for every server of a host: a file is created with its first
// line, and none is held open between writes.
func ExampleDir() {
	dir, err := os.MkdirTemp("", "serverlog-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	clock := func() time.Time { return time.Date(2026, 7, 3, 12, 34, 56, 789e6, time.UTC) }

	logs, err := serverlog.OpenDir(serverlog.Options{Dir: dir, Now: clock})
	if err != nil {
		panic(err)
	}
	defer logs.Close()
	fs, git := logs.Open("fs"), logs.Open("git")
	defer fs.Close()
	defer git.Close()
	fs.Write("lifecycle", "spawned pid 4242")

	lines, err := fs.Tail(10)
	if err != nil {
		panic(err)
	}
	fmt.Println(lines)
	_, err = os.Stat(git.Path())
	fmt.Println("git.log exists:", err == nil)
	// Output:
	// [2026-07-03T12:34:56.789Z [lifecycle] spawned pid 4242]
	// git.log exists: false
}
