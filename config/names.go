package config

import (
	"fmt"
	"strings"
)

// ReservedName is the server name no entry may have: the host exposes its
// own tool group (registering and configuring servers) under it.
const ReservedName = "config"

// ValidateServerName reports whether name can be used as a server name:
// non-empty, only [A-Za-z0-9_-], and no "__" (the separator of a
// namespaced tool name, mcp__<server>__<tool>). Its errors wrap
// ErrInvalidServerName.
func ValidateServerName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidServerName)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !nameByte(c) {
			return fmt.Errorf("%w: %q has %q (allowed: letters, digits, '_' and '-')", ErrInvalidServerName, name, c)
		}
	}
	if strings.Contains(name, "__") {
		return fmt.Errorf("%w: %q contains \"__\", the namespace separator", ErrInvalidServerName, name)
	}
	return nil
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
