package config

import (
	"fmt"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Bounds of a configuration file, checked before it is decoded, so that a
// hostile file (a YAML "billion laughs", a document nested 200,000 deep,
// a file of 50 MB) is refused at once instead of costing seconds and
// gigabytes. A real configuration is a few kilobytes, nested a few deep.
const (
	// MaxFileSize bounds a configuration file, in bytes.
	MaxFileSize = 4 << 20
	// MaxNesting bounds how deep objects and arrays nest.
	MaxNesting = 64
	// MaxAliases bounds the YAML aliases (*name) of a file: each may
	// repeat what its anchor holds, so together they could multiply a
	// small file into an enormous document.
	MaxAliases = 16
)

// checkBounds refuses data that exceeds the bounds above for its syntax.
func checkBounds(data []byte, s syntax) *Error {
	if len(data) > MaxFileSize {
		return &Error{msg: fmt.Sprintf("the file is %d bytes, more than a configuration file may be (%d)", len(data), MaxFileSize)}
	}
	if depth := nesting(data); depth > MaxNesting {
		return &Error{msg: fmt.Sprintf("objects and arrays nest more than %d deep", MaxNesting)}
	}
	if s == syntaxYAML {
		return checkYAML(data)
	}
	return nil
}

// nesting is how deep the brackets and braces of a document nest (JSON,
// TOML, YAML's flow collections), outside its strings (quoted with " or ',
// \ escaping in the former) and comments (# and //, to the end of the
// line): one pass, before anything is decoded.
func nesting(data []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"', '\'':
			for i++; i < len(data) && data[i] != c && data[i] != '\n'; i++ {
				if c == '"' && data[i] == '\\' {
					i++
				}
			}
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case '/':
			if i+1 < len(data) && data[i+1] == '/' {
				for i < len(data) && data[i] != '\n' {
					i++
				}
			}
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// checkYAML bounds a YAML document's aliases, and again the nesting of its
// flow collections ([...], {...}), from its tokens, which expand nothing;
// block nesting is bounded by the file's size (each level is indented
// further).
func checkYAML(data []byte) *Error {
	depth, aliases := 0, 0
	for _, tk := range lexer.Tokenize(string(data)) {
		switch tk.Type {
		case token.AliasType:
			if aliases++; aliases > MaxAliases {
				return &Error{msg: fmt.Sprintf("more than %d YAML aliases (*name)", MaxAliases)}
			}
		case token.SequenceStartType, token.MappingStartType:
			if depth++; depth > MaxNesting {
				return &Error{msg: fmt.Sprintf("YAML flow collections nest more than %d deep", MaxNesting)}
			}
		case token.SequenceEndType, token.MappingEndType:
			depth = max(depth-1, 0)
		}
	}
	return nil
}
