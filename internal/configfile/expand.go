package configfile

import (
	"fmt"
	"slices"
	"strings"
)

// Expand expands ${NAME} and ${NAME:-default} in s, shell style: the
// default is used when NAME is unset or empty, and may itself hold
// references. ${env:NAME} (Cursor's and VS Code's spelling) is ${NAME}. A
// '$' not followed by '{' is literal, so "$$" and "$HOME" stay as written.
// An unset NAME without a default expands to unsetAs and is listed in
// unset, each name once. err reports a malformed reference.
func Expand(s string, lookup func(string) (string, bool), unsetAs string) (out string, unset []string, err error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	x := &expander{lookup: lookup, unsetAs: unsetAs}
	out, _, err = x.text(s, 0, false)
	if err != nil {
		return "", nil, err
	}
	for _, name := range x.unset {
		if !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
	}
	return out, unset, nil
}

type expander struct {
	lookup  func(string) (string, bool)
	unsetAs string
	unset   []string
}

// text expands s from i up to its end or, inside a default, up to the '}'
// that closes it; it returns the expansion and the index where it stopped.
func (x *expander) text(s string, i int, inDefault bool) (string, int, error) {
	var b strings.Builder
	for i < len(s) {
		if inDefault && s[i] == '}' {
			break
		}
		if s[i] != '$' || i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte(s[i])
			i++
			continue
		}
		v, next, err := x.reference(s, i)
		if err != nil {
			return "", 0, err
		}
		b.WriteString(v)
		i = next
	}
	return b.String(), i, nil
}

// reference expands the reference starting at s[start:] ("${") and returns
// the index just past its closing '}'.
func (x *expander) reference(s string, start int) (string, int, error) {
	i := start + 2
	if strings.HasPrefix(s[i:], "env:") {
		i += len("env:")
	}
	nameStart := i
	for i < len(s) && isVarNameByte(s[i]) {
		i++
	}
	name := s[nameStart:i]
	unterminated := fmt.Errorf("unterminated variable reference %q", s[start:i])
	if i >= len(s) {
		return "", 0, unterminated
	}
	valid := name != "" && (name[0] < '0' || name[0] > '9')
	switch {
	case valid && s[i] == '}':
		if v, ok := x.lookup(name); ok {
			return v, i + 1, nil
		}
		x.unset = append(x.unset, name)
		return x.unsetAs, i + 1, nil
	case valid && strings.HasPrefix(s[i:], ":-"):
		mark := len(x.unset)
		def, end, err := x.text(s, i+2, true)
		if err != nil {
			return "", 0, err
		}
		if end >= len(s) {
			return "", 0, unterminated
		}
		if v, ok := x.lookup(name); ok && v != "" {
			x.unset = x.unset[:mark] // the default is not used
			return v, end + 1, nil
		}
		return def, end + 1, nil
	}
	end := strings.IndexByte(s[start:], '}')
	if end < 0 {
		return "", 0, unterminated
	}
	ref := s[start : start+end+1]
	if len(ref) > 64 {
		ref = ref[:61] + "..."
	}
	if strings.HasPrefix(ref, "${input:") {
		return "", 0, fmt.Errorf("%q is a VS Code input prompt, which mcpvisor cannot show: use ${NAME} and set NAME in the environment", ref)
	}
	return "", 0, fmt.Errorf("invalid variable reference %q (want ${NAME} or ${NAME:-default})", ref)
}
