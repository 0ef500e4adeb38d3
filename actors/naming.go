package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/config"
)

// ToolPrefix starts every namespaced tool name: mcp__<server>__<tool>.
const ToolPrefix = "mcp__"

// DefaultMaxToolName is the default budget, in bytes, of the whole name a
// tool is exposed by (mcp__<server>__<tool>, or a bare name): model APIs
// accept tool names matching ^[a-zA-Z0-9_-]{1,64}$.
const DefaultMaxToolName = 64

// nameHashLen is the length of the hash that ends a shortened name: 8 hex
// digits, 32 bits of the SHA-256 of the server's own name.
const nameHashLen = 8

// ValidateServerName reports whether name can be used as a server name:
// non-empty, only [A-Za-z0-9_-], and no "__" (the namespace separator).
// The rule is the configuration's (config.ValidateServerName), so that a
// name a file accepts is one the runtime accepts.
func ValidateServerName(name string) error { return config.ValidateServerName(name) }

// ToolName returns the namespaced name mcp__<server>__<tool>.
func ToolName(server, tool string) string {
	return ToolPrefix + server + "__" + tool
}

// SplitToolName parses mcp__<server>__<tool>, splitting on the first "__"
// after the prefix (server names never contain "__"; tool names may).
func SplitToolName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, ToolPrefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// SafeToolName reports whether name is made only of the characters model
// APIs accept in a tool name, ^[a-zA-Z0-9_-]+$ (whatever its length).
func SafeToolName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !safeByte(name[i]) {
			return false
		}
	}
	return true
}

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// NameBudget is the budget of an exposed name that Options.MaxToolName
// asks for: 0 means DefaultMaxToolName, and a negative one no limit on
// length (names are still made of safe characters).
func NameBudget(max int) int {
	switch {
	case max == 0:
		return DefaultMaxToolName
	case max < 0:
		return math.MaxInt32
	}
	return max
}

// NameMap is how one server's tools (or prompts) are exposed to models,
// and back: the name each goes by, in place of the server's own, where
// that one is not a name model APIs accept.
//
// The rule, applied to the server's whole set of names, with budget B for
// the part of the name the tool's own stands in (B less the length of
// mcp__<server>__ for a namespaced name; B itself for a bare one), and a
// floor of 8:
//
//  1. a name of [a-zA-Z0-9_-] of at most B bytes is kept as it is;
//  2. another is sanitized: each rune outside [a-zA-Z0-9_-] (and each
//     byte that is not UTF-8) becomes '_'. The sanitized name is used if
//     it fits B, no kept name equals it and no other name of the set
//     sanitizes to it;
//  3. otherwise (too long, or a collision) the name is shortened: the
//     sanitized name cut to B-9 bytes, then '_' and 8 hex digits of the
//     SHA-256 of the server's own name. Should that be taken too, names
//     are hashed again in the order of their own names, with a counter.
//
// So a name depends only on the set of names and the budget: the same
// tool gets the same name across restarts and hosts, two names never
// collide, and a mapped name is never another tool's own. A NameMap is
// immutable; the nil map keeps every name as it is.
type NameMap struct {
	server           string
	toPart, fromPart map[string]string // own ↔ the tool part of mcp__<server>__<part>, where they differ
	toBare, fromBare map[string]string // own ↔ the bare name, where they differ
}

// MapNames maps the names of server's tools (or prompts) within budget
// bytes of a whole exposed name (see NameBudget).
func MapNames(server string, names []string, budget int) *NameMap {
	m := &NameMap{server: server}
	m.toPart = mapNames(names, budget-len(ToolName(server, "")))
	m.toBare = mapNames(names, budget)
	m.fromPart, m.fromBare = invert(m.toPart), invert(m.toBare)
	return m
}

// Namespaced is the namespaced name own is exposed by.
func (m *NameMap) Namespaced(own string) string {
	if m == nil {
		panic("actors: Namespaced of a nil NameMap") // the server's name is needed
	}
	return ToolName(m.server, m.part(own))
}

// Bare is the name own is exposed by on a server with no prefix.
func (m *NameMap) Bare(own string) string {
	if m == nil {
		return own
	}
	if b, ok := m.toBare[own]; ok {
		return b
	}
	return own
}

// OwnOfPart is the own name whose namespaced name ends in part: the one
// mapped to part, else part itself (the own name reaches its tool too).
func (m *NameMap) OwnOfPart(part string) string {
	if m == nil {
		return part
	}
	if own, ok := m.fromPart[part]; ok {
		return own
	}
	return part
}

// OwnOfBare is the own name that may be exposed bare as bare, else bare
// itself: the caller checks that Bare of it gives bare back.
func (m *NameMap) OwnOfBare(bare string) string {
	if m == nil {
		return bare
	}
	if own, ok := m.fromBare[bare]; ok {
		return own
	}
	return bare
}

// Mapped reports whether any name differs from its own.
func (m *NameMap) Mapped() bool { return m != nil && (len(m.toPart) > 0 || len(m.toBare) > 0) }

func (m *NameMap) part(own string) string {
	if p, ok := m.toPart[own]; ok {
		return p
	}
	return own
}

// mapNames returns the names the rule of NameMap gives those of names that
// need one, within budget bytes each; nil when every name is kept.
func mapNames(names []string, budget int) map[string]string {
	budget = max(budget, nameHashLen)
	kept := make(map[string]bool, len(names))
	var rest []string
	for _, n := range names {
		if len(n) <= budget && SafeToolName(n) {
			kept[n] = true
		} else {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	rest = slices.Compact(rest)
	if len(rest) == 0 {
		return nil
	}
	plain := make(map[string]int, len(rest))
	for _, n := range rest {
		if s := sanitizeName(n); s != "" && len(s) <= budget {
			plain[s]++
		}
	}
	out := make(map[string]string, len(rest))
	var shorten []string
	for _, n := range rest {
		if s := sanitizeName(n); plain[s] == 1 && !kept[s] {
			out[n] = s
		} else {
			shorten = append(shorten, n)
		}
	}
	taken := kept // from here on, every name given
	for _, s := range out {
		taken[s] = true
	}
	for _, n := range shorten {
		for salt := 0; ; salt++ {
			if s := shortName(n, budget, salt); !taken[s] {
				out[n], taken[s] = s, true
				break
			}
		}
	}
	return out
}

// sanitizeName replaces each rune of name outside [a-zA-Z0-9_-], and each
// byte that is not UTF-8, with '_'.
func sanitizeName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if r < utf8.RuneSelf && safeByte(byte(r)) {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// shortName is name sanitized, cut to leave room within budget for '_'
// and a hash of name (and of salt, when not 0).
func shortName(name string, budget, salt int) string {
	in := name
	if salt > 0 {
		in += "\x00" + strconv.Itoa(salt)
	}
	sum := sha256.Sum256([]byte(in))
	hash := hex.EncodeToString(sum[:nameHashLen/2])
	keep := budget - nameHashLen - 1
	s := sanitizeName(name)
	if keep <= 0 || s == "" {
		return hash
	}
	if len(s) > keep {
		s = s[:keep]
	}
	return s + "_" + hash
}

func invert(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}
