package actors

import (
	"fmt"
	"strings"
)

// ToolPrefix starts every namespaced tool name: mcp__<server>__<tool>.
const ToolPrefix = "mcp__"

// MaxToolNameLen is the longest namespaced name most model APIs accept
// (OpenAI function names allow 64 characters). Longer names are reported,
// never silently truncated.
const MaxToolNameLen = 64

// ValidateServerName reports whether name can be used as a server name:
// non-empty, only [A-Za-z0-9_-], and no "__" (the namespace separator).
func ValidateServerName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidServerName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q (allowed: letters, digits, '_' and '-')", ErrInvalidServerName, name, c)
		}
	}
	if strings.Contains(name, "__") {
		return fmt.Errorf("%w: %q contains \"__\", the namespace separator", ErrInvalidServerName, name)
	}
	return nil
}

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
