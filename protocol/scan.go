package protocol

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// This file holds a small validating JSON scanner. Classify and SniffID use it
// to walk the top level of a frame and step over member values without
// decoding them. It accepts exactly what encoding/json accepts (the fuzz test
// checks this against json.Valid and json.Unmarshal), including its nesting
// limit, so a frame that classifies is a frame any later json.Unmarshal of a
// payload can decode.

// maxDepth is encoding/json's nesting limit; the frame's top-level object
// counts as depth 1.
const maxDepth = 10000

// Constants for the word-at-a-time string scan.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString steps over the string whose opening quote is at b[i]. It returns
// the index after the closing quote and whether the string holds an escape.
// On failure, end is the offset of the offending byte.
func skipString(b []byte, i int) (end int, escaped, ok bool) {
	i++
	for {
		// Eight bytes at a time until one is a quote, a backslash or a control
		// byte. The lowest flagged byte of each mask is exact, so the lowest
		// flagged byte of their union is a real hit.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (lsb * '"')
			s := x ^ (lsb * '\\')
			m := ((x - lsb*0x20) &^ x) | ((q - lsb) &^ q) | ((s - lsb) &^ s)
			if m &= msb; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return len(b), escaped, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return len(b), escaped, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, escaped, false
				}
				i += 6
			default:
				return i + 1, escaped, false
			}
		case c < 0x20:
			return i, escaped, false
		default:
			i++
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// skipNumber steps over the number starting at b[i]. It does not look at the
// byte after the number; the caller checks that a delimiter follows.
func skipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func skipLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// skipValue steps over the JSON value starting at b[i] (which must not be
// whitespace) and returns the index after it. depth is the nesting depth of
// the container holding the value. It keeps no recursion, so a hostile frame
// cannot grow the goroutine stack; the container stack is a bit set.
func skipValue(b []byte, i, depth int) (int, bool) {
	var (
		objects uint64   // bit k: level k opened in this call is an object
		deeper  []uint64 // levels from 64 on, only for deeply nested values
		n       int      // levels open
		ok      bool
		obj     bool
	)
value:
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; c {
	case '"':
		if i, _, ok = skipString(b, i); !ok {
			return i, false
		}
	case '{', '[':
		if depth+n+1 > maxDepth {
			return i, false
		}
		obj = c == '{'
		if n < 64 {
			if obj {
				objects |= 1 << n
			} else {
				objects &^= 1 << n
			}
		} else {
			w, bit := (n-64)/64, uint((n-64)%64)
			if w == len(deeper) {
				deeper = append(deeper, 0)
			}
			if obj {
				deeper[w] |= 1 << bit
			} else {
				deeper[w] &^= 1 << bit
			}
		}
		n++
		i = skipSpace(b, i+1)
		if i < len(b) && (obj && b[i] == '}' || !obj && b[i] == ']') {
			i++
			n--
			goto after
		}
		if obj {
			goto key
		}
		goto value
	case 't':
		if i, ok = skipLiteral(b, i, "true"); !ok {
			return i, false
		}
	case 'f':
		if i, ok = skipLiteral(b, i, "false"); !ok {
			return i, false
		}
	case 'n':
		if i, ok = skipLiteral(b, i, "null"); !ok {
			return i, false
		}
	default:
		if i, ok = skipNumber(b, i); !ok {
			return i, false
		}
	}
after:
	if n == 0 {
		return i, true
	}
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, false
	}
	if n <= 64 {
		obj = objects&(1<<(n-1)) != 0
	} else {
		k := n - 1 - 64
		obj = deeper[k/64]&(1<<uint(k%64)) != 0
	}
	switch b[i] {
	case ',':
		i = skipSpace(b, i+1)
		if obj {
			goto key
		}
		goto value
	case '}':
		if !obj {
			return i, false
		}
	case ']':
		if obj {
			return i, false
		}
	default:
		return i, false
	}
	i++
	n--
	goto after
key:
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	if i, _, ok = skipString(b, i); !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	i = skipSpace(b, i+1)
	goto value
}

// member is one top-level member of an object, as spans of the scanned bytes.
type member struct {
	key   []byte // the key without quotes, unescaped
	value []byte // the raw value, no surrounding whitespace
	end   int    // index after the value
	next  int    // index after the value and any whitespace
}

// scanMember reads `"key" : value` starting at b[i] (a quote is expected).
// The returned offset on failure points at the offending byte.
func scanMember(b []byte, i int) (member, int, bool) {
	var m member
	if i >= len(b) || b[i] != '"' {
		return m, i, false
	}
	end, esc, ok := skipString(b, i)
	if !ok {
		return m, end, false
	}
	m.key = b[i+1 : end-1]
	if esc {
		m.key = unescape(b[i:end])
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return m, i, false
	}
	i = skipSpace(b, i+1)
	end, ok = skipValue(b, i, 1)
	if !ok {
		return m, end, false
	}
	m.value, m.end = b[i:end], end
	m.next = skipSpace(b, end)
	return m, 0, true
}

// unescape decodes a quoted JSON string that holds escapes. It is the rare
// path: MCP keys and method names are plain ASCII.
func unescape(quoted []byte) []byte {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

// decodeString decodes a quoted JSON string already validated by skipString.
// Like encoding/json it replaces invalid UTF-8 with U+FFFD.
func decodeString(quoted []byte) string {
	raw := quoted[1 : len(quoted)-1]
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			var s string
			_ = json.Unmarshal(quoted, &s)
			return s
		}
	}
	return string(raw)
}

// nestingAt returns how many objects and arrays are open at b[off], the
// frame's own object included. It is for error messages: b[:off] is a
// prefix the scanner accepted, so strings are well formed in it.
func nestingAt(b []byte, off int) int {
	depth, i := 0, 0
	for i < off {
		switch b[i] {
		case '"':
			end, _, ok := skipString(b[:off], i)
			if !ok {
				return depth
			}
			i = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		i++
	}
	return depth
}
