package toolpin

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Look-alike names: a tool called "rеad_file" with a Cyrillic е (U+0435)
// reads as read_file to a person and to a model, and is another tool to
// the host. The checks here follow Unicode's UTS #39 in small: a name's
// letters must come from one script, or from one of the sets that are
// written together (Latin with Han and the Japanese kana, with Han and
// Bopomofo, with Han and Hangul); a name wholly in Cyrillic, Greek or
// another script whose every letter has a Latin double is a whole-script
// look-alike; and compatibility forms of letters (fullwidth, mathematical
// alphanumerics, letterlike symbols, enclosed and super/subscript forms)
// are flagged in names, where no one needs them.

// scriptsTogether are the sets of scripts UTS #39's highly restrictive
// profile lets one identifier mix.
var scriptsTogether = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

// scriptRange is a run of code points of one script.
type scriptRange struct {
	lo, hi rune
	script string
}

// scriptRanges holds every script's ranges but Common's and Inherited's,
// sorted, so that scriptOf is one binary search whatever the script.
var scriptRanges = func() []scriptRange {
	var out []scriptRange
	add := func(lo, hi, stride rune, name string) {
		if stride == 1 {
			out = append(out, scriptRange{lo, hi, name})
			return
		}
		for r := lo; r <= hi; r += stride {
			out = append(out, scriptRange{r, r, name})
		}
	}
	for name, table := range unicode.Scripts {
		if name == "Common" || name == "Inherited" {
			continue
		}
		for _, r := range table.R16 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride), name)
		}
		for _, r := range table.R32 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride), name)
		}
	}
	slices.SortFunc(out, func(a, b scriptRange) int { return int(a.lo - b.lo) })
	return out
}()

// scriptOf returns the script of a letter, or "" for a rune that is no
// letter or whose script is Common or Inherited (shared by every script).
func scriptOf(r rune) string {
	if r < 0x80 {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return ""
	}
	if !unicode.IsLetter(r) {
		return ""
	}
	i, found := slices.BinarySearchFunc(scriptRanges, r, func(sr scriptRange, r rune) int {
		switch {
		case sr.hi < r:
			return -1
		case sr.lo > r:
			return 1
		}
		return 0
	})
	if !found {
		return ""
	}
	return scriptRanges[i].script
}

// latinDouble maps letters of other scripts that render as a Latin letter
// to that letter: the confusables of UTS #39 for Cyrillic, Greek,
// Armenian and Cherokee that matter in identifiers.
var latinDouble = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ј': 'j',
	'һ': 'h', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l', 'ү': 'y', 'ѵ': 'v',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X',
	'У': 'Y', 'Ѕ': 'S', 'І': 'I', 'Ј': 'J', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ӏ': 'I', 'Ү': 'Y',
	// Greek
	'α': 'a', 'ο': 'o', 'ν': 'v', 'ι': 'i', 'ρ': 'p', 'υ': 'u', 'χ': 'x',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P',
	'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Armenian
	'օ': 'o', 'ս': 'u', 'ց': 'g', 'հ': 'h', 'ո': 'n', 'ք': 'p', 'զ': 'q',
	// Cherokee
	'Ꭺ': 'A', 'Ᏼ': 'B', 'Ꮯ': 'C', 'Ꭼ': 'E', 'Ꮋ': 'H', 'Ꭻ': 'J', 'Ꮶ': 'K', 'Ꮇ': 'M', 'Ꮲ': 'P', 'Ꮪ': 'S', 'Ꭲ': 'T', 'Ꮃ': 'W', 'Ꮓ': 'Z',
}

// compatibilityForm reports whether r is a presentation form of a Latin
// letter or digit that NFKC folds to ASCII: fullwidth forms, mathematical
// alphanumerics, letterlike symbols (ℎ, K KELVIN SIGN), super- and
// subscripts, enclosed alphanumerics.
func compatibilityForm(r rune) bool {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E, // fullwidth ASCII
		r >= 0x1D400 && r <= 0x1D7FF, // mathematical alphanumerics
		r >= 0x2100 && r <= 0x214F,   // letterlike symbols
		r >= 0x2070 && r <= 0x209F,   // superscripts and subscripts
		r >= 0x2460 && r <= 0x24FF,   // enclosed alphanumerics
		r >= 0x1F100 && r <= 0x1F1FF, // enclosed alphanumeric supplement
		r == 0x00AA || r == 0x00BA || r == 0x00B2 || r == 0x00B3 || r == 0x00B9:
		return true
	}
	return false
}

// scriptsOf returns the scripts of s's letters in order of first
// appearance, and how many letters each has.
func scriptsOf(rs []rune) (order []string, count map[string]int) {
	count = map[string]int{}
	for _, r := range rs {
		if sc := scriptOf(r); sc != "" {
			if count[sc] == 0 {
				order = append(order, sc)
			}
			count[sc]++
		}
	}
	return order, count
}

// mixable reports whether one identifier may use all of scripts.
func mixable(scripts []string) bool {
	if len(scripts) <= 1 {
		return true
	}
	for _, set := range scriptsTogether {
		if !slices.ContainsFunc(scripts, func(s string) bool { return !slices.Contains(set, s) }) {
			return true
		}
	}
	return false
}

// skeleton is s as it reads: letters with a Latin double replaced by it.
func skeleton(rs []rune) string {
	var b strings.Builder
	for _, r := range rs {
		if d, ok := latinDouble[r]; ok {
			r = d
		}
		b.WriteRune(r)
	}
	return b.String()
}

// markRunes writes rs with each rune for which odd is true shown as
// ⟨е U+0435⟩, so a person sees which letter is not what it looks like.
func markRunes(rs []rune, odd func(r rune) bool) string {
	var b strings.Builder
	for _, r := range rs {
		if odd(r) {
			fmt.Fprintf(&b, "⟨%c U+%04X⟩", r, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// nameLookalike checks an identifier (a tool's name) as a whole: mixed
// scripts, a whole-script look-alike of a Latin name, or compatibility
// forms. It returns ok false when the name is plain.
func nameLookalike(s string) (excerpt, reason string, ok bool) {
	if isASCII(s) {
		return "", "", false
	}
	rs := []rune(s)
	if slices.ContainsFunc(rs, compatibilityForm) {
		return shorten(markRunes(rs, compatibilityForm), 2*excerptContext),
			fmt.Sprintf("letters in a compatibility form (fullwidth, mathematical, letterlike): reads as %q", foldCompatibility(rs)), true
	}
	scripts, count := scriptsOf(rs)
	if !mixable(scripts) {
		return mixedFinding(rs, scripts, count)
	}
	if len(scripts) == 1 && scripts[0] != "Latin" {
		for _, r := range rs {
			if scriptOf(r) != "" {
				if _, ok := latinDouble[r]; !ok {
					return "", "", false
				}
			}
		}
		sk := skeleton(rs)
		return shorten(markRunes(rs, func(r rune) bool { return scriptOf(r) != "" }), 2*excerptContext),
			fmt.Sprintf("every letter is %s with a Latin double: reads as %q", scripts[0], sk), true
	}
	return "", "", false
}

// wordLookalike checks each word (a run of letters, marks and digits) of
// a text: a word that mixes scripts no language mixes, as "pаssword" with
// a Cyrillic а.
func wordLookalike(s string) (excerpt, reason string, ok bool) {
	if isASCII(s) {
		return "", "", false
	}
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !isWordRune(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && isWordRune(rs[j]) {
			j++
		}
		word := rs[i:j]
		if scripts, count := scriptsOf(unitSymbols(word)); !mixable(scripts) {
			ex, reason, _ := mixedFinding(word, scripts, count)
			before := visibleContext(rs[:i], true)
			after := visibleContext(rs[j:], false)
			return before + "«" + ex + "»" + after, reason, true
		}
		i = j
	}
	return "", "", false
}

// unitSymbols returns word with a leading Greek μ or Ω before Latin
// letters (μs, μm, Ωm, as units are written) left out: text, unlike a
// name, writes them so.
func unitSymbols(word []rune) []rune {
	if len(word) > 1 && (word[0] == 'μ' || word[0] == 'Ω') && scriptOf(word[1]) == "Latin" {
		return word[1:]
	}
	return word
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

// mixedFinding describes letters of several scripts in one word: the
// letters not of its main script are marked.
func mixedFinding(rs []rune, scripts []string, count map[string]int) (excerpt, reason string, ok bool) {
	main := scripts[0]
	for _, sc := range scripts {
		if count[sc] > count[main] {
			main = sc
		}
	}
	reason = "mixes " + strings.Join(scripts, " and ") + " letters"
	if sk := skeleton(rs); sk != string(rs) {
		reason += fmt.Sprintf(": reads as %q", sk)
	}
	return shorten(markRunes(rs, func(r rune) bool { sc := scriptOf(r); return sc != "" && sc != main }), 2*excerptContext),
		reason, true
}

// foldCompatibility maps the compatibility forms of ASCII letters and
// digits that are laid out in order (fullwidth, mathematical) to ASCII;
// others are kept.
func foldCompatibility(rs []rune) string {
	var b strings.Builder
	for _, r := range rs {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E:
			r = r - 0xFF01 + '!'
		case r >= 0x1D400 && r <= 0x1D6A3:
			// Thirteen alphabets of 52 letters, A–Z then a–z.
			k := (r - 0x1D400) % 52
			if k < 26 {
				r = 'A' + k
			} else {
				r = 'a' + k - 26
			}
		case r >= 0x1D7CE && r <= 0x1D7FF:
			r = '0' + (r-0x1D7CE)%10
		case r == 0x212A:
			r = 'K'
		case r == 0x210E:
			r = 'h'
		}
		b.WriteRune(r)
	}
	return b.String()
}
