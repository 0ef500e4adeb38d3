package config

import (
	"fmt"
	"slices"
	"strings"
)

// expandRefs expands ${NAME} and ${NAME:-default} in s, shell style: the
// default is used when NAME is unset or empty, and may itself hold
// references. ${env:NAME} (Cursor's and VS Code's spelling) is ${NAME}.
// ${input:ID} (VS Code's input prompts) is looked up as the name
// "input:ID", which the host answers. A '$' not followed by '{' is
// literal, so "$$" and "$HOME" stay as written. An unset NAME without a
// default expands to unsetAs and is listed in unset, each name once. err
// reports a malformed reference.
func expandRefs(s string, lookup func(string) (string, bool), unsetAs string) (out string, unset []string, err error) {
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
	if strings.HasPrefix(s[i:], "input:") {
		return x.input(s, start)
	}
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
	for _, f := range foreignReferences {
		if strings.HasPrefix(ref, f.prefix) {
			return "", 0, fmt.Errorf("%q is %s", ref, f.means)
		}
	}
	return "", 0, fmt.Errorf("invalid variable reference %q (want ${NAME} or ${NAME:-default})", ref)
}

// foreignReferences are other tools' variable spellings that mcpvisor
// does not resolve, with what they are.
var foreignReferences = []struct{ prefix, means string }{
	{"${command:", "a VS Code command variable, which mcpvisor cannot run"},
	{"${config:", "a VS Code setting, which mcpvisor cannot read"},
	{"${file:", "Windsurf's file interpolation, which mcpvisor does not support: put the value in an environment variable and write ${NAME}"},
	{"${{", "Continue's template syntax, of which mcpvisor reads ${{ secrets.NAME }} and ${{ inputs.NAME }}, in Continue's YAML only"},
}

// input expands the VS Code input reference starting at s[start:]
// ("${input:"): its value is lookup("input:ID").
func (x *expander) input(s string, start int) (string, int, error) {
	i := start + len("${input:")
	end := strings.IndexByte(s[i:], '}')
	if end < 0 {
		return "", 0, fmt.Errorf("unterminated input reference %q", s[start:])
	}
	id := s[i : i+end]
	if !isInputID(id) {
		return "", 0, fmt.Errorf("invalid input reference %q (want ${input:ID})", s[start:i+end+1])
	}
	name := "input:" + id
	if v, ok := x.lookup(name); ok {
		return v, i + end + 1, nil
	}
	x.unset = append(x.unset, name)
	return x.unsetAs, i + end + 1, nil
}

// isInputID reports whether id can name one of VS Code's inputs in a
// reference: not empty, without spaces, quotes, backslashes or braces.
func isInputID(id string) bool {
	return id != "" && !strings.ContainsAny(id, " \t\r\n\"\\{}$")
}

// isVarName reports whether s is a variable name ${s} can reference.
func isVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return r > 0x7f || !isVarNameByte(byte(r)) }) < 0
}
