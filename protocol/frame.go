package protocol

import (
	"bufio"
	"errors"
	"io"
	"os"
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
// A FrameReader is not safe for concurrent use: one goroutine at a time reads
// it. It may change hands between goroutines (the stdio transport passes it
// from its reader goroutine to the caller waiting for a response and back),
// as long as each hand-over is synchronised. ReadFrame blocks in the
// underlying reader and does not watch a context: to unblock it, set a read
// deadline on the reader (an *os.File pipe supports them), which ReadFrame
// survives, or close it.
type FrameReader struct {
	br  *bufio.Reader
	max int
	err error // sticky: io.EOF or the underlying reader's error

	// The line a deadline interrupted, which the next ReadFrame goes on
	// with: its chunks so far (n bytes), or, once it is past the limit,
	// what an oversized line keeps (over).
	parts [][]byte
	n     int
	over  *FrameTooLargeError

	discardMax int64 // an oversized line is given up past this size; 0: never
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

// SetDiscardLimit bounds how far ReadFrame follows an oversized line in
// search of its end: once the line has run past n bytes with no newline,
// ReadFrame stops reading and returns a *FrameTooLargeError with
// Unterminated set, and from then on returns that error at every call, as
// the stream has no frame boundary left to go on from. n <= 0 (the
// default) follows a line to its end, however long. Call it before the
// first ReadFrame.
func (fr *FrameReader) SetDiscardLimit(n int64) { fr.discardMax = n }

// ReadFrame returns the next frame: a line without its "\n" and without one
// trailing "\r". The slice is newly allocated and the caller owns it. Lines
// that are empty or hold only whitespace are skipped.
//
// A frame longer than the limit is discarded up to the end of its line while
// it is read, keeping only its first and last 4 KiB, and ReadFrame returns a
// *FrameTooLargeError (errors.Is(err, ErrFrameTooLarge)). The reader stays
// usable: the next call returns the next line.
//
// A read that fails with os.ErrDeadlineExceeded (a deadline set on the
// underlying file, to take a blocked reader out of its Read) loses nothing:
// ReadFrame returns that error and keeps what it has read of the current
// line, and the next call goes on with it. Clear or move the deadline
// before calling again, or that call fails the same way.
//
// At the end of input, a last line without "\n" is returned as a frame, under
// the same limit, and then io.EOF. If the underlying reader fails otherwise,
// ReadFrame drops the partial line (it would be a truncated message) and
// returns the error, from then on at every call.
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

// isDeadline reports whether a read failed only because its deadline
// passed: it may be tried again.
func isDeadline(err error) bool {
	return err != nil && err != bufio.ErrBufferFull && err != io.EOF && errors.Is(err, os.ErrDeadlineExceeded)
}

// readLine reads one line, or goes on with the one a deadline interrupted.
// It returns the frame; or nil for a blank line, or when the underlying
// reader ended or failed (fr.err is then set); or a *FrameTooLargeError; or
// the deadline error that interrupted it again.
func (fr *FrameReader) readLine() ([]byte, error) {
	for {
		chunk, err := fr.br.ReadSlice('\n')
		if fr.over != nil {
			if e := fr.discard(chunk, err); e != nil {
				return nil, e
			}
			if err != bufio.ErrBufferFull {
				return nil, err // a deadline: the line goes on at the next call
			}
			continue
		}
		if err != bufio.ErrBufferFull && !isDeadline(err) {
			// The common case: the line ends in this chunk, and when it
			// started in it, as most do, it is copied once.
			return fr.finish(chunk, err)
		}
		// A line longer than the buffer, or cut by a deadline: keep its
		// chunks until it ends or passes the limit. They are kept apart,
		// not appended to one growing slice, so an oversized line costs the
		// limit in memory, not twice it. +1: the line may still end in a
		// "\r" that is not part of the frame.
		if fr.n+len(chunk) > fr.max+1 {
			fr.startDiscard()
			if e := fr.discard(chunk, bufio.ErrBufferFull); e != nil { // the line has not ended
				return nil, e // past the discard limit already
			}
		} else if len(chunk) > 0 {
			fr.parts = append(fr.parts, append([]byte(nil), chunk...))
			fr.n += len(chunk)
		}
		if err != bufio.ErrBufferFull {
			return nil, err // a deadline
		}
	}
}

// finish handles the end of a line: fr.parts and then last, which is ended
// by "\n" (err nil), by the end of input (io.EOF), or cut by a failure.
func (fr *FrameReader) finish(last []byte, err error) ([]byte, error) {
	parts, n := fr.parts, fr.n
	defer fr.resetParts()
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

// resetParts forgets the chunks of a line, keeping the slice for the next
// long one.
func (fr *FrameReader) resetParts() {
	clear(fr.parts)
	fr.parts, fr.n = fr.parts[:0], 0
}

// startDiscard turns the line being read into an oversized one: from now on
// only its ends are kept.
func (fr *FrameReader) startDiscard() {
	e := &FrameTooLargeError{Limit: fr.max}
	for _, p := range fr.parts {
		e.Size += int64(len(p))
		e.Prefix = appendPrefix(e.Prefix, p)
		e.Suffix = appendSuffix(e.Suffix, p)
	}
	fr.resetParts()
	fr.over = e
}

// discard takes one more chunk of an oversized line, read with err. It
// returns the line's error once the line has ended (or the reader has, or
// the line ran past the discard limit), and nil while it goes on (err is
// bufio.ErrBufferFull or a deadline).
func (fr *FrameReader) discard(chunk []byte, err error) *FrameTooLargeError {
	e := fr.over
	if err == nil {
		chunk = chunk[:len(chunk)-1]
	}
	e.Size += int64(len(chunk))
	e.Prefix = appendPrefix(e.Prefix, chunk)
	e.Suffix = appendSuffix(e.Suffix, chunk)
	switch {
	case err == nil:
	case (err == bufio.ErrBufferFull || isDeadline(err)) && fr.discardMax > 0 && e.Size > fr.discardMax:
		// Endless, as far as anyone can wait: nothing after it can be
		// read as a frame.
		e.Unterminated, e.Suffix = true, nil
		fr.err = e
	case err == bufio.ErrBufferFull || isDeadline(err):
		return nil
	case err == io.EOF:
		fr.err = io.EOF
	default:
		// The line did not end: its tail is not the frame's tail.
		fr.err = err
		e.Suffix = nil
	}
	fr.over = nil
	return e
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
