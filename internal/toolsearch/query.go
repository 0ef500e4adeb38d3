package toolsearch

import (
	"strings"
	"unicode"
)

// A query is read differently from a document in two ways.
//
// Literal values: what a request quotes or spells as data ('renew
// passport', jane@acme.com, ~/projects/api, #deployments, PROJ-123,
// 203.0.113.0/24, 3pm) says what to act on, not which tool acts; its
// terms count literalWeight of a word of the request, so "list the files
// in ~/projects/api" is about listing files, not about APIs.
//
// Names in humps: a document's "DigitalOcean" is indexed as digitalocean,
// digital and ocean; the query's is the brand alone when the index has it
// whole, so that one brand does not count three times and pull in every
// tool that mentions the ocean.

// literalWeight is what a term of a literal value counts against a word
// of the request.
const literalWeight = 0.3

// weightedTerm is a query term and what it counts.
type weightedTerm struct {
	term   string
	weight float64
	// synonym: brought by the vocabulary, not written in the query.
	synonym bool
}

// queryTerms returns query's terms, each once, at weight 1 or
// literalWeight (the larger where a term is both), in the order first
// written. known reports whether the index has a term.
func queryTerms(query string, known func(string) bool) []weightedTerm {
	var out []weightedTerm
	at := map[string]int{}
	add := func(w string, weight float64) {
		t, ok := term(w)
		if !ok {
			return
		}
		if i, seen := at[t]; seen {
			out[i].weight = max(out[i].weight, weight)
			return
		}
		at[t] = len(out)
		out = append(out, weightedTerm{term: t, weight: weight})
	}
	for _, f := range fields(dropContractions(query)) {
		weight := 1.0
		if f.literal {
			weight = literalWeight
		}
		for _, run := range runs(f.text) {
			parts := words(run)
			if whole, ok := term(run); len(parts) > 1 && ok && known(whole) {
				add(run, weight)
				continue
			}
			for _, p := range parts {
				add(p, weight)
			}
		}
	}
	return out
}

// field is a whitespace-separated piece of a query, and whether it is a
// literal value.
type field struct {
	text    string
	literal bool
}

// fields splits a query at white space and marks the literal values: the
// words between quotes, and a word that is data by its shape (looksLiteral).
func fields(query string) []field {
	var out []field
	quoted := false
	for _, w := range strings.Fields(query) {
		opens := strings.IndexFunc(w, isLetterOrDigit)
		closes := strings.LastIndexFunc(w, isLetterOrDigit)
		if opens < 0 {
			// Only punctuation: a quote standing alone may open or close.
			if strings.ContainsAny(w, quotes) {
				quoted = !quoted
			}
			continue
		}
		starts := !quoted && strings.ContainsAny(w[:opens], quotes)
		ends := strings.ContainsAny(w[closes:], quotes)
		out = append(out, field{text: w, literal: quoted || starts || looksLiteral(w)})
		switch {
		case starts && !ends:
			quoted = true
		case quoted && ends:
			quoted = false
		}
	}
	return out
}

// quotes are the characters that open or close a quoted value.
const quotes = "'\"`‘“”"

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// looksLiteral: a word that is data by its shape: an address, path,
// handle or channel (@ / \ ~ # : =), a number or a word that starts with
// one (3pm, 502s, 17.5%), an id of letters and digits joined by
// punctuation (PROJ-123, v1.4.2), or a host name (shop.example.com).
func looksLiteral(w string) bool {
	// The punctuation of the sentence around it is not its own.
	w = strings.TrimRight(w, ".,;:!?)]}"+quotes)
	w = strings.TrimLeft(w, "([{"+quotes)
	if strings.ContainsAny(w, "@/\\~#:=") {
		return true
	}
	w = strings.TrimFunc(w, func(r rune) bool { return !isLetterOrDigit(r) })
	if w == "" {
		return false
	}
	if unicode.IsDigit(rune(w[0])) {
		return true
	}
	hasDigit := strings.ContainsFunc(w, unicode.IsDigit)
	if hasDigit && strings.ContainsAny(w, ".,-_") {
		return true
	}
	return strings.Count(w, ".") >= 2
}
