package config

import (
	"fmt"
	"strings"
)

// parseDotenv parses an environment file, as VS Code's and Cursor's
// "envFile" name one: a KEY=VALUE per line, optionally after "export ";
// blank lines and lines starting with '#' are skipped. A value may be in
// single quotes (taken as written) or double quotes (\n, \t, \" and \\
// are escapes; it may span lines); an unquoted value ends at " #", which
// starts a comment, and is trimmed. A key given twice takes its last
// value. Errors name the line.
func parseDotenv(data string) (map[string]string, error) {
	vars := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	for n := 0; n < len(lines); n++ {
		line := strings.TrimSpace(lines[n])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		start := n + 1
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimSpace(rest)
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !isDotenvKey(key) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", start)
		}
		value = strings.TrimLeft(value, " \t")
		switch {
		case strings.HasPrefix(value, "'"):
			end := strings.IndexByte(value[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated single-quoted value of %s", start, key)
			}
			value = value[1 : 1+end]
		case strings.HasPrefix(value, `"`):
			v, more, ok := doubleQuoted(value[1:], lines[n+1:])
			if !ok {
				return nil, fmt.Errorf("line %d: unterminated double-quoted value of %s", start, key)
			}
			value, n = v, n+more
		default:
			if i := strings.Index(value, " #"); i >= 0 {
				value = value[:i]
			}
			value = strings.TrimSpace(value)
		}
		vars[key] = value
	}
	return vars, nil
}

// doubleQuoted reads a double-quoted value that starts with s (after the
// opening quote) and may go on into the lines that follow. It returns the
// value with its escapes resolved and how many of those lines it took.
func doubleQuoted(s string, next []string) (value string, more int, ok bool) {
	var b strings.Builder
	for {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"':
				return b.String(), more, true
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default: // \" \\ and anything else: the character itself
					b.WriteByte(s[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		if more >= len(next) {
			return "", 0, false
		}
		b.WriteByte('\n')
		s = strings.TrimSuffix(next[more], "\r")
		more++
	}
}

// isDotenvKey reports whether k can be a variable name in an environment
// file: letters, digits, '_', '.' and '-', not starting with a digit.
func isDotenvKey(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !isVarNameByte(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}
