package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopWords are dropped from documents and queries: words every tool
// description has, which would only add noise to the scores.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true,
	"to": true, "in": true, "on": true, "for": true, "with": true, "by": true,
	"from": true, "at": true, "as": true, "is": true, "are": true, "be": true,
	"it": true, "its": true, "this": true, "that": true, "into": true,
	"i": true, "me": true, "my": true, "you": true, "your": true, "we": true,
	"can": true, "do": true, "does": true, "how": true, "what": true,
	"which": true, "some": true, "if": true, "mcp": true, "tool": true,
}

// Tokens splits text into index terms: words separated by anything but
// letters and digits and at camelCase humps, lowercased, stop words
// dropped, stemmed (see the package doc).
func Tokens(text string) []string {
	var out []string
	for _, w := range words(text) {
		w = strings.ToLower(w)
		if stopWords[w] {
			continue
		}
		w = stem(w)
		if w == "" || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// words splits text into runs of letters and digits, and splits each run
// at camelCase humps: "getHTTPResponse" → get, HTTP, Response.
func words(text string) []string {
	var out []string
	start := -1
	var prev, prev2 rune
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, text[start:end])
		}
		start = -1
	}
	for i, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev, prev2 = 0, 0
			continue
		}
		if start < 0 {
			start = i
		} else if unicode.IsUpper(r) && unicode.IsLower(prev) {
			flush(i) // readFile: a hump
			start = i
		} else if unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prev2) {
			// HTTPServer: the last capital starts the next word.
			p := i - utf8.RuneLen(prev)
			flush(p)
			start = p
		}
		prev2, prev = prev, r
	}
	flush(len(text))
	return out
}

// stem strips the suffixes the package doc lists.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case len(w) > 4 && strings.HasSuffix(w, "xes"), len(w) > 5 && strings.HasSuffix(w, "ches"), len(w) > 5 && strings.HasSuffix(w, "shes"):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = undouble(w[:len(w)-3])
	case len(w) > 4 && strings.HasSuffix(w, "ied"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		w = undouble(w[:len(w)-2])
	}
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// undouble drops one of a doubled final consonant: "stopp" → "stop",
// but "call", "pass" and "buzz" keep theirs.
func undouble(w string) string {
	n := len(w)
	if n < 3 || w[n-1] != w[n-2] {
		return w
	}
	switch w[n-1] {
	case 'l', 's', 'z', 'a', 'e', 'i', 'o', 'u':
		return w
	}
	return w[:n-1]
}
