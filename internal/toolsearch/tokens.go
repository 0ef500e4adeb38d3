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
	// The filler of a request as people type it ("I just need to…",
	// "can you please…"): it says nothing of what is asked.
	"please": true, "want": true, "need": true, "like": true, "just": true,
	"am": true, "was": true, "were": true, "been": true, "would": true,
	"should": true, "could": true, "there": true, "them": true, "they": true,
	"their": true, "our": true, "us": true, "so": true, "than": true,
	"also": true, "all": true, "will": true,
}

// contractions are the endings of an apostrophe that are dropped with it:
// "user's" is user, "don't" is do, "we're" is we.
var contractions = []string{"n't", "'s", "'re", "'ve", "'ll", "'d", "'m", "'t"}

// Tokens splits text into index terms: words separated by anything but
// letters and digits and at camelCase humps, lowercased, stop words
// dropped, stemmed (see the package doc).
func Tokens(text string) []string {
	if strings.ContainsAny(text, "'’") {
		text = dropContractions(text)
	}
	var out []string
	add := func(w string) {
		if t, ok := term(w); ok {
			out = append(out, t)
		}
	}
	for _, run := range runs(text) {
		parts := words(run)
		if len(parts) > 1 {
			// A name written in humps is also one word: "DigitalOcean"
			// meets the server digitalocean, "GitHub" github.
			add(run)
		}
		for _, w := range parts {
			add(w)
		}
	}
	return out
}

// term is w as an index term: lowercased and stemmed; false for a stop
// word.
func term(w string) (string, bool) {
	w = strings.ToLower(w)
	if stopWords[w] {
		return "", false
	}
	w = stem(w)
	if w == "" || stopWords[w] {
		return "", false
	}
	return w, true
}

// runs splits text into runs of letters and digits.
func runs(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// dropContractions removes an apostrophe and the contraction it starts
// ("'s", "n't", ...) at the end of a word; "can't" and "won't" become
// can and will.
func dropContractions(text string) string {
	text = strings.ReplaceAll(text, "’", "'")
	text = strings.NewReplacer("can't", "can", "Can't", "Can", "won't", "will", "Won't", "Will").Replace(text)
	var b strings.Builder
	for i := 0; i < len(text); {
		matched := false
		for _, c := range contractions {
			end := i + len(c)
			if end <= len(text) && strings.EqualFold(text[i:end], c) && i > 0 && isLetter(text[i-1]) && (end == len(text) || !isLetter(text[end])) {
				i, matched = end, true
				break
			}
		}
		if !matched {
			b.WriteByte(text[i])
			i++
		}
	}
	return b.String()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

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
