package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/serverlog"
)

// logs: a server's log file, DATA/logs/<server>.log, which the host that
// runs the server writes (its stderr, log messages and lifecycle) and
// rotates to <server>.log.1, as docker logs shows a container's.

const logsDetail = "The log is the file the host running the server writes: DIR/logs/NAME.log, its stderr, log\n" +
	"messages and lifecycle, one line each, rotated to NAME.log.1 at 5 MiB. It is read from the\n" +
	"disk, whether a sidecar (mcpvisor serve) runs on --data or not: NAME is one of the sidecar's\n" +
	"servers, else of --config (a server with a log but in neither is shown all the same).\n" +
	"With --follow the lines written from then on are printed as they come, across rotations,\n" +
	"until interrupted.\n\n" +
	"Exit status: 0 printed; 1 NAME is no server, or it has no log yet; 2 a usage or config error."

func logsFlags(fs *flag.FlagSet, f *flags) {
	const follow = "print the lines written from now on too, until interrupted"
	fs.BoolVar(&f.follow, "follow", false, follow)
	fs.BoolVar(&f.follow, "f", false, "the same as --follow")
	const tail = "only the last `N` lines (0: every line, the rotated file's first)"
	fs.IntVar(&f.limit, "n", 0, tail)
	fs.IntVar(&f.limit, "tail", 0, "the same as -n `N`")
}

// logPollInterval is how often --follow looks for lines written since: a
// server's log is read by a person, and polling works on every file
// system.
const logPollInterval = 200 * time.Millisecond

func cmdLogs(ctx context.Context, e *env) error {
	if len(e.args) != 1 {
		return &exitError{code: exitUsage, msg: "logs: want logs NAME" + seeHelp("logs")}
	}
	if e.f.limit < 0 {
		return &exitError{code: exitUsage, msg: "logs: -n must not be negative"}
	}
	name := e.args[0]
	path := filepath.Join(e.f.data, "logs", serverlog.SanitizeName(name)+".log")
	known, where, err := knownServer(ctx, e, name)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(path)
	_, oldErr := os.Stat(path + ".1")
	hasLog := statErr == nil || oldErr == nil
	switch {
	case !known && !hasLog:
		return fmt.Errorf("logs: no server %q in %s", name, where)
	case !hasLog:
		return fmt.Errorf("logs: server %q has no log yet in %s: it is written once the server has started", name, filepath.Dir(path))
	}
	w := bufio.NewWriter(e.stdout)
	out := &logWriter{w: w, escape: terminal(e.stdout)}
	fl := &logFollower{path: path, out: out}
	if err := fl.printTail(e.f.limit, e.f.follow); err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	if err := w.Flush(); err != nil || !e.f.follow {
		return err
	}
	defer fl.close()
	t := time.NewTicker(logPollInterval)
	defer t.Stop()
	for {
		if err := fl.poll(); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// knownServer reports whether name is one of the running sidecar's
// servers, else of the config's; where names what was looked in.
func knownServer(ctx context.Context, e *env, name string) (known bool, where string, err error) {
	if e.sidecar != nil {
		sts, err := e.sidecar.servers(ctx, 0)
		if err != nil {
			return false, "", err
		}
		return slices.ContainsFunc(sts, func(st mcpvisor.ServerStatus) bool { return st.Name == name }), "the sidecar on " + e.f.data, nil
	}
	if e.cfg != nil {
		for _, sc := range e.cfg.Servers {
			if sc.Name == name {
				return true, "", nil
			}
		}
	}
	return false, e.f.config.String(), nil
}

// logWriter writes a log's complete lines; on a terminal, what it would
// not print as text is escaped: a server's stderr cannot rewrite the
// screen.
type logWriter struct {
	w      *bufio.Writer
	escape bool
}

func (l *logWriter) line(b []byte) {
	if l.escape {
		l.w.WriteString(printableText(string(b)))
		return
	}
	l.w.Write(b)
}

// logFollower prints a log file and what is appended to it, following it
// when it is rotated (renamed to path.1, a new path begun).
type logFollower struct {
	path string
	out  *logWriter
	file *os.File // the file being followed, nil before it exists
	rest []byte   // a line not yet complete at file's end
}

// printTail prints the last n lines (0: all) of path.1 and path, and
// leaves the follower at path's end; when it follows, a last line not yet
// complete is left for poll to print whole.
func (l *logFollower) printTail(n int, follow bool) error {
	cur, err := os.Open(l.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	l.file = cur
	var lines [][]byte
	if cur != nil {
		if lines, err = readLines(cur, n, follow); err != nil {
			return err
		}
	}
	if n == 0 || len(lines) < n {
		old, err := os.ReadFile(l.path + ".1")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		older := splitLines(old)
		if n > 0 {
			older = older[max(0, len(older)-(n-len(lines))):]
		}
		lines = append(older, lines...)
	}
	for _, ln := range lines {
		l.out.line(ln)
	}
	if k := len(lines); k > 0 && !follow && lines[k-1][len(lines[k-1])-1] != '\n' {
		l.out.line([]byte{'\n'}) // the last line, cut short, ends the output
	}
	return nil
}

// readLines reads f to its end and returns its last n lines (0: all); a
// last line without its newline is left unread with leavePartial. The
// whole file is at most the host's 5 MiB.
func readLines(f *os.File, n int, leavePartial bool) ([][]byte, error) {
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	lines := splitLines(b)
	if k := len(lines); leavePartial && k > 0 && lines[k-1][len(lines[k-1])-1] != '\n' {
		// Written half: it is printed whole by the next poll.
		if _, err := f.Seek(-int64(len(lines[k-1])), io.SeekCurrent); err != nil {
			return nil, err
		}
		lines = lines[:k-1]
	}
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// splitLines splits b after each newline; the last line may lack one.
func splitLines(b []byte) [][]byte {
	var lines [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, b)
			break
		}
		lines = append(lines, b[:i+1])
		b = b[i+1:]
	}
	return lines
}

// poll prints the lines appended since the last poll. When path is no
// longer the file being read (rotated: renamed to path.1), the rest of
// that file is printed, then the new path from its start.
func (l *logFollower) poll() error {
	if l.file != nil {
		if err := l.drain(); err != nil {
			return err
		}
	}
	st, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // rotated, its successor not yet begun; or not begun at all
	}
	if err != nil {
		return err
	}
	if l.file != nil {
		cur, err := l.file.Stat()
		if err != nil {
			return err
		}
		if os.SameFile(st, cur) {
			if pos, err := l.file.Seek(0, io.SeekCurrent); err == nil && st.Size() < pos {
				// Cut short in place: read it again from its start.
				l.rest = nil
				_, err = l.file.Seek(0, io.SeekStart)
				return err
			}
			return nil
		}
		// Rotated: what the old file got after the drain above is
		// printed too, then it is let go.
		if err := l.drain(); err != nil {
			return err
		}
		if len(l.rest) > 0 {
			l.out.line(append(l.rest, '\n'))
			l.rest = nil
		}
		l.file.Close()
		l.file = nil
	}
	f, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.file = f
	return l.drain()
}

// drain prints the complete lines the file got since it was last read.
func (l *logFollower) drain() error {
	buf := make([]byte, 32<<10)
	for {
		n, err := l.file.Read(buf)
		b := buf[:n]
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				l.rest = append(l.rest, b...)
				break
			}
			l.out.line(append(l.rest, b[:i+1]...))
			l.rest = l.rest[:0]
			b = b[i+1:]
		}
		if errors.Is(err, io.EOF) || n == 0 && err == nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// close lets go of the file being followed.
func (l *logFollower) close() {
	if l.file != nil {
		l.file.Close()
	}
}
