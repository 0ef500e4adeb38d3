package mcpvisor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Duration is a time.Duration as written in a configuration file: a JSON
// number is milliseconds (the unit Gemini CLI's "timeout" uses), a JSON
// string is a Go duration such as "30s" or "1m30s". Negative durations are
// rejected. It marshals to the string form, so a marshalled value reads
// unambiguously and unmarshals to the same Duration.
type Duration time.Duration

// String returns the Go duration form, e.g. "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes d as a duration string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON accepts a number of milliseconds or a duration string.
// null leaves d unchanged, as encoding/json does for other types.
func (d *Duration) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	v, err := parseDuration(data)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = v
	return nil
}

// parseDuration decodes one JSON value into a Duration. Its messages are
// written to follow a field name: `field "timeout": must not be negative`.
func parseDuration(raw json.RawMessage) (Duration, error) {
	raw = bytes.TrimSpace(raw)
	switch kind := jsonKind(raw); kind {
	case "a number":
		ms, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return 0, fmt.Errorf("invalid number %s", raw)
		}
		if ms < 0 {
			return 0, fmt.Errorf("must not be negative, got %s", raw)
		}
		ns := math.Round(ms * float64(time.Millisecond))
		if ns >= math.MaxInt64 {
			return 0, fmt.Errorf("too large, got %s milliseconds", raw)
		}
		return Duration(ns), nil
	case "a string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q (want milliseconds as a number, or a string like \"30s\" or \"1m30s\")", s)
		}
		if v < 0 {
			return 0, fmt.Errorf("must not be negative, got %q", s)
		}
		return Duration(v), nil
	default:
		return 0, fmt.Errorf("want milliseconds (a number) or a duration string like \"30s\", got %s", kind)
	}
}
