package toolpin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalJSON returns the canonical form of one JSON value: RFC 8785
// (JCS) serialization. Object members are sorted by the UTF-16 code units
// of their names at every depth, there is no whitespace between tokens,
// strings are escaped minimally (only '"', '\\' and control characters,
// the latter as \b \t \n \f \r or \u00xx) and numbers are written as
// ECMAScript writes an IEEE-754 double (1.0 → 1, 1e2 → 100, -0 → 0,
// 1.5e-7 → 1.5e-7).
//
// Where JCS would reject its input, CanonicalJSON stays total, so that a
// pin never depends on a rejected definition:
//   - an object with a duplicate member name keeps every member, sorted
//     stably (same names in their order of appearance), so no byte that
//     some parser would read is left out of the hash;
//   - a number beyond the range of a double is written as spelled, with a
//     lower-case exponent;
//   - invalid UTF-8 and lone surrogate escapes become U+FFFD, as
//     encoding/json decodes them.
//
// Two integers that differ only beyond a double's 53-bit precision have one
// canonical form, as in every JCS implementation.
//
// It returns ErrInvalidJSON (wrapped) when raw is not exactly one JSON
// value. It is safe for concurrent use.
func CanonicalJSON(raw []byte) ([]byte, error) {
	n, err := parseJSON(raw)
	if err != nil {
		return nil, err
	}
	return appendCanonical(nil, n), nil
}

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is a decoded JSON value that keeps duplicate object members and
// numbers as written; encoding/json's any loses both.
type node struct {
	kind kind
	b    bool
	s    string // a string's value, or a number as written
	arr  []*node
	obj  []member
}

type member struct {
	key string
	val *node
}

// get returns the value of the last member named key, as JavaScript and
// encoding/json read a duplicate name, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i := len(n.obj) - 1; i >= 0; i-- {
		if n.obj[i].key == key {
			return n.obj[i].val
		}
	}
	return nil
}

func parseJSON(raw []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	n, err := parseValue(dec, tok)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one value", ErrInvalidJSON)
	}
	return n, nil
}

func parseValue(dec *json.Decoder, tok json.Token) (*node, error) {
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull}, nil
	case bool:
		return &node{kind: kindBool, b: t}, nil
	case json.Number:
		return &node{kind: kindNumber, s: string(t)}, nil
	case string:
		return &node{kind: kindString, s: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kindArray}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(dec, tok)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		case '{':
			n := &node{kind: kindObject}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := tok.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v", tok)
				}
				tok, err = dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(dec, tok)
				if err != nil {
					return nil, err
				}
				n.obj = append(n.obj, member{key, v})
			}
			_, err := dec.Token() // '}'
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func appendCanonical(buf []byte, n *node) []byte {
	switch n.kind {
	case kindNull:
		return append(buf, "null"...)
	case kindBool:
		return strconv.AppendBool(buf, n.b)
	case kindNumber:
		return append(buf, canonicalNumber(n.s)...)
	case kindString:
		return appendString(buf, n.s)
	case kindArray:
		buf = append(buf, '[')
		for i, v := range n.arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonical(buf, v)
		}
		return append(buf, ']')
	default:
		buf = append(buf, '{')
		for i, m := range sortedMembers(n.obj) {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, m.key)
			buf = append(buf, ':')
			buf = appendCanonical(buf, m.val)
		}
		return append(buf, '}')
	}
}

// sortedMembers sorts by UTF-16 code units, as JCS requires; it differs
// from Go's byte order only between U+E000–U+FFFF and supplementary
// characters. The sort is stable so duplicate names keep their order.
func sortedMembers(obj []member) []member {
	out := slices.Clone(obj)
	slices.SortStableFunc(out, func(a, b member) int { return compareUTF16(a.key, b.key) })
	return out
}

func compareUTF16(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// canonicalNumber writes a JSON number as ECMAScript's Number.prototype
// .toString writes the double it denotes (RFC 8785 section 3.2.2.3).
func canonicalNumber(lit string) string {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		// Out of a double's range: JCS has no form for it. Keep the
		// spelling so the hash still changes with the value.
		return strings.ToLower(lit)
	}
	if f == 0 {
		return "0" // also -0
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	format := byte('e')
	if f >= 1e-6 && f < 1e21 {
		format = 'f'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if e := strings.IndexByte(s, 'e'); e > 0 && e+2 < len(s) && s[e+2] == '0' {
		s = s[:e+2] + s[e+3:] // Go writes e-07, ECMAScript e-7
	}
	return sign + s
}

const hexDigits = "0123456789abcdef"

func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			buf = append(buf, '\\', '"')
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\r':
			buf = append(buf, '\\', 'r')
		default:
			if c < 0x20 {
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				buf = append(buf, c)
			}
		}
		i++
	}
	return append(buf, '"')
}
