package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"time"

	"github.com/mcpvisor/mcpvisor/protocol"
)

const (
	// minBufferSize is the read buffer a Reader starts with: an idle stream
	// (one per remote server) costs no more than this.
	minBufferSize = 4 << 10
	// maxBufferSize is what the buffer grows to, doubling each time a line
	// does not fit in it, so that streams of large events read them with
	// few calls to the underlying reader.
	maxBufferSize = 64 << 10
	// prefixSize bounds TooLargeError.Prefix.
	prefixSize = 4 << 10
	// maxRetry is the largest retry a time.Duration holds, in milliseconds.
	maxRetry = int64(math.MaxInt64 / time.Millisecond)
)

var (
	bom     = []byte("\xEF\xBB\xBF")
	newline = []byte{'\n'}

	errInvalidRead = errors.New("sse: reader returned an invalid count")
)

// Event is one dispatched event. Its fields are the raw bytes of the stream,
// not decoded as UTF-8.
type Event struct {
	// ID is the event's "id" field, "" if it had none. Unlike a browser the
	// Reader does not carry the last id over to later events: the caller
	// keeps the last event id of the stream.
	ID string
	// HasID reports that the event had an "id" field. An empty id resets
	// the stream's last event id.
	HasID bool
	// Type is the "event" field; "" means "message".
	Type string
	// Data is the event's data lines joined with "\n", nil when empty. The
	// caller owns it.
	Data []byte
	// Retry is the reconnection time the "retry" field asks for. It is not
	// capped: a caller that sleeps on it should.
	Retry time.Duration
	// HasRetry reports a valid "retry" field: ASCII digits, milliseconds.
	HasRetry bool
}

// Reader parses a text/event-stream and bounds each event while reading it:
// a server that sends an endless line or an endless event costs about the
// limit in memory, never the event.
//
// A Reader is not safe for concurrent use; one goroutine owns it. Next
// blocks in the underlying reader and does not watch a context: to unblock
// it, close the reader (the response body).
type Reader struct {
	rd  io.Reader
	max int

	buf        []byte // allocated by the first read
	rpos, wpos int    // unread bytes are buf[rpos:wpos]
	lf         int    // index of the first '\n' in buf[rpos:wpos], wpos if none, -1 if not looked for
	err        error  // sticky: io.EOF or the underlying reader's error
	started    bool   // the byte order mark has been looked for
	skipLF     bool   // the last line ended with '\r': a '\n' next belongs to it
	grow       bool   // a line did not fit in buf: take a larger one at the next read
	line       []byte // a line longer than what buf held, up to max bytes
	spilled    bool   // the last line read is in line, not in buf

	ev pending
}

// pending is the event being read.
type pending struct {
	data     []byte
	dataLen  int64 // length of the data as joined, counted on after the limit
	hasData  bool
	typ      string
	id       string
	hasID    bool
	retry    time.Duration
	hasRetry bool

	tooLarge   bool
	longest    int64 // the longest line over the limit
	prefix     []byte
	prefixDone bool
}

// NewReader returns a Reader that rejects events whose data, or any line,
// is longer than maxEvent bytes. maxEvent <= 0 means protocol.DefaultMaxFrame
// (16 MiB), the limit stdio frames have.
func NewReader(r io.Reader, maxEvent int) *Reader {
	if maxEvent <= 0 {
		maxEvent = protocol.DefaultMaxFrame
	}
	return &Reader{rd: r, max: maxEvent, lf: -1}
}

// Next returns the next event, parsed as the WHATWG HTML standard describes
// (section "Interpreting an event stream"): lines end with "\n", "\r\n" or
// "\r"; a byte order mark at the start of the stream is skipped; lines
// starting with ":" are comments; a line without ":" is a field with an
// empty value; one space after the ":" is removed; unknown fields are
// ignored; an "id" containing NUL is ignored; a blank line ends the event.
//
// Unlike a browser, Next also returns an event whose data is empty when it
// carries an id or a retry: MCP's priming event, whose id and retry the
// caller records and whose empty data it never decodes. An event with no
// data field, no id and no retry (only comments, or a lone "event:" line) is
// skipped.
//
// An event whose data (or any line, comments included) is longer than the
// limit is discarded while it is read, up to its blank line, and Next
// returns a *TooLargeError (errors.Is(err, protocol.ErrFrameTooLarge)). The
// Reader stays usable: the next call returns the next event.
//
// At the end of input an event without its blank line is discarded, as in a
// browser, and Next returns io.EOF, from then on at every call; the
// underlying reader's error is returned the same way. If the unfinished
// event had already passed the limit, Next first returns its
// *TooLargeError.
func (r *Reader) Next() (Event, error) {
	for {
		line, n, err := r.readLine()
		if err != nil {
			if n > int64(r.max) {
				// An unfinished line already over the limit.
				r.field(line, n)
			}
			if r.ev.tooLarge {
				return Event{}, r.dropEvent()
			}
			r.resetEvent()
			return Event{}, err
		}
		if n > 0 {
			r.field(line, n)
			continue
		}
		switch ev := &r.ev; {
		case ev.tooLarge:
			return Event{}, r.dropEvent()
		case ev.hasData || ev.hasID || ev.hasRetry:
			return r.takeEvent(), nil
		}
		r.resetEvent()
	}
}

// field handles one line of n bytes, of which line holds the first r.max.
func (r *Reader) field(line []byte, n int64) {
	ev := &r.ev
	cut := n > int64(r.max)
	if cut {
		r.drop()
		ev.longest = max(ev.longest, n)
	}
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		r.addData(value, cut)
	case "event":
		if !cut {
			ev.typ = eventType(value)
		}
	case "id":
		if !cut && bytes.IndexByte(value, 0) < 0 {
			ev.id = string(value)
			ev.hasID = true
		}
	case "retry":
		if cut {
			break
		}
		if d, ok := parseRetry(value); ok {
			ev.retry = d
			ev.hasRetry = true
		}
	}
}

// addData appends a data field's value to the event, or, once the event is
// over the limit, counts it and keeps only the start of the data.
func (r *Reader) addData(value []byte, cut bool) {
	ev := &r.ev
	sep := ev.hasData
	ev.hasData = true
	if sep {
		ev.dataLen++
	}
	ev.dataLen += int64(len(value))
	if ev.dataLen > int64(r.max) {
		r.drop()
	}
	if !ev.tooLarge {
		if ev.data == nil && !sep && r.spilled && len(value) > maxBufferSize {
			// A long line is already a copy: hand it over rather than copy
			// it again, so that a large event costs its size once. (A
			// shorter one is copied, and r.line kept for the next.)
			ev.data = value
			r.line = nil
			return
		}
		if sep {
			ev.data = append(ev.data, '\n')
		}
		ev.data = append(ev.data, value...)
		return
	}
	if ev.prefixDone {
		return
	}
	if sep {
		ev.prefix = appendPrefix(ev.prefix, newline)
	}
	ev.prefix = appendPrefix(ev.prefix, value)
	// After a line that was cut, what follows is not the data's next bytes.
	ev.prefixDone = cut || len(ev.prefix) == prefixSize
}

// drop marks the event as over the limit: from now on its data is counted,
// not kept, beyond the prefix.
func (r *Reader) drop() {
	ev := &r.ev
	if ev.tooLarge {
		return
	}
	ev.tooLarge = true
	ev.prefix = appendPrefix(nil, ev.data)
	ev.data = nil
}

func appendPrefix(prefix, b []byte) []byte {
	if room := prefixSize - len(prefix); room > 0 && len(b) > 0 {
		prefix = append(prefix, b[:min(room, len(b))]...)
	}
	return prefix
}

func (r *Reader) dropEvent() error {
	ev := &r.ev
	err := &TooLargeError{
		Size:       max(ev.dataLen, ev.longest),
		Limit:      r.max,
		EventID:    ev.id,
		HasEventID: ev.hasID,
		Retry:      ev.retry,
		HasRetry:   ev.hasRetry,
		Prefix:     ev.prefix,
	}
	r.resetEvent()
	return err
}

func (r *Reader) takeEvent() Event {
	ev := &r.ev
	e := Event{ID: ev.id, HasID: ev.hasID, Type: ev.typ, Data: ev.data, Retry: ev.retry, HasRetry: ev.hasRetry}
	r.resetEvent()
	return e
}

func (r *Reader) resetEvent() {
	r.ev = pending{}
	if cap(r.line) > maxBufferSize {
		// Keep no large line buffer between events.
		r.line = nil
	}
}

// eventType returns the type as a string, without allocating for the types
// MCP streams carry.
func eventType(b []byte) string {
	switch string(b) {
	case "message":
		return "message"
	case "endpoint":
		return "endpoint"
	}
	return string(b)
}

// parseRetry parses a retry value: one or more ASCII digits, milliseconds. A
// value too large for a time.Duration saturates.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if ms > (maxRetry-d)/10 {
			ms = maxRetry
		} else {
			ms = ms*10 + d
		}
	}
	return time.Duration(ms) * time.Millisecond, true
}

// readLine reads the next line and returns it without its end, and n, the
// line's length. line is a view of r.buf or r.line, valid until the next
// call, and holds at most r.max bytes: n > r.max means the rest of the line
// was read and discarded. At the end of input, or when the underlying reader
// fails, it returns the error with what it read of an unfinished line.
func (r *Reader) readLine() (line []byte, n int64, err error) {
	if !r.started {
		r.skipBOM()
	}
	r.line = r.line[:0]
	r.spilled = false
	first := true
	for {
		if r.rpos == r.wpos {
			if r.err != nil {
				return r.line, n, r.err
			}
			r.fill()
			continue
		}
		if r.skipLF {
			r.skipLF = false
			if r.buf[r.rpos] == '\n' {
				r.rpos++
				continue
			}
		}
		b := r.buf[r.rpos:r.wpos]
		end, next := r.lineEnd(b)
		seg := b[:end]
		n += int64(len(seg))
		ended := next > end
		if ended && first {
			// The common case: the whole line is in the buffer.
			r.rpos += next
			return seg[:min(len(seg), r.max)], n, nil
		}
		first = false
		r.spilled = true
		if room := r.max - len(r.line); room > 0 {
			r.line = append(r.line, seg[:min(len(seg), room)]...)
		}
		r.rpos += next
		if ended {
			return r.line, n, nil
		}
		r.grow = true
	}
}

// lineEnd finds the end of the line that starts b, the unread part of
// r.buf. It returns the line's length in b and how many bytes to consume:
// more than the length when the line ends in b.
func (r *Reader) lineEnd(b []byte) (end, next int) {
	if r.lf < r.rpos {
		// Remember where the next '\n' is, so that a stream of lines ended
		// by "\r" alone does not rescan the buffer for each line.
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			r.lf = r.rpos + i
		} else {
			r.lf = r.wpos
		}
	}
	lf := r.lf - r.rpos
	if cr := bytes.IndexByte(b[:lf], '\r'); cr >= 0 {
		switch {
		case cr+1 == len(b):
			r.skipLF = true
			return cr, cr + 1
		case b[cr+1] == '\n':
			return cr, cr + 2
		}
		return cr, cr + 1
	}
	if lf < len(b) {
		return lf, lf + 1
	}
	return len(b), len(b)
}

// skipBOM skips a UTF-8 byte order mark at the start of the stream.
func (r *Reader) skipBOM() {
	r.started = true
	for r.wpos-r.rpos < len(bom) && bytes.HasPrefix(bom, r.buf[r.rpos:r.wpos]) && r.err == nil {
		r.fill()
	}
	if bytes.HasPrefix(r.buf[r.rpos:r.wpos], bom) {
		r.rpos += len(bom)
	}
}

// fill reads more input into r.buf, after the unread bytes. It sets r.err
// when the underlying reader ends or fails.
func (r *Reader) fill() {
	if r.rpos == r.wpos {
		r.rpos, r.wpos = 0, 0
		if r.buf == nil {
			r.buf = make([]byte, minBufferSize)
		} else if r.grow && len(r.buf) < maxBufferSize {
			r.buf = make([]byte, min(2*len(r.buf), maxBufferSize))
		}
		r.grow = false
	}
	r.lf = -1
	for range 100 {
		n, err := r.rd.Read(r.buf[r.wpos:])
		if n < 0 || n > len(r.buf)-r.wpos {
			r.err = errInvalidRead
			return
		}
		r.wpos += n
		if err != nil {
			r.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}
