package config

import "bytes"

// syntaxPosition converts a json.SyntaxError offset (bytes read, so the bad byte
// is at offset-1) to a 1-based line and byte column.
func syntaxPosition(data []byte, offset int64) (line, col int) {
	i := int(offset) - 1
	if i < 0 {
		i = 0
	}
	if i > len(data) {
		i = len(data)
	}
	before := data[:i]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = i - bytes.LastIndexByte(before, '\n')
	return line, col
}

// strip turns JSON with comments (VS Code's mcp.json is JSONC) into
// JSON of the same length: comments, trailing commas and a UTF-8 byte order
// mark become spaces, newlines stay, so syntax error positions still point
// into the file as written. An unterminated block comment is left alone for
// the JSON parser to report.
func strip(data []byte) []byte {
	out := bytes.Clone(data)
	if bytes.HasPrefix(out, []byte("\xef\xbb\xbf")) {
		copy(out, "   ")
	}
	blank := func(from, to int) {
		for j := from; j < to; j++ {
			if out[j] != '\n' {
				out[j] = ' '
			}
		}
	}
	comma := -1         // a comma after a value that only whitespace and comments follow so far
	var last byte = '{' // the last byte of JSON syntax seen
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			comma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			last = '"'
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		case c == ',':
			comma = -1
			if last != '{' && last != '[' && last != ',' {
				comma = i
			}
			last = c
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
			last = c
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			comma = -1
			last = c
		}
	}
	return out
}
