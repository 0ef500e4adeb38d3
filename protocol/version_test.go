package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	tests := []struct {
		version string
		older   bool
		err     error
	}{
		{"2025-11-25", false, nil},
		{"2025-06-18", true, nil},
		{"2025-03-26", true, nil},
		{"2024-11-05", true, nil},
		{"", false, ErrMissingVersion},
		{"2026-07-28", false, ErrUnsupportedVersion},
		{"2024-10-07", false, ErrUnsupportedVersion},
		{"2025-11-25 ", false, ErrUnsupportedVersion},
		{"DRAFT-2025-v3", false, ErrUnsupportedVersion},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			older, err := CheckVersion(tt.version)
			if older != tt.older || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("CheckVersion(%q) = %v, %v; want %v, %v", tt.version, older, err, tt.older, tt.err)
			}
			if errors.Is(err, ErrUnsupportedVersion) && (!strings.Contains(err.Error(), tt.version) || !strings.Contains(err.Error(), ProtocolVersion)) {
				t.Errorf("error %q should name the version and the supported list", err)
			}
		})
	}
	if SupportedVersions[0] != ProtocolVersion {
		t.Errorf("SupportedVersions[0] = %s, want ProtocolVersion first", SupportedVersions[0])
	}
}
