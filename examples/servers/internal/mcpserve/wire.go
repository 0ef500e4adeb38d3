package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// LatestProtocolVersion is the MCP revision this framework speaks.
const LatestProtocolVersion = "2025-11-25"

// DefaultMaxLineBytes is the longest input line accepted when
// Options.MaxLineBytes is zero.
const DefaultMaxLineBytes = 64 << 20

var jsonNull = json.RawMessage("null")

// incoming is any JSON-RPC message read from the client.
type incoming struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

func (m *incoming) hasID() bool { return len(m.ID) > 0 && !bytes.Equal(m.ID, jsonNull) }

// outgoing is any JSON-RPC message written to the client.
type outgoing struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// encodeFrame returns v as one compact JSON line ending in '\n'. JSON
// encoding escapes control characters inside strings, so the frame holds no
// other newline.
func encodeFrame(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeJSON is json.Marshal without HTML escaping, as frames are written.
func encodeJSON(v any) (json.RawMessage, error) {
	b, err := encodeFrame(v)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b, []byte{'\n'}), nil
}

var errLineTooLong = errors.New("line too long")

// lineReader reads newline-delimited lines of at most max bytes. A longer
// line is consumed to its end and reported as errLineTooLong, so one bad
// frame does not end the stream.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline. The slice is valid until
// the following call.
func (r *lineReader) next() ([]byte, error) {
	r.buf = r.buf[:0]
	tooLong := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(r.buf)+len(chunk) > r.max+1 { // +1: the newline itself
				tooLong = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return bytes.TrimSuffix(r.buf, []byte{'\n'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return nil, errLineTooLong
			}
			if len(r.buf) > 0 {
				return r.buf, nil
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}
