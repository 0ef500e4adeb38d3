package sse

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzReader feeds the Reader arbitrary streams in arbitrary chunks and
// checks it against referenceEvents, a plain reading of the standard over the
// whole input, and that nothing it returns is over the limit. More seeds
// live in testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: hello\n\n",
		"id: 0\nretry: 1000\ndata:\n\n",
		"\xEF\xBB\xBFevent: endpoint\r\ndata: /messages?session=1\r\n\r\n",
		": comment\rdata: a\rdata: b\r\r",
		"data: 123456789\n\ndata: ok\n\n",
		"id: 1\x00\nretry: 9x\ndata\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: unfinished",
	} {
		f.Add([]byte(s), uint16(8), uint8(0))
		f.Add([]byte(s), uint16(0), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, limit uint16, chunk uint8) {
		maxEvent := int(limit % 1024) // 0: the default limit
		var rd io.Reader = bytes.NewReader(in)
		if chunk > 0 {
			rd = &chunkReader{in: in, n: int(chunk)}
		}
		got, end := collect(t, rd, maxEvent)
		if maxEvent == 0 {
			maxEvent = 16 << 20
		}
		for _, item := range got {
			switch v := item.(type) {
			case Event:
				if len(v.Data) > maxEvent || len(v.ID) > maxEvent || len(v.Type) > maxEvent {
					t.Fatalf("event over the limit %d: %+v", maxEvent, v)
				}
			case TooLargeError:
				if v.Size <= int64(maxEvent) || v.Limit != maxEvent || len(v.Prefix) > prefixSize {
					t.Fatalf("bad error for limit %d: %+v", maxEvent, v)
				}
			}
		}
		want, joined, wantEnd := referenceEvents(in, maxEvent)
		if end != wantEnd {
			t.Fatalf("end = %v, want %v", end, wantEnd)
		}
		// Prefix is checked apart: it must start the event's whole data.
		for i := range min(len(got), len(want)) {
			g, gok := got[i].(TooLargeError)
			if _, wok := want[i].(TooLargeError); gok && wok {
				if !bytes.HasPrefix(joined[i], g.Prefix) {
					t.Fatalf("item %d: Prefix %q does not start the data %q", i, g.Prefix, joined[i])
				}
			}
		}
		if diff := cmp.Diff(want, got, equalBytes, cmpopts.IgnoreFields(TooLargeError{}, "Prefix")); diff != "" {
			t.Fatalf("Reader and reference differ on %q, limit %d (-reference +reader):\n%s", in, maxEvent, diff)
		}
	})
}

// chunkReader returns at most n bytes per Read, and io.EOF with the last
// ones.
type chunkReader struct {
	in []byte
	n  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	k := copy(p[:min(len(p), c.n)], c.in)
	c.in = c.in[k:]
	if len(c.in) == 0 {
		return k, io.EOF
	}
	return k, nil
}

// referenceEvents reads a whole stream as the WHATWG standard says, with
// the Reader's additions (priming events, the limits, the end at the first
// event over a limit). For each item it also returns the event's whole
// data, over the limit or not, and it returns how the stream ends.
func referenceEvents(in []byte, maxEvent int) (items []any, joined [][]byte, end error) {
	in = bytes.TrimPrefix(in, bom)
	var lines [][]byte
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			break // an unfinished line
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	if len(in) > maxEvent {
		// An unfinished line is dropped at the end of input, unless it
		// passes the limit first.
		lines = append(lines, in)
	}
	maxStream := 2*int64(maxEvent) + streamSlack
	var (
		ev      pending
		data    [][]byte // whole values
		tooLong bool
	)
	reset := func() { ev, data, tooLong = pending{}, nil, false }
	field := func(kept, line []byte, cut bool) {
		name, value, _ := bytes.Cut(kept, []byte(":"))
		wholeValue := line[min(len(name)+1, len(line)):]
		if bytes.HasPrefix(value, []byte(" ")) {
			value = value[1:]
			wholeValue = wholeValue[1:]
		}
		if len(name) == len(kept) { // no colon
			value, wholeValue = nil, nil
		}
		switch string(name) {
		case "data":
			if len(data) > 0 {
				ev.dataLen++
			}
			ev.dataLen += int64(len(value))
			data = append(data, wholeValue)
		case "event":
			if !cut {
				ev.typ = string(value)
			}
		case "id":
			if !cut && !bytes.Contains(value, []byte{0}) {
				ev.id, ev.hasID = string(value), true
			}
		case "retry":
			if d, ok := parseRetry(value); ok && !cut {
				ev.retry, ev.hasRetry = d, true
			}
		}
	}
	for _, line := range lines {
		if len(line) == 0 {
			if len(data) > 0 || ev.hasID || ev.hasRetry {
				e := Event{ID: ev.id, HasID: ev.hasID, Type: ev.typ, Retry: ev.retry, HasRetry: ev.hasRetry}
				if d := bytes.Join(data, newline); len(d) > 0 {
					e.Data = d
				}
				items = append(items, e)
				joined = append(joined, e.Data)
			}
			reset()
			continue
		}
		kept, cut := line, len(line) > maxEvent
		if cut {
			// The Reader reads one byte past the limit, and no more.
			kept = line[:maxEvent]
			tooLong = true
			ev.longest = int64(maxEvent) + 1
		}
		ev.stream += int64(len(kept)) + 1
		if cut {
			ev.stream++
		}
		if kept[0] != ':' {
			field(kept, line, cut)
		}
		if tooLong || ev.dataLen > int64(maxEvent) || ev.stream > maxStream {
			e := TooLargeError{
				Size: max(ev.dataLen, ev.longest), Limit: maxEvent,
				EventID: ev.id, HasEventID: ev.hasID, Retry: ev.retry, HasRetry: ev.hasRetry,
			}
			if !tooLong && ev.dataLen <= int64(maxEvent) {
				e.Size, e.Stream = ev.stream, true
			}
			items = append(items, e)
			joined = append(joined, bytes.Join(data, newline))
			return items, joined, ErrAbandoned
		}
	}
	return items, joined, io.EOF
}
