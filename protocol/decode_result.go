package protocol

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeCallToolResult decodes a tools/call result, as json.Unmarshal(raw,
// &res) does for a CallToolResult res: the same result for the same input,
// and an error exactly when json.Unmarshal returns one (then the very error
// json.Unmarshal returns, and a zero CallToolResult).
//
// It is fast on the shapes servers send. It walks the result with the
// package's validating scanner and decodes text, image, audio and
// resource_link blocks by hand: a string is unescaped only if it holds a
// backslash, and invalid UTF-8 becomes U+FFFD as in encoding/json. It leaves
// to encoding/json a block with an embedded resource, icons, or a key that is
// escaped or matches a member only case-insensitively ("Text"); and the
// whole result when anything else is unusual: such a key at the top level,
// "content" given twice, a value of the wrong type, malformed JSON.
//
// StructuredContent, Meta and the blocks' Annotations and Meta may alias raw
// (encoding/json would copy them): they stay valid as long as raw is not
// modified, which suits a frame that its reader hands over to the caller.
// Their capacity ends with the value, so appending to one never writes into
// raw.
func DecodeCallToolResult(raw []byte) (CallToolResult, error) {
	return DecodeCallToolResultIn(raw, nil)
}

// DecodeCallToolResultIn is DecodeCallToolResult, with a result of one
// content block holding it in one, when one is not nil, rather than in a
// slice of its own: a caller that keeps the result and the block in one
// allocation saves one.
func DecodeCallToolResultIn(raw []byte, one *[1]ContentBlock) (CallToolResult, error) {
	if res, ok := decodeResultFast(raw, one); ok {
		return res, nil
	}
	var res CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return CallToolResult{}, err
	}
	return res, nil
}

// The JSON names of the members of CallToolResult and ContentBlock. A key
// that is none of these exactly but equals one case-insensitively, as
// encoding/json matches keys, sends decoding to encoding/json. A test checks
// the lists against the struct tags.
var (
	resultFields = []string{"content", "structuredContent", "isError", "_meta"}
	blockFields  = []string{"type", "text", "data", "mimeType", "uri", "name", "title", "description", "size", "resource", "icons", "annotations", "_meta"}
)

// Nesting depths, as skipValue counts them, of the containers that hold the
// values decoded here: the result object, the content array, a block.
const (
	depthResult  = 1
	depthContent = 2
	depthBlock   = 3
)

// decodeResultFast decodes a result whose shape it knows. It reports false,
// leaving the work to encoding/json, for anything else, including every input
// that encoding/json rejects. When it reports true, the whole input has been
// checked to be JSON that encoding/json accepts.
func decodeResultFast(b []byte, one *[1]ContentBlock) (res CallToolResult, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return res, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return res, skipSpace(b, i+1) == len(b)
	}
	seenContent := false
	for {
		key, j, ok := scanKey(b, i)
		if !ok {
			return res, false
		}
		i = j
		switch string(key) {
		case "content":
			// A second content array would be decoded into the first one's
			// blocks, merging them: leave that to encoding/json.
			if seenContent {
				return res, false
			}
			seenContent = true
			res.Content, i, ok = decodeContent(b, i, one)
		case "structuredContent":
			res.StructuredContent, i, ok = readRaw(b, i, depthResult)
		case "_meta":
			res.Meta, i, ok = readRaw(b, i, depthResult)
		case "isError":
			i, ok = readBool(b, i, &res.IsError)
		default:
			if mayMatch(key, resultFields) {
				return res, false
			}
			i, ok = skipValue(b, i, depthResult)
		}
		if !ok {
			return res, false
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return res, skipSpace(b, i+1) == len(b)
		}
		return res, false
	}
}

// scanKey reads `"key" :` starting at b[i] and returns the key without its
// quotes and the index of the value, which may be len(b). It fails on an
// escaped key, which the caller then leaves to encoding/json.
func scanKey(b []byte, i int) (key []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	end, esc, ok := skipString(b, i)
	if !ok || esc {
		return nil, end, false
	}
	key = b[i+1 : end-1]
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return nil, i, false
	}
	return key, skipSpace(b, i+1), true
}

// mayMatch reports whether encoding/json could match key, which is none of
// names exactly, to one of names case-insensitively. It answers true for any
// key that is not ASCII: Unicode folding maps "ſ" (U+017F) to "s" and "K"
// (U+212A) to "k".
func mayMatch(key []byte, names []string) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	for _, name := range names {
		if len(name) == len(key) && asciiEqualFold(key, name) {
			return true
		}
	}
	return false
}

func asciiEqualFold(b []byte, s string) bool {
	for k := range len(b) {
		x, y := b[k], s[k]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// decodeContent decodes the content array or null starting at b[i].
func decodeContent(b []byte, i int, one *[1]ContentBlock) ([]ContentBlock, int, bool) {
	if i >= len(b) {
		return nil, i, false
	}
	switch b[i] {
	case 'n':
		// null sets the slice to nil.
		i, ok := skipLiteral(b, i, "null")
		return nil, i, ok
	case '[':
	default:
		return nil, i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		// encoding/json makes an empty array an empty, non-nil slice.
		return []ContentBlock{}, i + 1, true
	}
	// Most results hold one block: decode the first on the stack and size
	// the slice once the array ends.
	var (
		first  ContentBlock
		blocks []ContentBlock
		n      int
		ok     bool
	)
	for {
		cb := &first
		if n > 0 {
			if n == 1 {
				blocks = make([]ContentBlock, 1, 4)
				blocks[0] = first
			}
			blocks = append(blocks, ContentBlock{})
			cb = &blocks[n]
		}
		n++
		if i >= len(b) {
			return nil, i, false
		}
		switch b[i] {
		case '{':
			i, ok = decodeBlock(b, i, cb)
		case 'n':
			// null leaves the block zero.
			i, ok = skipLiteral(b, i, "null")
		default:
			ok = false
		}
		if !ok {
			return nil, i, false
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			i++
			break
		}
		return nil, i, false
	}
	if n == 1 {
		if one != nil {
			blocks = one[:]
		} else {
			blocks = make([]ContentBlock, 1)
		}
		blocks[0] = first
	}
	return blocks, i, true
}

// decodeBlock decodes the block object starting at b[i] into cb, which is
// zero. Like encoding/json, it lets the last of duplicate members win, and
// null leaves a string member unchanged.
func decodeBlock(b []byte, i int, cb *ContentBlock) (int, bool) {
	start := i
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		end, esc, ok := skipString(b, i)
		if !ok {
			return end, false
		}
		if esc {
			return decodeBlockSlow(b, start, cb)
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		switch string(key) {
		case "type":
			i, ok = readType(b, i, &cb.Type)
		case "text":
			i, ok = readString(b, i, &cb.Text)
		case "data":
			i, ok = readString(b, i, &cb.Data)
		case "mimeType":
			i, ok = readString(b, i, &cb.MimeType)
		case "uri":
			i, ok = readString(b, i, &cb.URI)
		case "name":
			i, ok = readString(b, i, &cb.Name)
		case "title":
			i, ok = readString(b, i, &cb.Title)
		case "description":
			i, ok = readString(b, i, &cb.Description)
		case "size":
			i, ok = readSize(b, i, &cb.Size)
		case "annotations":
			cb.Annotations, i, ok = readRaw(b, i, depthBlock)
		case "_meta":
			cb.Meta, i, ok = readRaw(b, i, depthBlock)
		case "resource", "icons":
			return decodeBlockSlow(b, start, cb)
		default:
			if mayMatch(key, blockFields) {
				return decodeBlockSlow(b, start, cb)
			}
			i, ok = skipValue(b, i, depthBlock)
		}
		if !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		return i, false
	}
}

// decodeBlockSlow decodes the block object starting at b[start] with
// encoding/json, replacing whatever decodeBlock stored in cb.
func decodeBlockSlow(b []byte, start int, cb *ContentBlock) (int, bool) {
	end, ok := skipValue(b, start, depthContent)
	if !ok {
		return end, false
	}
	// A fresh block, so that cb (which may be on the caller's stack) does
	// not escape through json.Unmarshal.
	var fresh ContentBlock
	if json.Unmarshal(b[start:end], &fresh) != nil {
		return end, false
	}
	*cb = fresh
	return end, true
}

// readString reads a string member's value, a string or null, into dst.
func readString(b []byte, i int, dst *string) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		end, esc, ok := skipString(b, i)
		if !ok {
			return end, false
		}
		*dst = stringValue(b[i+1:end-1], esc)
		return end, true
	case 'n':
		return skipLiteral(b, i, "null")
	}
	return i, false
}

// readType is readString for a block's type, sharing the strings of the
// known types.
func readType(b []byte, i int, dst *string) (int, bool) {
	if i < len(b) && b[i] == '"' {
		end, esc, ok := skipString(b, i)
		if !ok {
			return end, false
		}
		switch s := b[i+1 : end-1]; {
		case esc:
			*dst = stringValue(s, true)
		case string(s) == ContentText:
			*dst = ContentText
		case string(s) == ContentImage:
			*dst = ContentImage
		case string(s) == ContentAudio:
			*dst = ContentAudio
		case string(s) == ContentResourceLink:
			*dst = ContentResourceLink
		case string(s) == ContentResource:
			*dst = ContentResource
		default:
			*dst = stringValue(s, false)
		}
		return end, true
	}
	return readString(b, i, dst)
}

// readBool reads a bool member's value, true, false or null, into dst.
func readBool(b []byte, i int, dst *bool) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case 't':
		*dst = true
		return skipLiteral(b, i, "true")
	case 'f':
		*dst = false
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	}
	return i, false
}

// readSize reads an *int64 member's value: an integer that fits, or null,
// which sets dst to nil.
func readSize(b []byte, i int, dst **int64) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	if b[i] == 'n' {
		*dst = nil
		return skipLiteral(b, i, "null")
	}
	end, ok := skipNumber(b, i)
	if !ok {
		return end, false
	}
	// parseIntID accepts exactly the JSON integers that strconv.ParseInt,
	// which encoding/json uses, parses into an int64.
	n, ok := parseIntID(b[i:end])
	if !ok {
		return end, false
	}
	*dst = &n
	return end, true
}

// readRaw returns the value starting at b[i], of any type and null included
// (as json.RawMessage.UnmarshalJSON keeps it), with its capacity cut to its
// length. depth is that of the value's container.
func readRaw(b []byte, i, depth int) (json.RawMessage, int, bool) {
	end, ok := skipValue(b, i, depth)
	if !ok {
		return nil, end, false
	}
	return b[i:end:end], end, true
}

// stringValue returns the value of the JSON string whose contents, between
// the quotes, are s; skipString has validated it and reported whether it
// holds escapes. It is what encoding/json stores in a string field.
func stringValue(s []byte, escaped bool) string {
	if !escaped && utf8.Valid(s) {
		return string(s)
	}
	return unquoteSlow(s)
}

// unquoteSlow decodes the escapes of s and replaces each byte of invalid
// UTF-8 with U+FFFD, as encoding/json does. s is the contents of a string
// that skipString accepted: every escape is complete and valid.
func unquoteSlow(s []byte) string {
	var sb strings.Builder
	sb.Grow(len(s)) // enough unless s holds invalid UTF-8
	r, run := 0, 0  // run: start of the bytes still to copy as they are
	for {
		r = nextSpecial(s, r)
		if r >= len(s) {
			break
		}
		if c := s[r]; c != '\\' {
			rr, size := utf8.DecodeRune(s[r:])
			if rr != utf8.RuneError || size != 1 {
				r += size
				continue
			}
			sb.Write(s[run:r])
			sb.WriteRune(utf8.RuneError)
			r++
			run = r
			continue
		}
		sb.Write(s[run:r])
		switch c := s[r+1]; c {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			rr := hex4(s[r+2 : r+6])
			r += 6
			if utf16.IsSurrogate(rr) {
				// A pair decodes to one rune; anything else about a
				// surrogate is U+FFFD, and the \u that follows a lone one
				// is decoded on its own.
				rr1 := rune(-1)
				if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
					rr1 = hex4(s[r+2 : r+6])
				}
				if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
					rr = dec
					r += 6
				} else {
					rr = unicode.ReplacementChar
				}
			}
			sb.WriteRune(rr)
			run = r
			continue
		default: // '"', '\\', '/'
			sb.WriteByte(c)
		}
		r += 2
		run = r
	}
	sb.Write(s[run:])
	return sb.String()
}

// nextSpecial returns the index of the first backslash or non-ASCII byte at
// or after r, or len(s).
func nextSpecial(s []byte, r int) int {
	for r+8 <= len(s) {
		x := binary.LittleEndian.Uint64(s[r:])
		t := x ^ (lsb * '\\')
		// As in skipString, the lowest flagged byte is exact.
		if m := (((t - lsb) &^ t) | x) & msb; m != 0 {
			return r + bits.TrailingZeros64(m)>>3
		}
		r += 8
	}
	for r < len(s) && s[r] != '\\' && s[r] < utf8.RuneSelf {
		r++
	}
	return r
}

// hex4 decodes four hex digits that isHex4 accepts.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
