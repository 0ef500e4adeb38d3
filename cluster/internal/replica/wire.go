package replica

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// A forwarded request crosses to the server's member in a binary layout,
// not as JSON: the call's arguments, _meta and task are already JSON (the
// caller's member parsed and checked them), so they travel as the bytes
// they are, and the member that runs the call reads the rest by length
// instead of scanning every byte of the arguments again. Encoding and
// decoding it as JSON was about a tenth of a three-member cluster's CPU,
// most of it on the member that runs the call.
//
// The layout: wireVersion, then each string field as a uvarint length and
// its bytes (Op, Server, Tool, Method, Params, Meta, Task, Input, Session,
// Stack, Client, ProgressToken), the two timeouts as varints, then a byte
// of flags (Progress, ResetTimeoutOnProgress, Legacy). Nothing may follow.
const wireVersion = 0xf1 // not a byte a JSON text starts with

const (
	flagProgress = 1 << iota
	flagResetTimeoutOnProgress
	flagLegacy
	flagsKnown = flagProgress | flagResetTimeoutOnProgress | flagLegacy
)

var errBadForwarded = errors.New("cluster: a malformed forwarded request")

// encode lays f out for the link.
func (f *forwarded) encode() []byte {
	size := 1 + 14*binary.MaxVarintLen64 + 1 + len(f.Op) + len(f.Server) + len(f.Tool) + len(f.Method) +
		len(f.Params) + len(f.Meta) + len(f.Task) + len(f.Input) + len(f.Session) + len(f.Stack) + len(f.Client) + len(f.ProgressToken)
	b := make([]byte, 0, size)
	b = append(b, wireVersion)
	for _, s := range [...]string{f.Op, f.Server, f.Tool, f.Method} {
		b = appendField(b, s)
	}
	for _, s := range [...][]byte{f.Params, f.Meta, f.Task} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, s := range [...]string{f.Input, f.Session, f.Stack, f.Client, f.ProgressToken} {
		b = appendField(b, s)
	}
	b = binary.AppendVarint(b, f.TimeoutMs)
	b = binary.AppendVarint(b, f.MaxTotalTimeoutMs)
	var flags byte
	if f.Progress {
		flags |= flagProgress
	}
	if f.ResetTimeoutOnProgress {
		flags |= flagResetTimeoutOnProgress
	}
	if f.Legacy {
		flags |= flagLegacy
	}
	return append(b, flags)
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeForwarded reads a forwarded request: the binary layout, or JSON
// (a body that starts as a JSON object does). Its raw fields share b's
// bytes, which the caller must not change.
func decodeForwarded(b []byte) (forwarded, error) {
	var f forwarded
	if len(b) > 0 && b[0] != wireVersion {
		err := json.Unmarshal(b, &f)
		return f, err
	}
	if len(b) == 0 {
		return f, errBadForwarded
	}
	b = b[1:]
	var raw [12][]byte
	for i := range raw {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return f, errBadForwarded
		}
		raw[i], b = b[k:k+int(n)], b[k+int(n):]
	}
	var k int
	if f.TimeoutMs, k = binary.Varint(b); k <= 0 {
		return f, errBadForwarded
	}
	b = b[k:]
	if f.MaxTotalTimeoutMs, k = binary.Varint(b); k <= 0 {
		return f, errBadForwarded
	}
	b = b[k:]
	if len(b) != 1 || b[0]&^flagsKnown != 0 {
		return f, errBadForwarded
	}
	f.Progress, f.ResetTimeoutOnProgress, f.Legacy = b[0]&flagProgress != 0, b[0]&flagResetTimeoutOnProgress != 0, b[0]&flagLegacy != 0
	f.Op, f.Server, f.Tool, f.Method = string(raw[0]), string(raw[1]), string(raw[2]), string(raw[3])
	for _, r := range raw[4:7] {
		// The arguments, _meta and task go into the frame written to the
		// server as they are: whatever the other member sent, they must
		// be JSON values and nothing more.
		if len(r) > 0 && !json.Valid(r) {
			return f, errBadForwarded
		}
	}
	f.Params, f.Meta, f.Task = rawJSON(raw[4]), rawJSON(raw[5]), rawJSON(raw[6])
	f.Input = string(raw[7])
	f.Session, f.Stack, f.Client, f.ProgressToken = string(raw[8]), string(raw[9]), string(raw[10]), string(raw[11])
	return f, nil
}

// rawJSON is b as a raw field: absent when empty, as JSON's omitempty
// leaves it.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}
