package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Editing JSON text in place: one member set or deleted, every other byte
// (comments, trailing commas, order, indentation) kept as it was, so that
// a command that adds a server to a person's file changes only that.

// memberSpan is where one object member is in the text: its key's opening
// quote, its value's first byte and the byte after its value.
type memberSpan struct {
	key                        string
	keyStart, valStart, valEnd int
}

// jsonText scans JSON with comments and trailing commas (the tools' files).
type jsonText struct {
	b []byte
	i int
}

// space skips whitespace and comments.
func (s *jsonText) space() {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.i++
		case c == '/' && s.i+1 < len(s.b) && s.b[s.i+1] == '/':
			for s.i < len(s.b) && s.b[s.i] != '\n' {
				s.i++
			}
		case c == '/' && s.i+1 < len(s.b) && s.b[s.i+1] == '*':
			end := bytes.Index(s.b[s.i+2:], []byte("*/"))
			if end < 0 {
				s.i = len(s.b)
				return
			}
			s.i += end + 4
		default:
			return
		}
	}
}

var errJSONText = errors.New("not valid JSON")

// str reads a string at s.i.
func (s *jsonText) str() (string, error) {
	start := s.i
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", errJSONText
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			var v string
			if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
				return "", errJSONText
			}
			return v, nil
		}
	}
	return "", errJSONText
}

// value skips one value at s.i.
func (s *jsonText) value() error {
	if s.i >= len(s.b) {
		return errJSONText
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, err := s.str()
		return err
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.i++
		for {
			s.space()
			if s.i >= len(s.b) {
				return errJSONText
			}
			if s.b[s.i] == closer {
				s.i++
				return nil
			}
			if c == '{' {
				if _, err := s.str(); err != nil {
					return err
				}
				s.space()
				if s.i >= len(s.b) || s.b[s.i] != ':' {
					return errJSONText
				}
				s.i++
				s.space()
			}
			if err := s.value(); err != nil {
				return err
			}
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
			}
		}
	default:
		start := s.i
		for s.i < len(s.b) && !strings.ContainsRune(" \t\r\n,]}/", rune(s.b[s.i])) {
			s.i++
		}
		if s.i == start {
			return errJSONText
		}
		return nil
	}
}

// members lists the members of the object whose '{' is at start, and
// returns the offset of its '}'.
func objectSpans(b []byte, start int) ([]memberSpan, int, error) {
	s := &jsonText{b: b, i: start}
	if start >= len(b) || b[start] != '{' {
		return nil, 0, errors.New("not an object")
	}
	s.i++
	var ms []memberSpan
	for {
		s.space()
		if s.i >= len(b) {
			return nil, 0, errJSONText
		}
		if b[s.i] == '}' {
			return ms, s.i, nil
		}
		m := memberSpan{keyStart: s.i}
		k, err := s.str()
		if err != nil {
			return nil, 0, err
		}
		m.key = k
		s.space()
		if s.i >= len(b) || b[s.i] != ':' {
			return nil, 0, errJSONText
		}
		s.i++
		s.space()
		m.valStart = s.i
		if err := s.value(); err != nil {
			return nil, 0, err
		}
		m.valEnd = s.i
		ms = append(ms, m)
		s.space()
		if s.i < len(b) && b[s.i] == ',' {
			s.i++
		}
	}
}

// topObject is the offset of the document's top-level '{'.
func topObject(b []byte) (int, error) {
	s := &jsonText{b: b}
	s.space()
	if s.i >= len(b) || b[s.i] != '{' {
		return 0, errors.New("the file's top level is not a JSON object")
	}
	return s.i, nil
}

// lineIndent is the whitespace that opens the line holding offset i.
func lineIndent(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	end := start
	for end < len(b) && (b[end] == ' ' || b[end] == '\t') {
		end++
	}
	return string(b[start:end])
}

// setJSONMember sets the member at path (each element a key, from the
// top-level object down) to value, creating the objects on the way that do
// not exist. value is compact or indented JSON; it is re-indented to fit.
func setJSONMember(b []byte, path []string, value json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}\n")
	}
	obj, err := topObject(b)
	if err != nil {
		return nil, err
	}
	for depth, key := range path {
		ms, end, err := objectSpans(b, obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(path[:depth], "."), err)
		}
		var found *memberSpan
		for i := range ms {
			if ms[i].key == key {
				found = &ms[i] // the last of repeated keys is the one read
			}
		}
		if found == nil {
			return insertMember(b, obj, ms, end, path[depth:], value)
		}
		if depth == len(path)-1 {
			indent := lineIndent(b, found.keyStart)
			v := reindent(value, indent, indentUnit(b, obj, ms))
			return splice(b, found.valStart, found.valEnd, v), nil
		}
		if b[found.valStart] != '{' {
			return nil, fmt.Errorf("%q is not an object", strings.Join(path[:depth+1], "."))
		}
		obj = found.valStart
	}
	return b, nil
}

// insertMember adds "rest[0]": {"rest[1]": … value} as the last member of
// the object at obj, whose members are ms and whose '}' is at end.
func insertMember(b []byte, obj int, ms []memberSpan, end int, rest []string, value json.RawMessage) ([]byte, error) {
	for i := len(rest) - 1; i >= 1; i-- {
		k, _ := json.Marshal(rest[i])
		value = json.RawMessage(`{` + string(k) + `:` + string(value) + `}`)
	}
	unit := indentUnit(b, obj, ms)
	closeIndent := lineIndent(b, end)
	var indent string
	if len(ms) > 0 {
		indent = lineIndent(b, ms[len(ms)-1].keyStart)
	} else {
		indent = lineIndent(b, obj) + unit
	}
	key, _ := json.Marshal(rest[0])
	member := string(key) + ": " + string(reindent(value, indent, unit))
	if len(ms) == 0 {
		// {} or { … comments … }: the member on a line of its own.
		return splice(b, obj+1, end, []byte("\n"+indent+member+"\n"+closeIndent)), nil
	}
	last := ms[len(ms)-1].valEnd
	s := &jsonText{b: b, i: last}
	s.space()
	if s.i < len(b) && b[s.i] == ',' { // a trailing comma: the new member goes after it
		at := restOfLine(b, s.i+1)
		return splice(b, at, at, []byte("\n"+indent+member+",")), nil
	}
	if !bytes.Contains(b[obj:end], []byte("\n")) {
		return splice(b, last, last, []byte(", "+member)), nil
	}
	// The comma after the last value, the member after the comment that
	// may end its line.
	at := restOfLine(b, last)
	b = splice(b, at, at, []byte("\n"+indent+member))
	return splice(b, last, last, []byte(",")), nil
}

// restOfLine is the end of the line i is on when only blanks and a //
// comment follow i there, else i.
func restOfLine(b []byte, i int) int {
	j := i
	for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
		j++
	}
	switch {
	case j < len(b) && (b[j] == '\n' || b[j] == '\r'):
		return j
	case j+1 < len(b) && b[j] == '/' && b[j+1] == '/':
		if nl := bytes.IndexByte(b[j:], '\n'); nl >= 0 {
			if nl > 0 && b[j+nl-1] == '\r' {
				return j + nl - 1
			}
			return j + nl
		}
		return len(b)
	}
	return i
}

// deleteJSONMember removes the member at path; found is false when there
// is none (and b is returned as it is).
func deleteJSONMember(b []byte, path []string) (out []byte, found bool, err error) {
	obj, err := topObject(b)
	if err != nil {
		return nil, false, err
	}
	for depth, key := range path {
		ms, end, err := objectSpans(b, obj)
		if err != nil {
			return nil, false, err
		}
		idx := -1
		for i := range ms {
			if ms[i].key == key {
				idx = i
			}
		}
		if idx < 0 {
			return b, false, nil
		}
		m := ms[idx]
		if depth < len(path)-1 {
			if b[m.valStart] != '{' {
				return b, false, nil
			}
			obj = m.valStart
			continue
		}
		// From the end of what comes before (the previous member's comma,
		// or the '{') to the end of this member and its comma, so that the
		// line it was on goes with it.
		from := obj + 1
		if idx > 0 {
			s := &jsonText{b: b, i: ms[idx-1].valEnd}
			s.space()
			if s.i < len(b) && b[s.i] == ',' {
				from = s.i + 1
			} else {
				from = ms[idx-1].valEnd
			}
		}
		s := &jsonText{b: b, i: m.valEnd}
		s.space()
		to := m.valEnd
		if s.i < len(b) && b[s.i] == ',' {
			to = s.i + 1
		}
		if idx == len(ms)-1 && idx > 0 && to == m.valEnd {
			// The last member, no trailing comma: the previous one's comma goes.
			prev := ms[idx-1].valEnd
			return splice(b, prev, to, nil), true, nil
		}
		if idx == 0 && len(ms) == 1 {
			return splice(b, obj+1, end, nil), true, nil
		}
		// Keep the line break that opened this member's line.
		if nl := bytes.LastIndexByte(b[from:m.keyStart], '\n'); nl >= 0 {
			from += nl
		}
		return splice(b, from, to, nil), true, nil
	}
	return b, false, nil
}

// indentUnit is one level of the file's indentation: the difference
// between an object's members' indentation and its own, else two spaces.
func indentUnit(b []byte, obj int, ms []memberSpan) string {
	if len(ms) > 0 {
		outer, inner := lineIndent(b, obj), lineIndent(b, ms[0].keyStart)
		if u, ok := strings.CutPrefix(inner, outer); ok && u != "" && bytes.Contains(b[obj:ms[0].keyStart], []byte("\n")) {
			return u
		}
	}
	if bytes.Contains(b, []byte("\n\t")) {
		return "\t"
	}
	return "  "
}

// reindent formats v with its nested lines under indent, unit a level.
func reindent(v json.RawMessage, indent, unit string) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, v, indent, unit); err != nil {
		return v
	}
	return out.Bytes()
}

func splice(b []byte, from, to int, with []byte) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(with))
	out = append(out, b[:from]...)
	out = append(out, with...)
	return append(out, b[to:]...)
}
