package protocol

import (
	"bytes"
	"encoding/json"
)

// SniffID returns the top-level "id" of a frame of which only a prefix is
// known (FrameTooLargeError.Prefix), so that the one call whose response was
// oversized can be failed. It walks the object's members from the start and
// returns a copy of the id's raw bytes once it reaches a complete string or
// number id. It returns nil when the prefix ends first, when the prefix is
// not the start of a JSON object, or when the id is null or not a scalar.
func SniffID(prefix []byte) json.RawMessage {
	i := skipSpace(prefix, 0)
	if i >= len(prefix) || prefix[i] != '{' {
		return nil
	}
	i = skipSpace(prefix, i+1)
	for i < len(prefix) && prefix[i] == '"' {
		mb, _, ok := scanMember(prefix, i)
		if !ok {
			return nil
		}
		if string(mb.key) == "id" {
			// A number is complete only if a byte follows it: "id":12 may be
			// the start of "id":123.
			if mb.value[0] != '"' && mb.end == len(prefix) {
				return nil
			}
			return scalarID(mb.value)
		}
		i = mb.next
		if i >= len(prefix) || prefix[i] != ',' {
			return nil
		}
		i = skipSpace(prefix, i+1)
	}
	return nil
}

// RecoverID returns the top-level "id" of a whole frame that Classify
// rejected, so that the one request the frame was meant to answer can fail
// at once rather than wait out its timeout. It reads the id as
// FrameTooLargeError.ID does, from the frame's head (SniffID) or else its
// tail (SniffTrailingID), with two guards that a frame known to be broken
// needs:
//
//   - the tail is read only when the frame's brackets close: the tail of a
//     frame cut short may be the end of a nested object with an "id" of its
//     own;
//   - a frame with a top-level "method" before the point where it breaks is
//     a request or a notification, which answers nothing: nil.
//
// The walks are iterative and give up at the nesting limit, so a frame
// nested 100,000 levels deep costs a few linear scans and no stack. It
// returns nil when no string or number id can be read.
func RecoverID(frame []byte) json.RawMessage {
	method := false
	eachMember(frame, func(m member, _ []byte) {
		method = method || string(m.key) == "method"
	})
	if method {
		return nil
	}
	if id := SniffID(frame); id != nil {
		return id
	}
	if !closes(frame) {
		return nil
	}
	return SniffTrailingID(frame)
}

// closes reports whether b is one object as far as its brackets tell: it
// starts with "{" (after whitespace), and outside strings its depth comes
// back to zero only at its last bracket, after which there is only
// whitespace. It does not check that brackets match in kind, nor anything
// else of JSON.
func closes(b []byte) bool {
	start := skipSpace(b, 0)
	if start == len(b) || b[start] != '{' {
		return false
	}
	depth := 0
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			// To the next quote not escaped: a string cut short runs to
			// the end, and the brackets do not close.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return skipSpace(b, i+1) == len(b)
			}
		}
	}
	return false
}

// SniffTrailingID returns the top-level "id" of a frame of which only the
// last bytes are known (FrameTooLargeError.Suffix). Servers built on the
// TypeScript SDK write the id last: {"result":{…},"jsonrpc":"2.0","id":7}.
// Reading backwards from the closing brace, it steps over trailing members
// whose values are strings, numbers or literals until it finds "id"; it gives
// up (nil) at the first object or array value, which cannot be read backwards
// safely. On any suffix of a valid JSON object the answer is the object's id
// or nil, never another value: a backwards parse that would need bytes before
// the cut gives up.
func SniffTrailingID(suffix []byte) json.RawMessage {
	i := skipSpaceBack(suffix, len(suffix)-1)
	if i < 0 || suffix[i] != '}' {
		return nil
	}
	i = skipSpaceBack(suffix, i-1)
	for i >= 0 {
		vstart, ok := scalarStartBack(suffix, i)
		if !ok {
			return nil
		}
		value := suffix[vstart : i+1]
		i = skipSpaceBack(suffix, vstart-1)
		if i < 0 || suffix[i] != ':' {
			return nil
		}
		i = skipSpaceBack(suffix, i-1)
		if i < 0 || suffix[i] != '"' {
			return nil
		}
		kstart, ok := stringStartBack(suffix, i)
		if !ok {
			return nil
		}
		key := suffix[kstart : i+1]
		if string(key) == `"id"` || bytes.IndexByte(key, '\\') >= 0 && string(unescape(key)) == "id" {
			return scalarID(value)
		}
		i = skipSpaceBack(suffix, kstart-1)
		if i < 0 || suffix[i] != ',' {
			return nil // the object's opening brace, or not an object
		}
		i = skipSpaceBack(suffix, i-1)
	}
	return nil
}

// scalarID returns a copy of a string or number id, nil for anything else.
func scalarID(v []byte) json.RawMessage {
	switch v[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return bytes.Clone(v)
	}
	return nil
}

func skipSpaceBack(b []byte, i int) int {
	for i >= 0 {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i--
		default:
			return i
		}
	}
	return i
}

// scalarStartBack returns where the string, number or literal ending at b[i]
// starts, checking it forwards.
func scalarStartBack(b []byte, i int) (int, bool) {
	switch c := b[i]; {
	case c == '"':
		return stringStartBack(b, i)
	case c == 'e' || c == 'l':
		for _, lit := range []string{"true", "false", "null"} {
			if s := i + 1 - len(lit); s >= 0 && string(b[s:i+1]) == lit {
				return s, true
			}
		}
		return 0, false
	case '0' <= c && c <= '9':
		s := i
		for s > 0 {
			switch b[s-1] {
			case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '-', '+', '.', 'e', 'E':
				s--
				continue
			}
			break
		}
		if end, ok := skipNumber(b, s); ok && end == i+1 {
			return s, true
		}
	}
	return 0, false
}

// stringStartBack returns the index of the opening quote of the string whose
// closing quote is b[i]. Inside a JSON string every quote is escaped, so the
// opening quote is the first one back that is preceded by an even number of
// backslashes.
func stringStartBack(b []byte, i int) (int, bool) {
	for j := i - 1; j >= 0; j-- {
		if b[j] != '"' {
			continue
		}
		k := j
		for k > 0 && b[k-1] == '\\' {
			k--
		}
		if k == 0 {
			// The run of backslashes may have begun before the cut: the
			// quote's parity is unknown. (A frame never starts with one.)
			return 0, false
		}
		if (j-k)%2 == 0 {
			if end, _, ok := skipString(b, j); ok && end == i+1 {
				return j, true
			}
			return 0, false
		}
	}
	return 0, false
}
