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
	// streamSlack is what an event may take on the stream beyond twice the
	// limit (field names, comments, line ends) before it is cut.
	streamSlack = maxBufferSize
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
// the moment an event passes the limit it stops reading, so that a server
// that sends an endless line or an endless event costs about the limit, in
// memory and in bytes read, never the event.
//
// A Reader is not safe for concurrent use; one goroutine owns it. Next
// blocks in the underlying reader and does not watch a context: to unblock
// it, close the reader (the response body).
type Reader struct {
	rd        io.Reader
	max       int
	maxStream int64 // bytes of stream one event may take
	abandoned bool  // an event passed the limit: nothing more is read

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

	stream   int64 // bytes of stream taken: its lines, one per line end
	tooLarge bool
	longest  int64 // the length of a line over the limit, as far as read
	prefix   []byte
}

// NewReader returns a Reader that rejects events whose data, or any line,
// is longer than maxEvent bytes, and events that take more than twice
// maxEvent plus 64 KiB of stream (comments, fields, line ends included)
// without their blank line. maxEvent <= 0 means protocol.DefaultMaxFrame
// (16 MiB), the limit stdio frames have.
func NewReader(r io.Reader, maxEvent int) *Reader {
	if maxEvent <= 0 {
		maxEvent = protocol.DefaultMaxFrame
	}
	return &Reader{rd: r, max: maxEvent, maxStream: 2*int64(maxEvent) + streamSlack, lf: -1}
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
// The moment an event passes the limit — its data, one of its lines
// (comments included), or what it takes of the stream without its blank
// line — Next stops reading and returns a *TooLargeError
// (errors.Is(err, protocol.ErrFrameTooLarge)). The rest of the event, and
// of the stream, is never read: the caller should close the stream (the
// response body) at once, which drops the connection. Every later call
// returns ErrAbandoned.
//
// At the end of input an event without its blank line is discarded, as in a
// browser, and Next returns io.EOF, from then on at every call; the
// underlying reader's error is returned the same way.
func (r *Reader) Next() (Event, error) {
	if r.abandoned {
		return Event{}, ErrAbandoned
	}
	for {
		line, n, err := r.readLine()
		if err != nil {
			r.resetEvent()
			return Event{}, err
		}
		ev := &r.ev
		if n == 0 {
			if ev.hasData || ev.hasID || ev.hasRetry {
				return r.takeEvent(), nil
			}
			r.resetEvent()
			continue
		}
		ev.stream += n + 1
		r.field(line, n)
		if ev.tooLarge || ev.stream > r.maxStream {
			return Event{}, r.abandon()
		}
	}
}

// field handles one line of n bytes, of which line holds the first r.max:
// n > r.max means the line passed the limit and the rest of it was not read.
func (r *Reader) field(line []byte, n int64) {
	ev := &r.ev
	cut := n > int64(r.max)
	if cut {
		r.drop()
		ev.longest = n
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
		r.addData(value)
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
// over the limit, adds what there is of it to the prefix.
func (r *Reader) addData(value []byte) {
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
	if sep {
		ev.prefix = appendPrefix(ev.prefix, newline)
	}
	ev.prefix = appendPrefix(ev.prefix, value)
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

// abandon ends the stream at an event over the limit.
func (r *Reader) abandon() error {
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
	if !ev.tooLarge {
		err.Size, err.Stream = ev.stream, true
	}
	r.abandoned = true
	r.resetEvent()
	r.line, r.buf = nil, nil
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
// call. A line longer than r.max is not read to its end: readLine stops
// once it has read r.max+1 bytes of it, returns the first r.max, and
// n = r.max+1. At the end of input, or when the underlying reader fails, it
// returns the error with what it read of an unfinished line.
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
		if room := r.max - int(n); len(seg) > room {
			// Past the limit: what is left of the line stays unread.
			r.rpos += room + 1
			if first {
				return seg[:room], int64(r.max) + 1, nil
			}
			r.spilled = true
			r.line = append(r.line, seg[:room]...)
			return r.line, int64(r.max) + 1, nil
		}
		n += int64(len(seg))
		ended := next > end
		if ended && first {
			// The common case: the whole line is in the buffer.
			r.rpos += next
			return seg, n, nil
		}
		first = false
		r.spilled = true
		r.line = append(r.line, seg...)
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
