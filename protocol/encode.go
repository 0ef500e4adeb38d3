package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The Append functions write one compact JSON-RPC frame to dst and return the
// extended slice. They add no trailing newline: framing is the transport's.
// They use no reflection and, given a dst with room, allocate nothing.
//
// Raw arguments (params, results, ids, data) are copied as they are: the
// caller passes valid JSON. Because a stdio frame must not contain a newline,
// any raw '\n' byte in them is written as a space. In valid JSON a raw newline
// can only be whitespace, so this never changes the value, and pretty-printed
// params cannot split a frame in two.

// AppendRequest appends a request. Empty params (nil, or only whitespace) are
// omitted.
func AppendRequest(dst []byte, id int64, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":`...)
	dst = appendString(dst, method)
	if !isBlank(params) {
		dst = append(dst, `,"params":`...)
		dst = appendRaw(dst, params)
	}
	return append(dst, '}')
}

// AppendNotification appends a notification. Empty params are omitted.
func AppendNotification(dst []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = appendString(dst, method)
	if !isBlank(params) {
		dst = append(dst, `,"params":`...)
		dst = appendRaw(dst, params)
	}
	return append(dst, '}')
}

// AppendResult appends a result response to the request with the given raw
// id (as Classify returned it). An empty result is written as {}, the result
// of ping.
func AppendResult(dst []byte, id json.RawMessage, result json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":`...)
	if isBlank(result) {
		dst = append(dst, "{}"...)
	} else {
		dst = appendRaw(dst, result)
	}
	return append(dst, '}')
}

// AppendError appends an error response. An empty id is written as null, as
// for a request whose id could not be read. Empty data is omitted.
func AppendError(dst []byte, id json.RawMessage, code int64, message string, data json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, code, 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, message)
	if !isBlank(data) {
		dst = append(dst, `,"data":`...)
		dst = appendRaw(dst, data)
	}
	return append(dst, "}}"...)
}

// AppendCallTool appends a whole tools/call request:
//
//	{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{…},"_meta":{…}}}
//
// Empty or null arguments are written as {}; empty meta is omitted. This is
// the hot path of every tool call.
func AppendCallTool(dst []byte, id int64, tool string, arguments json.RawMessage, meta json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":"tools/call","params":{"name":`...)
	dst = appendString(dst, tool)
	dst = append(dst, `,"arguments":`...)
	if isBlank(arguments) || isNull(bytes.TrimSpace(arguments)) {
		dst = append(dst, "{}"...)
	} else {
		dst = appendRaw(dst, arguments)
	}
	if !isBlank(meta) {
		dst = append(dst, `,"_meta":`...)
		dst = appendRaw(dst, meta)
	}
	return append(dst, "}}"...)
}

func appendID(dst []byte, id json.RawMessage) []byte {
	if isBlank(id) {
		return append(dst, "null"...)
	}
	return appendRaw(dst, id)
}

// appendRaw appends raw JSON, turning raw newlines into spaces (see above).
func appendRaw(dst []byte, raw []byte) []byte {
	start := len(dst)
	dst = append(dst, raw...)
	if bytes.IndexByte(raw, '\n') >= 0 {
		out := dst[start:]
		for i, c := range out {
			if c == '\n' {
				out[i] = ' '
			}
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Like encoding/json it writes
// invalid UTF-8 as U+FFFD and escapes U+2028 and U+2029; unlike it, it leaves
// <, > and & alone, since frames are never embedded in HTML.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
