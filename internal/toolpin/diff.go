package toolpin

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ChangeKind says what happened to a field or a schema member.
type ChangeKind string

const (
	Added    ChangeKind = "added"
	Removed  ChangeKind = "removed"
	Modified ChangeKind = "changed"
)

// Change is one difference between two definitions, for a person deciding
// whether to approve it.
type Change struct {
	// Field is name, title, description, inputSchema, outputSchema,
	// annotations, icons, _meta, or definition when the canonical forms differ in a way
	// no other change shows (a duplicate object member, invalid JSON).
	Field string `json:"field"`
	// Path is a JSON pointer (RFC 6901) inside Field, e.g.
	// /properties/path/description; empty for the field itself.
	Path string     `json:"path,omitempty"`
	Kind ChangeKind `json:"kind"`
	// Old and New are the values, empty when absent: the text itself for
	// name, title and description; canonical JSON for everything else.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Words is a word-level diff of a changed text of more than a few
	// words, so that one changed sentence of a long description shows as
	// that sentence.
	Words []TextEdit `json:"words,omitempty"`
}

// TextEdit is a run of a word diff: text both sides share (Op "="), that
// only the old has ("-") or that only the new has ("+").
type TextEdit struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// Changes is a diff, in field order and then JSON pointer order.
type Changes []Change

// Diff returns what changed from old to new; nil when Hash(old) ==
// Hash(new). Schemas and annotations are compared member by member after
// the normalisation Canonical applies (annotations with the spec's defaults
// filled in). Arrays of plain values (required, enum, type) are shown
// whole; arrays holding objects are compared by index when their lengths
// are equal.
func Diff(old, new Definition) Changes {
	var cs Changes
	text := func(field, o, n string) {
		if o == n {
			return
		}
		c := Change{Field: field, Kind: Modified, Old: o, New: n}
		switch {
		case o == "":
			c.Kind = Added
		case n == "":
			c.Kind = Removed
		default:
			c.Words = wordDiff(o, n)
		}
		cs = append(cs, c)
	}
	text("name", old.Name, new.Name)
	text("title", old.Title, new.Title)
	text("description", old.Description, new.Description)

	on, nn := canonicalNode(old), canonicalNode(new)
	for _, field := range []string{"inputSchema", "outputSchema", "annotations", "icons", "_meta"} {
		o, n := on.get(field), nn.get(field)
		if field == "annotations" {
			o, n = withDefaultHints(o), withDefaultHints(n)
		}
		cs = diffNode(cs, field, "", o, n)
	}
	if len(cs) == 0 && Hash(old) != Hash(new) {
		cs = append(cs, Change{Field: "definition", Kind: Modified,
			Old: string(Canonical(old)), New: string(Canonical(new))})
	}
	return cs
}

func diffNode(cs Changes, field, path string, o, n *node) Changes {
	switch {
	case o == nil && n == nil:
		return cs
	case o == nil:
		return append(cs, Change{Field: field, Path: path, Kind: Added, New: canonicalString(n)})
	case n == nil:
		return append(cs, Change{Field: field, Path: path, Kind: Removed, Old: canonicalString(o)})
	}
	os, ns := canonicalString(o), canonicalString(n)
	if os == ns {
		return cs
	}
	switch {
	case o.kind == kindObject && n.kind == kindObject:
		keys := map[string]bool{}
		for _, m := range sortedMembers(append(append([]member(nil), o.obj...), n.obj...)) {
			if keys[m.key] {
				continue
			}
			keys[m.key] = true
			cs = diffNode(cs, field, path+"/"+escapePointer(m.key), o.get(m.key), n.get(m.key))
		}
		return cs
	case o.kind == kindArray && n.kind == kindArray && len(o.arr) == len(n.arr) && hasContainer(o) && hasContainer(n):
		for i := range o.arr {
			cs = diffNode(cs, field, fmt.Sprintf("%s/%d", path, i), o.arr[i], n.arr[i])
		}
		return cs
	}
	c := Change{Field: field, Path: path, Kind: Modified, Old: os, New: ns}
	if o.kind == kindString && n.kind == kindString && wordCount(o.s)+wordCount(n.s) > 8 {
		c.Words = wordDiff(o.s, n.s)
	}
	return append(cs, c)
}

func hasContainer(n *node) bool {
	for _, v := range n.arr {
		if v.kind == kindArray || v.kind == kindObject {
			return true
		}
	}
	return false
}

func canonicalString(n *node) string { return string(appendCanonical(nil, n)) }

// pointerEscaper escapes a member name for a JSON pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return pointerEscaper.Replace(key)
}

// String renders the diff as a short text block, one change a line, long
// values cut, changed text as a word diff with [-removed-] and {+added+}
// runs and a few words of context.
func (cs Changes) String() string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Field)
		if c.Path != "" {
			b.WriteString(" " + c.Path)
		}
		b.WriteString(": ")
		switch {
		case c.Words != nil:
			b.WriteString(renderWords(c.Words))
		case c.Kind == Added:
			b.WriteString("added " + shorten(c.New, maxShown))
		case c.Kind == Removed:
			b.WriteString("removed " + shorten(c.Old, maxShown))
		default:
			b.WriteString(shorten(c.Old, maxShown/2) + " → " + shorten(c.New, maxShown/2))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

const (
	maxShown     = 160 // runes of a value in Changes.String
	contextWords = 6   // words of context either side of a changed run
	maxLCSCells  = 1 << 20
)

func shorten(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

func renderWords(edits []TextEdit) string {
	var b strings.Builder
	for i, e := range edits {
		switch e.Op {
		case "-":
			b.WriteString("[-" + visibleSpace(e.Text) + "-]")
		case "+":
			b.WriteString("{+" + visibleSpace(e.Text) + "+}")
		default:
			words := strings.Fields(e.Text)
			lead := unicode.IsSpace(firstRune(e.Text))
			trail := unicode.IsSpace(lastRune(e.Text))
			first, last := i == 0, i == len(edits)-1
			keep := contextWords
			switch {
			case !first && !last && len(words) > 2*keep:
				words = append(append(append([]string(nil), words[:keep]...), "…"), words[len(words)-keep:]...)
			case first && len(words) > keep:
				words = append([]string{"…"}, words[len(words)-keep:]...)
			case last && len(words) > keep:
				words = append(words[:keep:keep], "…")
			}
			if lead && !first {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Join(words, " "))
			if trail && !last {
				b.WriteByte(' ')
			}
		}
	}
	return b.String()
}

// visibleSpace shows line breaks in a changed run, where they may be the
// change.
func visibleSpace(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "⏎")
	s = strings.ReplaceAll(s, "\n", "⏎")
	return strings.ReplaceAll(s, "\t", "⇥")
}

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }
func lastRune(s string) rune  { r, _ := utf8.DecodeLastRuneInString(s); return r }

func wordCount(s string) int { return len(strings.Fields(s)) }

// tokens splits text into runs of space and runs of anything else, so a
// diff over them is a word diff that keeps the text's spacing.
func tokens(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if i > start && unicode.IsSpace(r) != unicode.IsSpace(firstRune(s[start:])) {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// wordDiff diffs two texts by words: common leading and trailing words are
// cut first, the rest goes through a longest-common-subsequence table, or,
// past maxLCSCells, shows as replaced whole.
func wordDiff(o, n string) []TextEdit {
	a, b := tokens(o), tokens(n)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var edits []TextEdit
	emit := func(op string, t string) {
		if t == "" {
			return
		}
		if k := len(edits) - 1; k >= 0 && edits[k].Op == op {
			edits[k].Text += t
			return
		}
		edits = append(edits, TextEdit{op, t})
	}
	emit("=", strings.Join(a[:pre], ""))
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if (len(ma)+1)*(len(mb)+1) > maxLCSCells {
		emit("-", strings.Join(ma, ""))
		emit("+", strings.Join(mb, ""))
	} else {
		for _, e := range lcsEdits(ma, mb) {
			emit(e.Op, e.Text)
		}
	}
	emit("=", strings.Join(a[len(a)-suf:], ""))
	return tidyEdits(edits)
}

func lcsEdits(a, b []string) []TextEdit {
	w := len(b) + 1
	t := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	var out []TextEdit
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, TextEdit{"=", a[i]})
			i, j = i+1, j+1
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			out = append(out, TextEdit{"-", a[i]})
			i++
		default:
			out = append(out, TextEdit{"+", b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, TextEdit{"-", a[i]})
	}
	for ; j < len(b); j++ {
		out = append(out, TextEdit{"+", b[j]})
	}
	return out
}

// tidyEdits merges runs so that a change reads as one removed and one added
// run: a shared run of only spaces between two changes joins them, and
// adjacent runs of one op merge.
func tidyEdits(in []TextEdit) []TextEdit {
	var out []TextEdit
	for i := 0; i < len(in); i++ {
		e := in[i]
		if e.Op == "=" && strings.TrimSpace(e.Text) == "" && i > 0 && i < len(in)-1 {
			// Fold a lone space between changes into both sides.
			out = appendEdit(out, TextEdit{"-", e.Text})
			out = appendEdit(out, TextEdit{"+", e.Text})
			continue
		}
		out = appendEdit(out, e)
	}
	// Within a run of changes, put every removal before every addition.
	var final []TextEdit
	for i := 0; i < len(out); {
		if out[i].Op == "=" {
			final = append(final, out[i])
			i++
			continue
		}
		var del, ins bytes.Buffer
		for ; i < len(out) && out[i].Op != "="; i++ {
			if out[i].Op == "-" {
				del.WriteString(out[i].Text)
			} else {
				ins.WriteString(out[i].Text)
			}
		}
		if del.Len() > 0 {
			final = append(final, TextEdit{"-", del.String()})
		}
		if ins.Len() > 0 {
			final = append(final, TextEdit{"+", ins.String()})
		}
	}
	return final
}

func appendEdit(out []TextEdit, e TextEdit) []TextEdit {
	if k := len(out) - 1; k >= 0 && out[k].Op == e.Op {
		out[k].Text += e.Text
		return out
	}
	return append(out, e)
}
