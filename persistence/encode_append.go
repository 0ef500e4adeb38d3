package persistence

import (
	"encoding/binary"
	"math"
	"time"
)

// appendHistory appends h's msgpack map to b: the bytes EncodeMsgpack
// writes (TestAppendHistoryMatchesEncoder), without an encoder's interface
// call and error check per field. A block encodes thousands of call records
// a commit this way.
func appendHistory(b []byte, h *HistoryRecord) []byte {
	scope := h.Scope != (Scope{})
	n := 4 // v, seq, time, kind
	for _, set := range [...]bool{h.Server != "", h.Transition != "", h.Detail != "", h.PID != 0, len(h.Stderr) > 0,
		h.Method != "", scope, h.Tool != "", h.CalledAs != "", h.Duration != 0, h.Waited != 0, h.CallID != "", h.Outcome != "", h.Error != "", h.ResultSize != 0,
		len(h.Arguments) > 0, len(h.Result) > 0, h.Group != "", h.Hash != "", len(h.Definition) > 0, h.By != ""} {
		if set {
			n++
		}
	}
	b = appendMapLen(b, n)
	b = appendInt(appendStr(b, "v"), int64(h.V))
	b = appendUint(appendStr(b, "seq"), h.Seq)
	b = appendTime(appendStr(b, "time"), h.Time)
	b = appendStr(appendStr(b, "kind"), string(h.Kind))
	b = appendStrOmit(b, "server", h.Server)
	b = appendStrOmit(b, "transition", h.Transition)
	b = appendStrOmit(b, "detail", h.Detail)
	if h.PID != 0 {
		b = appendInt(appendStr(b, "pid"), int64(h.PID))
	}
	if len(h.Stderr) > 0 {
		b = appendArrayLen(appendStr(b, "stderr"), len(h.Stderr))
		for _, line := range h.Stderr {
			b = appendStr(b, line)
		}
	}
	b = appendStrOmit(b, "method", h.Method)
	if scope {
		b = appendStr(b, "scope")
		if h.Scope.Stack != "" {
			b = appendMapLen(b, 2)
		} else {
			b = appendMapLen(b, 1)
		}
		b = appendStr(appendStr(b, "session"), h.Scope.Session)
		b = appendStrOmit(b, "stack", h.Scope.Stack)
	}
	b = appendStrOmit(b, "tool", h.Tool)
	b = appendStrOmit(b, "called_as", h.CalledAs)
	if h.Duration != 0 {
		b = appendInt(appendStr(b, "duration"), int64(h.Duration))
	}
	if h.Waited != 0 {
		b = appendInt(appendStr(b, "waited"), int64(h.Waited))
	}
	b = appendStrOmit(b, "call_id", h.CallID)
	b = appendStrOmit(b, "outcome", h.Outcome)
	b = appendStrOmit(b, "error", h.Error)
	if h.ResultSize != 0 {
		b = appendInt(appendStr(b, "result_size"), int64(h.ResultSize))
	}
	if len(h.Arguments) > 0 {
		b = appendBin(appendStr(b, "arguments"), h.Arguments)
	}
	if len(h.Result) > 0 {
		b = appendBin(appendStr(b, "result"), h.Result)
	}
	b = appendStrOmit(b, "group", h.Group)
	b = appendStrOmit(b, "hash", h.Hash)
	if len(h.Definition) > 0 {
		b = appendBin(appendStr(b, "definition"), h.Definition)
	}
	return appendStrOmit(b, "by", h.By)
}

func appendMapLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

func appendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendStrOmit(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	return appendStr(appendStr(b, k), v)
}

func appendBin(b, v []byte) []byte {
	switch n := len(v); {
	case n < 256:
		b = append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
	}
	return append(b, v...)
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// appendTime is msgpack's timestamp extension (type -1), in the 4, 8 or
// 12 bytes form the encoder picks.
func appendTime(b []byte, t time.Time) []byte {
	secs := uint64(t.Unix())
	if secs>>34 == 0 {
		data := uint64(t.Nanosecond())<<34 | secs
		if data&0xffffffff00000000 == 0 {
			return binary.BigEndian.AppendUint32(append(b, 0xd6, 0xff), uint32(data))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xd7, 0xff), data)
	}
	b = binary.BigEndian.AppendUint32(append(b, 0xc7, 12, 0xff), uint32(t.Nanosecond()))
	return binary.BigEndian.AppendUint64(b, secs)
}
