package serverlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
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

// Options configure Open. The zero value means the defaults.
type Options struct {
	Dir     string           // directory of the log files; "" is the working directory
	MaxSize int64            // rotate before a file would exceed this; 0: DefaultMaxSize
	Queue   int              // lines buffered for the writer; 0: DefaultQueue
	Now     func() time.Time // clock for timestamps; nil: time.Now
}

// record is one queued line; dropsBefore counts the lines dropped just
// before it was accepted.
type record struct {
	line        string
	dropsBefore uint64
}

// request asks the writer goroutine to flush; with tail > 0 it also reads
// the last tail lines.
type request struct {
	fsync bool
	tail  int
	reply chan response
}

type response struct {
	lines []string
	err   error
}

// File is the log file of one server. Its methods are safe for concurrent
// use. Open one File per server name and directory at a time.
type File struct {
	path string
	opts Options

	// mu makes Close exclusive with Write's enqueue, so no line is queued
	// after the writer's final drain. Write holds it shared, and never long.
	mu        sync.RWMutex
	closed    bool
	closeErr  error
	queue     chan record
	requests  chan request
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the writer goroutine has exited
	dropped   atomic.Uint64 // every dropped line
	unnoticed atomic.Uint64 // dropped lines not yet reported in the file

	// Owned by the writer goroutine.
	file        *os.File
	buf         *bufio.Writer
	size        int64
	err         error  // first write error since the last Sync/Close
	beforeWrite func() // test hook, run before each queued line is written
}

// Open opens (creating it and Dir if needed) the log file of server and
// starts its writer goroutine.
func Open(server string, opts Options) (*File, error) {
	return open(server, opts, nil)
}

func open(server string, opts Options, beforeWrite func()) (*File, error) {
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
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("serverlog: open %s: %w", server, err)
		}
	}
	f := &File{
		path:        filepath.Join(opts.Dir, SanitizeName(server)+".log"),
		opts:        opts,
		queue:       make(chan record, opts.Queue),
		requests:    make(chan request),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		beforeWrite: beforeWrite,
	}
	if err := f.openFile(); err != nil {
		return nil, fmt.Errorf("serverlog: open %s: %w", server, err)
	}
	go f.run()
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
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return
	}
	n := f.unnoticed.Swap(0)
	select {
	case f.queue <- record{line: line, dropsBefore: n}:
	default:
		f.unnoticed.Add(n + 1)
		f.dropped.Add(1)
	}
}

// formatLine renders one record, newline included.
func formatLine(t time.Time, tag, text string) string {
	text = strings.TrimRight(text, "\r\n")
	if strings.ContainsAny(text, "\r\n") {
		text = strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`).Replace(text)
	}
	tag = strings.NewReplacer("\r", "", "\n", "").Replace(tag)
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
// previous Sync, if any; after a failed write the File keeps going.
func (f *File) Sync() error {
	_, err := f.ask(request{fsync: true})
	return err
}

// Tail returns up to the last n lines (without newlines), reaching into the
// backup file when the current one holds fewer. It first flushes the lines
// written before the call.
func (f *File) Tail(n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	return f.ask(request{tail: n})
}

func (f *File) ask(req request) ([]string, error) {
	req.reply = make(chan response, 1)
	select {
	case f.requests <- req:
	case <-f.stop:
		return nil, ErrClosed
	}
	r := <-req.reply
	return r.lines, r.err
}

// Close writes every queued line, closes the file and stops the writer
// goroutine, returning once it has exited. It is idempotent: later calls
// return the first call's result.
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		<-f.done
		return f.closeErr
	}
	f.closed = true
	close(f.stop)
	f.mu.Unlock()
	<-f.done
	return f.closeErr
}

// run is the writer goroutine: it alone touches the file.
func (f *File) run() {
	defer close(f.done)
	for {
		select {
		case r := <-f.queue:
			f.writeRecord(r)
			if len(f.queue) == 0 {
				f.flush()
			}
		case req := <-f.requests:
			req.reply <- f.serve(req)
		case <-f.stop:
			f.drain()
			if n := f.unnoticed.Swap(0); n > 0 {
				f.writeLine(f.dropNotice(n))
			}
			f.flush()
			if f.file != nil {
				f.noteErr(f.file.Close())
			}
			if f.err != nil {
				f.closeErr = fmt.Errorf("serverlog: %s: %w", f.path, f.err)
			}
			return
		}
	}
}

// drain writes whatever is queued now. Lines from Writes that returned
// before the caller's request are all in the queue already.
func (f *File) drain() {
	for {
		select {
		case r := <-f.queue:
			f.writeRecord(r)
		default:
			return
		}
	}
}

func (f *File) serve(req request) response {
	f.drain()
	f.flush()
	if req.fsync && f.file != nil {
		f.noteErr(f.file.Sync())
	}
	var res response
	if req.fsync && f.err != nil {
		res.err = fmt.Errorf("serverlog: %s: %w", f.path, f.err)
		f.err = nil
	}
	if req.tail > 0 {
		res.lines, res.err = f.tail(req.tail)
	}
	return res
}

func (f *File) dropNotice(n uint64) string {
	return formatLine(f.opts.Now(), "lifecycle", fmt.Sprintf("%d log lines dropped", n))
}

func (f *File) writeRecord(r record) {
	if f.beforeWrite != nil {
		f.beforeWrite()
	}
	if r.dropsBefore > 0 {
		f.writeLine(f.dropNotice(r.dropsBefore))
	}
	f.writeLine(r.line)
}

// writeLine appends line, rotating first if it would push the file past
// MaxSize. A single line longer than MaxSize is cut to fit.
func (f *File) writeLine(line string) {
	max := f.opts.MaxSize
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
	if f.size > 0 && f.size+int64(len(line)) > max {
		f.rotate()
	}
	if f.buf == nil { // reopening after a rotation failed: try again
		if err := f.openFile(); err != nil {
			f.noteErr(err)
			return
		}
	}
	n, err := f.buf.WriteString(line)
	f.size += int64(n)
	if err != nil {
		f.noteErr(err)
		f.buf.Reset(f.file) // a bufio.Writer keeps failing after one error
	}
}

// noteErr keeps the first error until Sync or Close reports it.
func (f *File) noteErr(err error) {
	if err != nil && f.err == nil {
		f.err = err
	}
}

func (f *File) flush() {
	if f.buf == nil {
		return
	}
	if err := f.buf.Flush(); err != nil {
		f.noteErr(err)
		f.buf.Reset(f.file) // drop what could not be written, keep going
	}
}

// rotate renames the file to <path>.1, replacing the previous backup, and
// starts a new one.
func (f *File) rotate() {
	f.flush()
	if f.file != nil {
		f.noteErr(f.file.Close())
	}
	f.noteErr(os.Rename(f.path, f.path+".1"))
	f.file, f.buf, f.size = nil, nil, 0
	f.noteErr(f.openFile()) // on failure writeLine retries
}

func (f *File) openFile() error {
	file, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return err
	}
	f.file = file
	f.buf = bufio.NewWriterSize(file, 64<<10)
	f.size = st.Size()
	return nil
}

// tail returns the last n lines of the backup and current files.
func (f *File) tail(n int) ([]string, error) {
	lines, err := lastLines(f.path, n)
	if err != nil {
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
