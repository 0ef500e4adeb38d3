package toolpin

import (
	"fmt"
	"strings"
	"unicode"
)

// invisibleClass names why a rune is invisible, or "" when it is not, or is
// part of a sequence that renders (a ZWJ emoji sequence, a ZWNJ in a script
// that needs it, a subdivision flag's tag characters).
func invisibleClass(rs []rune, i int) string {
	r := rs[i]
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return "bidirectional control"
	case r == 0x200C || r == 0x200D:
		if i > 0 && i+1 < len(rs) && joinsVisibly(rs[i-1], rs[i+1], r) {
			return ""
		}
		return "zero-width joiner"
	case r == 0x200B, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E:
		return "zero-width character"
	case r >= 0xE0000 && r <= 0xE007F:
		if inFlagSequence(rs, i) {
			return ""
		}
		return "tag character"
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		// One selector after a visible base picks a glyph; a run of them
		// carries data (the variation-selector smuggling trick).
		if i > 0 && !isVariationSelector(rs[i-1]) && !unicode.IsSpace(rs[i-1]) {
			return ""
		}
		return "stray variation selector"
	case unicode.Is(unicode.Cf, r):
		return "format character"
	}
	return ""
}

func isVariationSelector(r rune) bool {
	return r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF
}

func isPictographic(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF || r == 0xFE0F || r >= 0x1F3FB && r <= 0x1F3FF
}

// joinsVisibly: a ZWJ inside an emoji sequence, or a ZWJ/ZWNJ between
// letters of a script that shapes with them (Arabic, Persian, Indic…).
func joinsVisibly(prev, next, r rune) bool {
	if r == 0x200D && isPictographic(prev) && isPictographic(next) {
		return true
	}
	return prev >= 0x0600 && unicode.IsLetter(prev) || prev >= 0x0600 && unicode.Is(unicode.M, prev) ||
		next >= 0x0600 && unicode.IsLetter(next)
}

// inFlagSequence: U+1F3F4 followed by tag letters and digits, ended by
// U+E007F CANCEL TAG, as in 🏴󠁧󠁢󠁳󠁣󠁴󠁿.
func inFlagSequence(rs []rune, i int) bool {
	start := i
	for start > 0 && rs[start-1] >= 0xE0020 && rs[start-1] <= 0xE007E {
		start--
	}
	if start == 0 || rs[start-1] != 0x1F3F4 {
		return false
	}
	end := i
	for end < len(rs) && rs[end] >= 0xE0020 && rs[end] <= 0xE007E {
		end++
	}
	return end < len(rs) && rs[end] == 0xE007F && end-start <= 7
}

// cleanText is what a model reads of s: invisible runes dropped, except
// that tag characters become the ASCII they smuggle, and typographic
// apostrophes as ASCII ones, so a pattern split by a zero-width space or
// written in tags still matches.
func cleanText(s string) string {
	if isASCII(s) {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch {
		case r >= 0xE0020 && r <= 0xE007E && invisibleClass(rs, i) != "":
			b.WriteRune(r - 0xE0000)
		case invisibleClass(rs, i) != "":
		case r == '\u2019' || r == '\u2018':
			b.WriteByte('\'')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// invisibleFinding describes the invisible runes of s, or returns ok false.
func invisibleFinding(s string) (excerpt, reason string, ok bool) {
	if isASCII(s) {
		return "", "", false
	}
	rs := []rune(s)
	counts := map[string]int{}
	var order []string
	first, last := -1, -1
	var tags strings.Builder
	for i := range rs {
		c := invisibleClass(rs, i)
		if c == "" {
			continue
		}
		if counts[c] == 0 {
			order = append(order, c)
		}
		counts[c]++
		if first < 0 {
			first = i
		}
		last = i
		if c == "tag character" && rs[i] >= 0xE0020 && rs[i] <= 0xE007E {
			tags.WriteRune(rs[i] - 0xE0000)
		}
	}
	if first < 0 {
		return "", "", false
	}
	var parts []string
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
	}
	reason = "invisible text a person does not see but a model reads: " + strings.Join(parts, ", ")
	if tags.Len() > 0 {
		reason += fmt.Sprintf("; the tag characters spell %q", shorten(tags.String(), 120))
	}
	// Show the first stretch of invisible runes, each as ⟨U+XXXX⟩, in its
	// context.
	end := first
	for end+1 <= last && end+1-first < 8 && invisibleClass(rs, end+1) != "" {
		end++
	}
	var mark strings.Builder
	for i := first; i <= end; i++ {
		if invisibleClass(rs, i) != "" {
			fmt.Fprintf(&mark, "⟨U+%04X⟩", rs[i])
		} else {
			mark.WriteRune(rs[i])
		}
	}
	if end+1 < len(rs) && invisibleClass(rs, end+1) != "" {
		mark.WriteString("…")
	}
	before := visibleContext(rs[:first], true)
	after := visibleContext(rs[end+1:], false)
	return before + "«" + mark.String() + "»" + after, reason, true
}

func visibleContext(rs []rune, before bool) string {
	var kept []rune
	for i, r := range rs {
		if invisibleClass(rs, i) == "" {
			kept = append(kept, r)
		}
	}
	s := strings.Join(strings.Fields(string(kept)), " ")
	if len(kept) > 0 && unicode.IsSpace(kept[0]) && !before {
		s = " " + s
	}
	if len(kept) > 0 && unicode.IsSpace(kept[len(kept)-1]) && before {
		s += " "
	}
	r := []rune(s)
	if len(r) <= excerptContext {
		return s
	}
	if before {
		return "…" + string(r[len(r)-excerptContext:])
	}
	return string(r[:excerptContext]) + "…"
}
