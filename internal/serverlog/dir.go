package serverlog

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Dir is a directory of server log files that share one writer goroutine.
// The writer runs only while lines wait to be written, and a file is open
// only while its lines are written, so an idle server costs its File's few
// words: no goroutine and no descriptor, however many servers there are.
// Its methods are safe for concurrent use.
type Dir struct {
	opts Options

	mu      sync.Mutex
	ready   []*File // files with lines queued
	running bool    // a writer goroutine is draining ready
	closed  bool
	wg      sync.WaitGroup // the writer goroutine
}

// OpenDir prepares the directory opts.Dir (creating it if needed) for the
// log files of many servers. It starts no goroutine and opens no file.
func OpenDir(opts Options) (*Dir, error) {
	d, err := openDir(opts)
	if err != nil {
		return nil, fmt.Errorf("serverlog: %w", err)
	}
	return d, nil
}

func openDir(opts Options) (*Dir, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, err
		}
	}
	return &Dir{opts: opts}, nil
}

// Open returns the log file of server, <Dir>/<SanitizeName(server)>.log. It
// does no I/O: the file is created with its first line. Open one File per
// server name at a time.
func (d *Dir) Open(server string) *File {
	return &File{path: filepath.Join(d.opts.Dir, SanitizeName(server)+".log"), opts: d.opts, dir: d}
}

// Close waits until the lines queued so far are written and the writer
// goroutine has exited. Files opened from d stay usable, but from then on
// their lines are written only by their own Sync, Tail and Close. Close is
// idempotent.
func (d *Dir) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
}

// schedule queues f for the writer, starting it if it is not running. It
// reports false once d is closed.
func (d *Dir) schedule(f *File) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.ready = append(d.ready, f)
	if !d.running {
		d.running = true
		d.wg.Add(1)
		go d.run()
	}
	return true
}

// run writes the lines of every ready file, and exits once none is left.
func (d *Dir) run() {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		batch := d.ready
		d.ready = nil
		if len(batch) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		for i, f := range batch {
			f.flush()
			batch[i] = nil
		}
	}
}
