package oauth

import (
	"net/http"
	"strings"
)

// Challenge is one parsed WWW-Authenticate challenge (RFC 9110 §11.6.1,
// RFC 6750 §3, RFC 9728 §5.1).
type Challenge struct {
	Scheme string            // lower case: "bearer", "dpop"
	Params map[string]string // parameter names in lower case
}

// ResourceMetadata is the challenge's resource_metadata URL.
func (c Challenge) ResourceMetadata() string { return c.Params["resource_metadata"] }

// Scopes are the scopes the challenge asks for.
func (c Challenge) Scopes() []string { return strings.Fields(c.Params["scope"]) }

// Error is the challenge's error code (invalid_token, insufficient_scope,
// use_dpop_nonce).
func (c Challenge) Error() string { return c.Params["error"] }

// ParseChallenges parses every WWW-Authenticate header of h.
func ParseChallenges(h http.Header) []Challenge {
	var out []Challenge
	for _, v := range h.Values("WWW-Authenticate") {
		out = append(out, parseChallenges(v)...)
	}
	return out
}

// bearerChallenge returns the Bearer (or DPoP) challenge of h: the one to
// act on; the zero Challenge when there is none.
func bearerChallenge(h http.Header) Challenge {
	var found Challenge
	for _, c := range ParseChallenges(h) {
		switch c.Scheme {
		case "bearer":
			return c
		case "dpop":
			if found.Scheme == "" {
				found = c
			}
		}
	}
	return found
}

// parseChallenges parses one header value: challenges separated by commas,
// each a scheme followed by auth-params (name=token or name="quoted") or a
// token68.
func parseChallenges(s string) []Challenge {
	var out []Challenge
	p := &lexer{s: s}
	for {
		p.skipSpaceAndCommas()
		if p.done() {
			return out
		}
		scheme := p.token()
		if scheme == "" {
			p.i++ // not a token: skip the character
			continue
		}
		c := Challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
		p.skipSpace()
		if !p.paramAhead() {
			// No parameters, or a token68 (as in "Basic abc=="), which
			// nothing here uses: skip to the next challenge.
			for !p.done() && p.s[p.i] != ',' {
				p.i++
			}
		}
		for p.paramAhead() {
			name := p.token()
			p.skipSpace()
			p.eat('=')
			p.skipSpace()
			var v string
			if p.peek('"') {
				v = p.quoted()
			} else {
				v = p.token()
			}
			c.Params[strings.ToLower(name)] = v
			p.skipSpace()
			if !p.eat(',') {
				break
			}
			p.skipSpaceAndCommas()
			// Another parameter of this challenge, or the next challenge's
			// scheme (a token not followed by '=').
		}
		out = append(out, c)
	}
}

type lexer struct {
	s string
	i int
}

func (p *lexer) done() bool { return p.i >= len(p.s) }

func (p *lexer) peek(b byte) bool { return !p.done() && p.s[p.i] == b }

func (p *lexer) eat(b byte) bool {
	if p.peek(b) {
		p.i++
		return true
	}
	return false
}

func (p *lexer) skipSpace() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *lexer) skipSpaceAndCommas() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~/:", b) >= 0
}

func (p *lexer) token() string {
	start := p.i
	for !p.done() && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *lexer) quoted() string {
	p.i++ // opening quote
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\' && !p.done():
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// paramAhead reports whether what follows is name= (a parameter), without
// consuming it.
func (p *lexer) paramAhead() bool {
	save := p.i
	defer func() { p.i = save }()
	if p.token() == "" {
		return false
	}
	p.skipSpace()
	if !p.eat('=') {
		return false
	}
	p.skipSpace()
	// A value must follow: "YWI=" is a token68 with padding, not a parameter.
	return !p.done() && (p.s[p.i] == '"' || isTokenChar(p.s[p.i]))
}
