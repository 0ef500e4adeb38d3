package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// ProtocolVersion is the MCP revision this package speaks and the client
// offers in initialize.
const ProtocolVersion = "2025-11-25"

// SupportedVersions are the revisions a server may negotiate, newest first.
// The older ones differ from ProtocolVersion only in features we gate on
// capabilities, so a session can run on any of them.
var SupportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// CheckVersion validates the protocolVersion of a server's initialize result.
// It returns older = true when the server negotiated a supported revision
// other than ProtocolVersion (worth a warning), ErrMissingVersion for "", and
// an error wrapping ErrUnsupportedVersion for a revision we do not speak, on
// which the client must disconnect.
func CheckVersion(v string) (older bool, err error) {
	switch {
	case v == "":
		return false, ErrMissingVersion
	case v == ProtocolVersion:
		return false, nil
	case slices.Contains(SupportedVersions, v):
		return true, nil
	}
	return false, fmt.Errorf("%w: %q (supported: %s)", ErrUnsupportedVersion, v, strings.Join(SupportedVersions, ", "))
}
