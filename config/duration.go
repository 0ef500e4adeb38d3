package config

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	v, err := parseDuration(data, time.Millisecond)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
