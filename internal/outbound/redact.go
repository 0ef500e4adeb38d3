package outbound

import (
	"net/url"
	"slices"
	"strings"
)

// redacted replaces a secret.
const redacted = "[redacted]"

// minSecretLen: shorter secrets are ignored, since replacing every "a" or
// "on" would hide the message and reveal nothing worth hiding.
const minSecretLen = 4

// Redact returns s with every occurrence of each secret replaced by
// "[redacted]"; secrets shorter than 4 bytes are ignored. Use it on
// anything that reaches logs, status or errors and may hold an API key,
// a header value or a session id.
//
// Overlapping and nested occurrences are covered as one span, so no part of
// a secret survives (replacing one secret after another would leave the
// tail of a longer secret that contains a shorter one). Only the literal
// secret is matched: pass its encoded forms too (percent-encoded in a URL,
// base64 in a Basic credential) when s may hold them. Redact returns s
// itself, without allocating, when it holds no secret.
func Redact(s string, secrets ...string) string {
	type span struct{ start, end int }
	var spans []span
	for _, secret := range secrets {
		if len(secret) < minSecretLen {
			continue
		}
		for from := 0; ; {
			i := strings.Index(s[from:], secret)
			if i < 0 {
				break
			}
			start := from + i
			spans = append(spans, span{start, start + len(secret)})
			from = start + 1
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	pos := 0 // s[:pos] is written or redacted
	for _, sp := range spans {
		if sp.start >= pos {
			b.WriteString(s[pos:sp.start])
			b.WriteString(redacted)
		}
		pos = max(pos, sp.end)
	}
	b.WriteString(s[pos:])
	return b.String()
}

// Where names an endpoint for a message: scheme, host and path, without
// the query (which may hold credentials) or the fragment.
func Where(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the server"
	}
	return u.Scheme + "://" + u.Host + u.Path
}
