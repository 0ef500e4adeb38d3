package serverlog

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero Options.
const (
	DefaultMaxSize = 5 << 20 // bytes per file before rotation
	DefaultQueue   = 1024    // lines waiting for the writer
)

// maxNameLen bounds a sanitized name so that "<name>.log.1" fits the usual
// 255-byte file name limit.
const maxNameLen = 200

// tagWidth is the width of "[lifecycle]" and "[emergency]".
const tagWidth = 11

const timeLayout = "2006-01-02T15:04:05.000Z"

// SanitizeName maps a server name to a file name: every character outside
// [A-Za-z0-9._-] becomes '_'. The empty name becomes "_". Names longer than
// 200 bytes are cut and given a hash suffix, so they stay distinct. Distinct
// names can still collide ("a b" and "a_b"); server names are usually
// already restricted to the safe set.
func SanitizeName(name string) string {
	if name == "" {
		return "_"
	}
	var b strings.Builder
	for _, r := range name {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > maxNameLen {
		h := fnv.New32a()
		h.Write([]byte(name))
		s = fmt.Sprintf("%s-%08x", s[:maxNameLen-9], h.Sum32())
	}
	return s
}

// Options configure OpenDir and Open. The zero value means the defaults.
type Options struct {
	Dir     string           // directory of the log files; "" is the working directory
	MaxSize int64            // rotate before a file would exceed this; 0: DefaultMaxSize
	Queue   int              // lines waiting for the writer, per file; 0: DefaultQueue
	Now     func() time.Time // clock for timestamps; nil: time.Now
}

// record is one queued line; dropsBefore counts the lines dropped just
// before it was accepted.
type record struct {
	line        string
	dropsBefore uint64
}

// File is the log file of one server. Its methods are safe for concurrent
// use. Between writes it holds no descriptor: its lines wait in a bounded
// queue until its Dir's writer appends them, opening the file for that and
// closing it again.
type File struct {
	path string
	opts Options
	dir  *Dir
	own  bool // the File was opened by Open: Close closes dir too

	mu        sync.Mutex
	pending   []record
	scheduled bool   // f is in dir's ready list, or about to be
	unnoticed uint64 // dropped lines not yet reported in the file
	closed    bool
	dropped   atomic.Uint64 // every dropped line

	closeOnce sync.Once
	closeErr  error

	// io serialises the writing of f's lines, whoever does it (the dir's
	// writer, Sync, Tail or Close), so they reach the file in order. A
	// writer takes the pending lines only while holding it.
	io          sync.Mutex
	err         error  // first write error since the last Sync or Close
	beforeWrite func() // test hook, run before each queued line is written
}

// Open opens the log file of one server, with a Dir of its own: for a
// single file. Many servers should share one Dir (OpenDir, Dir.Open).
func Open(server string, opts Options) (*File, error) {
	d, err := openDir(opts)
	if err != nil {
		return nil, fmt.Errorf("serverlog: open %s: %w", server, err)
	}
	f := d.Open(server)
	f.own = true
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Dropped is the number of lines dropped so far because the queue was full.
func (f *File) Dropped() uint64 { return f.dropped.Load() }

// Write queues one record. It never blocks on I/O: when the queue is full
// the line is dropped and counted. Write after Close does nothing.
func (f *File) Write(tag, text string) {
	line := formatLine(f.opts.Now(), tag, text)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	if len(f.pending) >= f.opts.Queue {
		f.unnoticed++
		f.dropped.Add(1)
		f.mu.Unlock()
		return
	}
	f.pending = append(f.pending, record{line: line, dropsBefore: f.unnoticed})
	f.unnoticed = 0
	schedule := !f.scheduled
	f.scheduled = true
	f.mu.Unlock()
	if schedule && !f.dir.schedule(f) {
		// The Dir is closed: the lines wait for Sync, Tail or Close.
		f.mu.Lock()
		f.scheduled = false
		f.mu.Unlock()
	}
}

// Built once: building a Replacer costs more than formatting a line.
var (
	escapeNewlines = strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`)
	dropNewlines   = strings.NewReplacer("\r", "", "\n", "")
)

// formatLine renders one record, newline included.
func formatLine(t time.Time, tag, text string) string {
	text = strings.TrimRight(text, "\r\n")
	if strings.ContainsAny(text, "\r\n") {
		text = escapeNewlines.Replace(text)
	}
	if strings.ContainsAny(tag, "\r\n") {
		tag = dropNewlines.Replace(tag)
	}
	var b strings.Builder
	b.Grow(len(timeLayout) + tagWidth + len(text) + 3)
	b.WriteString(t.UTC().Format(timeLayout))
	b.WriteByte(' ')
	b.WriteByte('[')
	b.WriteString(tag)
	b.WriteByte(']')
	for i := len(tag) + 2; i < tagWidth; i++ {
		b.WriteByte(' ')
	}
	b.WriteByte(' ')
	b.WriteString(text)
	b.WriteByte('\n')
	return b.String()
}

// Sync returns once every line written before it was called is in the file
// and the file is synced to disk. It returns the first write error since the
// previous Sync, if any; after a failed write the File keeps going. It
// blocks on the disk, on the caller's goroutine.
func (f *File) Sync() error {
	if f.isClosed() {
		return ErrClosed
	}
	f.io.Lock()
	defer f.io.Unlock()
	f.writePending(true)
	if err := f.err; err != nil {
		f.err = nil
		return fmt.Errorf("serverlog: %s: %w", f.path, err)
	}
	return nil
}

// Tail returns up to the last n lines (without newlines), reaching into the
// backup file when the current one holds fewer. It first writes the lines
// queued before the call.
func (f *File) Tail(n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	if f.isClosed() {
		return nil, ErrClosed
	}
	f.io.Lock()
	defer f.io.Unlock()
	f.writePending(false)
	return f.tail(n)
}

func (f *File) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Close writes every queued line and returns the first write error since
// the last Sync. A File opened with Open also closes its Dir. Close is
// idempotent: later calls return the first call's result.
func (f *File) Close() error {
	f.closeOnce.Do(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.io.Lock()
		f.writePending(false)
		if f.err != nil {
			f.closeErr = fmt.Errorf("serverlog: %s: %w", f.path, f.err)
		}
		f.io.Unlock()
		if f.own {
			f.dir.Close()
		}
	})
	return f.closeErr
}

// flush writes the queued lines: the Dir's writer's part.
func (f *File) flush() {
	f.io.Lock()
	defer f.io.Unlock()
	f.writePending(false)
}

// writePending takes the queued lines and appends them to the file, opened
// for this and closed again; after Close it also reports the lines dropped
// since the last one written. The caller holds f.io.
func (f *File) writePending(fsync bool) {
	f.mu.Lock()
	recs := f.pending
	f.pending = nil
	f.scheduled = false
	var drops uint64
	if f.closed {
		drops, f.unnoticed = f.unnoticed, 0
	}
	f.mu.Unlock()
	if len(recs) == 0 && drops == 0 && !fsync {
		return
	}
	w := appender{f: f}
	for _, r := range recs {
		if f.beforeWrite != nil {
			f.beforeWrite()
		}
		if r.dropsBefore > 0 {
			w.line(f.dropNotice(r.dropsBefore))
		}
		w.line(r.line)
	}
	if drops > 0 {
		w.line(f.dropNotice(drops))
	}
	w.close(fsync)
}

func (f *File) dropNotice(n uint64) string {
	return formatLine(f.opts.Now(), "lifecycle", fmt.Sprintf("%d log lines dropped", n))
}

// noteErr keeps the first error until Sync or Close reports it. The caller
// holds f.io.
func (f *File) noteErr(err error) {
	if err != nil && f.err == nil {
		f.err = err
	}
}

// appender appends lines to a File's file through a buffer, rotating it when
// a line would push it past MaxSize. It opens the file at its first line.
type appender struct {
	f    *File
	file *os.File
	size int64
	buf  []byte
	fail bool // the file could not be opened: the remaining lines are lost
}

// appendBuffer is how much an appender gathers before writing.
const appendBuffer = 64 << 10

// line appends one line. A single line longer than MaxSize is cut to fit.
func (w *appender) line(line string) {
	max := w.f.opts.MaxSize
	if int64(len(line)) > max {
		const mark = "...[truncated]\n"
		keep := max - int64(len(mark))
		if keep < 0 {
			keep = 0
		}
		line = line[:keep] + mark
		if int64(len(line)) > max {
			line = line[len(line)-int(max):]
		}
	}
	if w.file == nil && !w.open() {
		return
	}
	if w.size > 0 && w.size+int64(len(line)) > max {
		w.rotate()
		if w.file == nil {
			return
		}
	}
	w.buf = append(w.buf, line...)
	w.size += int64(len(line))
	if len(w.buf) >= appendBuffer {
		w.write()
	}
}

// open opens the file for appending and learns its size; it creates the
// directory again if it was removed. It reports false if that failed, and
// then fails at once for the rest of the lines.
func (w *appender) open() bool {
	if w.fail {
		return false
	}
	// A server's stderr may hold anything it prints, secrets included: its
	// log is its user's alone (0600, in a 0700 directory).
	file, err := os.OpenFile(w.f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) && w.f.opts.Dir != "" {
		if err = os.MkdirAll(w.f.opts.Dir, 0o700); err == nil {
			file, err = os.OpenFile(w.f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		}
	}
	if err == nil {
		var st os.FileInfo
		if st, err = file.Stat(); err == nil {
			w.file, w.size = file, st.Size()
			return true
		}
		file.Close()
	}
	w.f.noteErr(err)
	w.fail = true
	return false
}

func (w *appender) write() {
	if len(w.buf) == 0 {
		return
	}
	_, err := w.file.Write(w.buf)
	w.f.noteErr(err) // what could not be written is dropped; the File keeps going
	w.buf = w.buf[:0]
}

// rotate renames the file to <path>.1, replacing the previous backup, and
// starts a new one.
func (w *appender) rotate() {
	w.write()
	w.f.noteErr(w.file.Close())
	w.file = nil
	w.f.noteErr(os.Rename(w.f.path, w.f.path+".1"))
	w.open()
	w.size = 0
}

// close writes what is buffered, syncs the file if fsync (opening it for
// that when no line was written) and closes it.
func (w *appender) close(fsync bool) {
	if w.file == nil {
		if !fsync || w.fail {
			return
		}
		file, err := os.OpenFile(w.f.path, os.O_WRONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			return // nothing was ever written: nothing to sync
		}
		if err != nil {
			w.f.noteErr(err)
			return
		}
		w.file = file
	}
	w.write()
	if fsync {
		w.f.noteErr(w.file.Sync())
	}
	w.f.noteErr(w.file.Close())
	w.file = nil
}

// tail returns the last n lines of the backup and current files.
func (f *File) tail(n int) ([]string, error) {
	lines, err := lastLines(f.path, n)
	if err != nil && !errors.Is(err, os.ErrNotExist) { // none yet: no line was written
		return nil, err
	}
	if len(lines) < n {
		older, err := lastLines(f.path+".1", n-len(lines))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		lines = append(older, lines...)
	}
	return lines, nil
}

// lastLines reads the last n lines of path, from the end backwards.
func lastLines(path string, n int) ([]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	const block = 64 << 10
	end := st.Size()
	var data []byte
	newlines := 0
	// n whole lines need n newlines plus the one ending the line before them.
	for end > 0 && newlines <= n {
		start := max(end-block, 0)
		chunk := make([]byte, end-start)
		if _, err := file.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		newlines += bytes.Count(chunk, []byte{'\n'})
		data = append(chunk, data...)
		end = start
	}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}
