package protocol

import (
	"bufio"
	"io"
)

const (
	// DefaultMaxFrame is the frame limit NewFrameReader uses when given 0.
	DefaultMaxFrame = 16 << 20
	// frameBufferSize is the read buffer: most frames fit in it and are read
	// with one copy.
	frameBufferSize = 64 << 10
	// sniffSize bounds FrameTooLargeError's Prefix and Suffix.
	sniffSize = 4 << 10
)

// FrameReader reads newline-delimited frames, as the stdio transport carries
// them, and bounds each one while reading it: a server that writes an endless
// line costs at most the limit plus the read buffer in memory, never the line.
//
// A FrameReader is not safe for concurrent use; one reader goroutine owns it.
// ReadFrame blocks in the underlying reader and does not watch a context: to
// unblock it, close the reader (the child's stdout pipe).
type FrameReader struct {
	br  *bufio.Reader
	max int
	err error // sticky: io.EOF or the underlying reader's error
}

// NewFrameReader returns a FrameReader that rejects frames longer than
// maxFrame bytes. maxFrame <= 0 means DefaultMaxFrame (16 MiB).
func NewFrameReader(r io.Reader, maxFrame int) *FrameReader {
	return newFrameReader(r, maxFrame, frameBufferSize)
}

func newFrameReader(r io.Reader, maxFrame, bufSize int) *FrameReader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &FrameReader{br: bufio.NewReaderSize(r, bufSize), max: maxFrame}
}

// ReadFrame returns the next frame: a line without its "\n" and without one
// trailing "\r". The slice is newly allocated and the caller owns it. Lines
// that are empty or hold only whitespace are skipped.
//
// A frame longer than the limit is discarded up to the end of its line while
// it is read, keeping only its first and last 4 KiB, and ReadFrame returns a
// *FrameTooLargeError (errors.Is(err, ErrFrameTooLarge)). The reader stays
// usable: the next call returns the next line.
//
// At the end of input, a last line without "\n" is returned as a frame, under
// the same limit, and then io.EOF. If the underlying reader fails, ReadFrame
// drops the partial line (it would be a truncated message) and returns the
// error, from then on at every call.
func (fr *FrameReader) ReadFrame() ([]byte, error) {
	for fr.err == nil {
		frame, err := fr.readLine()
		if err != nil {
			return nil, err
		}
		if frame != nil {
			return frame, nil
		}
	}
	return nil, fr.err
}

// readLine reads one line. It returns the frame, or nil for a blank line or
// when the underlying reader ended or failed (fr.err is then set), or a
// *FrameTooLargeError.
func (fr *FrameReader) readLine() ([]byte, error) {
	chunk, err := fr.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		// The common case: the whole line is in the buffer.
		return fr.finish(nil, 0, chunk, err)
	}
	// A line longer than the buffer: copy its chunks out until it ends or
	// passes the limit. Chunks are kept apart, not appended to one growing
	// slice, so an oversized line costs the limit in memory, not twice it.
	var partsBuf [8][]byte
	parts := partsBuf[:0]
	n := 0
	for err == bufio.ErrBufferFull {
		// +1: the line may still end in a "\r" that is not part of the frame.
		if n+len(chunk) > fr.max+1 {
			return nil, fr.discard(parts, chunk)
		}
		parts = append(parts, append([]byte(nil), chunk...))
		n += len(chunk)
		chunk, err = fr.br.ReadSlice('\n')
	}
	return fr.finish(parts, n, chunk, err)
}

// finish handles the end of a line: parts (n bytes) and then last, which is
// ended by "\n" (err nil), by the end of input (io.EOF), or cut by a failure.
func (fr *FrameReader) finish(parts [][]byte, n int, last []byte, err error) ([]byte, error) {
	switch err {
	case nil:
		last = last[:len(last)-1]
	case io.EOF:
		fr.err = io.EOF
	default:
		fr.err = err
		return nil, nil
	}
	size := n + len(last)
	frameLen := size
	if size > 0 && lastByte(parts, last) == '\r' {
		frameLen--
	}
	if frameLen > fr.max {
		e := &FrameTooLargeError{Size: int64(size), Limit: fr.max}
		for _, p := range parts {
			e.Prefix = appendPrefix(e.Prefix, p)
			e.Suffix = appendSuffix(e.Suffix, p)
		}
		e.Prefix = appendPrefix(e.Prefix, last)
		e.Suffix = appendSuffix(e.Suffix, last)
		return nil, e
	}
	blank := true
	for _, p := range parts {
		if blank = isLineBlank(p); !blank {
			break
		}
	}
	if blank && isLineBlank(last) {
		return nil, nil
	}
	frame := make([]byte, frameLen)
	off := 0
	for _, p := range parts {
		off += copy(frame[off:], p)
	}
	copy(frame[off:], last)
	return frame, nil
}

// discard reads and drops the rest of an oversized line. parts and chunk are
// what was read of it so far; the line has not ended yet.
func (fr *FrameReader) discard(parts [][]byte, chunk []byte) *FrameTooLargeError {
	e := &FrameTooLargeError{Limit: fr.max}
	for _, p := range parts {
		e.Size += int64(len(p))
		e.Prefix = appendPrefix(e.Prefix, p)
		e.Suffix = appendSuffix(e.Suffix, p)
	}
	err := bufio.ErrBufferFull
	for {
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		e.Size += int64(len(chunk))
		e.Prefix = appendPrefix(e.Prefix, chunk)
		e.Suffix = appendSuffix(e.Suffix, chunk)
		switch err {
		case nil:
			return e
		case bufio.ErrBufferFull:
		case io.EOF:
			fr.err = io.EOF
			return e
		default:
			// The line did not end: its tail is not the frame's tail.
			fr.err = err
			e.Suffix = nil
			return e
		}
		chunk, err = fr.br.ReadSlice('\n')
	}
}

func lastByte(parts [][]byte, last []byte) byte {
	if len(last) > 0 {
		return last[len(last)-1]
	}
	p := parts[len(parts)-1]
	return p[len(p)-1]
}

// isLineBlank reports whether a piece of a line holds only spaces, tabs and
// carriage returns (a "\n" cannot occur inside a line).
func isLineBlank(b []byte) bool {
	return skipSpace(b, 0) == len(b)
}

// appendPrefix appends to prefix as much of b as fits in sniffSize.
func appendPrefix(prefix, b []byte) []byte {
	if room := sniffSize - len(prefix); room > 0 && len(b) > 0 {
		if prefix == nil {
			prefix = make([]byte, 0, min(sniffSize, len(b)))
		}
		prefix = append(prefix, b[:min(room, len(b))]...)
	}
	return prefix
}

// appendSuffix keeps the last sniffSize bytes of suffix followed by b.
func appendSuffix(suffix, b []byte) []byte {
	if len(b) == 0 {
		return suffix
	}
	if cap(suffix) < sniffSize {
		grown := make([]byte, len(suffix), sniffSize)
		copy(grown, suffix)
		suffix = grown
	}
	if len(b) >= sniffSize {
		return append(suffix[:0], b[len(b)-sniffSize:]...)
	}
	if drop := len(suffix) + len(b) - sniffSize; drop > 0 {
		copy(suffix, suffix[drop:])
		suffix = suffix[:len(suffix)-drop]
	}
	return append(suffix, b...)
}
