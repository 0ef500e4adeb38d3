package supervision

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxStderrLine is the longest stderr line passed to ProcessSpec.Stderr
// whole; longer lines are cut to this many bytes and marked.
const MaxStderrLine = 64 << 10

// StderrTruncated ends a stderr line that was cut at MaxStderrLine.
const StderrTruncated = " [truncated]"

// pumpLines reads r to EOF (or error) and calls emit for each line. With a
// nil emit it just drains r: a child must never block on a full stderr pipe.
func pumpLines(r io.Reader, emit func(line []byte)) {
	if emit == nil {
		_, _ = io.Copy(io.Discard, r)
		return
	}
	br := bufio.NewReaderSize(r, MaxStderrLine+1) // +1: a line of exactly MaxStderrLine fits with its '\n'
	cut := false                                  // reading the rest of a line already cut
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			if !cut {
				emit(bytes.Clone(trimEOL(line)))
			}
			cut = false
		case errors.Is(err, bufio.ErrBufferFull):
			if !cut {
				emit(append(bytes.Clone(line[:MaxStderrLine]), StderrTruncated...))
				cut = true
			}
		default: // io.EOF, or the read end closed by Stop
			if len(line) > 0 && !cut {
				emit(bytes.Clone(line))
			}
			return
		}
	}
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}
