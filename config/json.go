package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// JSON helpers. The document has passed json.Unmarshal before any of them
// runs, so they only meet well-formed values.

type jsonMember struct {
	key   string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in document order,
// repeated keys included.
func objectMembers(raw json.RawMessage) []jsonMember {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil
	}
	var ms []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ms
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ms
		}
		ms = append(ms, jsonMember{key, v})
	}
	return ms
}

// jsonKind names the kind of a JSON value for messages: "a string", ...
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func decodeStringField(sc *Server, m jsonMember, dst *string) *Error {
	if kind := jsonKind(m.value); kind != "a string" {
		return sc.errorf(m.key, "want a string, got %s", kind)
	}
	if err := json.Unmarshal(m.value, dst); err != nil {
		return sc.errorf(m.key, "%v", err)
	}
	return nil
}

func decodeStringsField(sc *Server, m jsonMember) ([]string, *Error) {
	if kind := jsonKind(m.value); kind != "an array" {
		return nil, sc.errorf(m.key, "want an array of strings, got %s", kind)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(m.value, &elems); err != nil {
		return nil, sc.errorf(m.key, "%v", err)
	}
	var out []string
	for i, e := range elems {
		var s string
		if err := decodeStringField(sc, jsonMember{fmt.Sprintf("%s[%d]", m.key, i), e}, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeMapField(sc *Server, m jsonMember) (map[string]string, *Error) {
	if kind := jsonKind(m.value); kind != "an object" {
		return nil, sc.errorf(m.key, "want an object of strings, got %s", kind)
	}
	ms := objectMembers(m.value)
	if len(ms) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(ms))
	for _, e := range ms {
		if _, dup := out[e.key]; dup {
			return nil, sc.errorf(m.key, "key %q is given more than once", e.key)
		}
		var s string
		if err := decodeStringField(sc, jsonMember{m.key + "." + e.key, e.value}, &s); err != nil {
			return nil, err
		}
		out[e.key] = s
	}
	return out, nil
}

func decodeBoolField(sc *Server, m jsonMember, dst *bool) *Error {
	if kind := jsonKind(m.value); kind != "a boolean" {
		return sc.errorf(m.key, "want true or false, got %s", kind)
	}
	*dst = decodeBool(m.value)
	return nil
}

// decodeBool decodes a JSON boolean already known to be one.
func decodeBool(raw json.RawMessage) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte("true"))
}

func decodeIntField(sc *Server, m jsonMember, dst *int) *Error {
	if kind := jsonKind(m.value); kind != "a number" {
		return sc.errorf(m.key, "want an integer, got %s", kind)
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(m.value)))
	if err != nil {
		return sc.errorf(m.key, "want an integer, got %s", bytes.TrimSpace(m.value))
	}
	*dst = n
	return nil
}

func decodeDurationField(sc *Server, m jsonMember, dst *Duration) *Error {
	return decodeTimeoutField(sc, m, dst, time.Millisecond)
}

// decodeTimeoutField decodes a duration whose number form counts unit:
// milliseconds in most files, seconds in Cline's and Roo Code's "timeout"
// and Codex's "*_sec" fields.
func decodeTimeoutField(sc *Server, m jsonMember, dst *Duration, unit time.Duration) *Error {
	d, err := parseDuration(m.value, unit)
	if err != nil {
		return sc.errorf(m.key, "%v", err)
	}
	*dst = Duration(d)
	return nil
}

// MinTimeout is the shortest duration a server's timeouts may have, 0
// (the default) aside: anything shorter, such as "1ns", or 0.5 in a file
// whose numbers are milliseconds, would fail every call or start at once.
// It is a unit gone wrong, and an error naming the server and the field.
const MinTimeout = time.Millisecond

// tooShort is the message for a timeout under MinTimeout.
func tooShort(d time.Duration) string {
	return fmt.Sprintf("%v is shorter than %v, the least a timeout may be (0: the default); one this short fails at once, so the unit is likely wrong", d, MinTimeout)
}

// ParseDuration decodes one well-formed JSON value (as encoding/json hands
// to an UnmarshalJSON method) into a duration: a number is
// milliseconds (the unit Gemini CLI's "timeout" uses), a string is a Go
// duration such as "30s". Negative durations are rejected. Its messages are
// written to follow a field name: `field "timeout": must not be negative`.
func parseMillis(raw []byte) (time.Duration, error) {
	return parseDuration(raw, time.Millisecond)
}

// parseDuration is ParseDuration with a number counting unit.
func parseDuration(raw []byte, unit time.Duration) (time.Duration, error) {
	units := "milliseconds"
	if unit == time.Second {
		units = "seconds"
	}
	raw = bytes.TrimSpace(raw)
	switch kind := jsonKind(raw); kind {
	case "a number":
		n, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return 0, fmt.Errorf("invalid number %s", raw)
		}
		if n < 0 {
			return 0, fmt.Errorf("must not be negative, got %s", raw)
		}
		ns := math.Round(n * float64(unit))
		if ns >= math.MaxInt64 {
			return 0, fmt.Errorf("too large, got %s %s", raw, units)
		}
		if d := time.Duration(ns); d < MinTimeout && n > 0 {
			return 0, fmt.Errorf("%s %s: %s", raw, units, tooShort(d))
		}
		return time.Duration(ns), nil
	case "a string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q (want %s as a number, or a string like \"30s\" or \"1m30s\")", s, units)
		}
		if v < 0 {
			return 0, fmt.Errorf("must not be negative, got %q", s)
		}
		if v > 0 && v < MinTimeout {
			return 0, errors.New(tooShort(v))
		}
		return v, nil
	default:
		return 0, fmt.Errorf("want %s (a number) or a duration string like \"30s\", got %s", units, kind)
	}
}

// arrayElements returns the elements of a JSON array.
func arrayElements(raw json.RawMessage) []json.RawMessage {
	var elems []json.RawMessage
	_ = json.Unmarshal(raw, &elems) // well-formed, checked by the caller
	return elems
}

// unmarshalString decodes a JSON string already known to be one.
func unmarshalString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
