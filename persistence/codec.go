package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Key prefixes; doc.go describes the layout.
const (
	prefixServer  = "s/"
	prefixCatalog = "c/"
	prefixEvent   = "e/"
	prefixGrant   = "g/"
	prefixHistory = "h/"
	prefixKind    = "k/"
	prefixTask    = "t/"
	prefixGwTask  = "x/"

	keyEventMark   = "m/seq/event"
	keyHistoryMark = "m/seq/history"
	keyPendingFrom = "m/pending-from" // every event below this seq is processed (or pruned)

	seqLen = 8
)

// record is satisfied by a pointer to each record type: it exposes the
// schema version field so one encoder and one decoder serve every kind.
type record[T any] interface {
	*T
	schemaVersion() *int
}

func (r *ServerRecord) schemaVersion() *int  { return &r.V }
func (r *CatalogRecord) schemaVersion() *int { return &r.V }
func (r *EventRecord) schemaVersion() *int   { return &r.V }
func (r *GrantRecord) schemaVersion() *int   { return &r.V }
func (r *HistoryRecord) schemaVersion() *int { return &r.V }
func (r *TaskRecord) schemaVersion() *int    { return &r.V }
func (r *GatewayTaskRecord) schemaVersion() *int {
	return &r.V
}

// encodeRecord stamps r with SchemaVersion and returns its msgpack bytes.
func encodeRecord[T any, P record[T]](r *T) ([]byte, error) {
	*P(r).schemaVersion() = SchemaVersion
	b, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", r, err)
	}
	return b, nil
}

// decodeRecord decodes the value stored under key. It never panics: bytes
// that do not decode, or decode with trailing garbage, wrap ErrCorrupt; a
// record written by a newer schema wraps ErrSchemaVersion. Older versions
// are upgraded in place (version 1 is the first, so there is nothing to
// convert yet).
func decodeRecord[T any, P record[T]](key, val []byte) (rec T, err error) {
	defer func() {
		// The decoder is third-party code facing bytes from disk; a panic in
		// it must surface as a corrupt record, not take the host down.
		if p := recover(); p != nil {
			var zero T
			rec, err = zero, fmt.Errorf("key %q: decoder panic: %v: %w", key, p, ErrCorrupt)
		}
	}()
	if err := wellFormed(val); err != nil {
		return rec, fmt.Errorf("key %q: %v: %w", key, err, ErrCorrupt)
	}
	r := bytes.NewReader(val)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	if err := dec.Decode(&rec); err != nil {
		var zero T
		return zero, fmt.Errorf("key %q: %v: %w", key, err, ErrCorrupt)
	}
	if r.Len() != 0 {
		var zero T
		return zero, fmt.Errorf("key %q: %d trailing bytes: %w", key, r.Len(), ErrCorrupt)
	}
	if err := checkVersion(key, P(&rec).schemaVersion()); err != nil {
		var zero T
		return zero, err
	}
	return rec, nil
}

// checkVersion refuses a version above SchemaVersion or below 0, and
// upgrades the rest to SchemaVersion.
func checkVersion(key []byte, v *int) error {
	switch {
	case *v > SchemaVersion:
		return fmt.Errorf("key %q: version %d, this build reads up to %d: %w", key, *v, SchemaVersion, ErrSchemaVersion)
	case *v < 0:
		return fmt.Errorf("key %q: negative version %d: %w", key, *v, ErrCorrupt)
	}
	*v = SchemaVersion
	return nil
}

// maxNesting bounds how deep a record's values nest; ours go four deep
// (catalog, tools, tool, field), the rest is room for later versions.
const maxNesting = 32

// wellFormed checks that b is exactly one msgpack value, nested at most
// maxNesting deep, whose declared lengths and element counts fit in b. The
// decoder trusts those headers: it preallocates a slice of structs for an
// array's declared length (the alloc limit is ineffective there in
// msgpack v5.4.1), so four bytes could ask for gigabytes, and it recurses
// once per nesting level. Each element takes at least one byte, so after
// this check allocation is bounded by len(b).
func wellFormed(b []byte) error {
	pending := []int{1} // values still to read at each open level
	i := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending = pending[:top]
			continue
		}
		pending[top]--
		if i >= len(b) {
			return errors.New("truncated")
		}
		c := b[i]
		i++
		var lenBytes, payload, children int
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3: // fixint, nil, false, true
		case c <= 0x8f: // fixmap
			children = 2 * int(c&0x0f)
		case c <= 0x9f: // fixarray
			children = int(c & 0x0f)
		case c <= 0xbf: // fixstr
			payload = int(c & 0x1f)
		case c == 0xc4, c == 0xd9: // bin8, str8
			lenBytes = 1
		case c == 0xc5, c == 0xda: // bin16, str16
			lenBytes = 2
		case c == 0xc6, c == 0xdb: // bin32, str32
			lenBytes = 4
		case c >= 0xc7 && c <= 0xc9: // ext8, ext16, ext32: length, then type and data
			lenBytes, payload = 1<<(c-0xc7), 1
		case c == 0xca, c == 0xce, c == 0xd2: // float32, uint32, int32
			payload = 4
		case c == 0xcb, c == 0xcf, c == 0xd3: // float64, uint64, int64
			payload = 8
		case c == 0xcc, c == 0xd0: // uint8, int8
			payload = 1
		case c == 0xcd, c == 0xd1: // uint16, int16
			payload = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1..16, after the type byte
			payload = 1 + 1<<(c-0xd4)
		case c == 0xdc, c == 0xde: // array16, map16
			lenBytes = 2
		case c == 0xdd, c == 0xdf: // array32, map32
			lenBytes = 4
		default: // 0xc1, never used
			return fmt.Errorf("invalid code 0x%02x at %d", c, i-1)
		}
		if lenBytes > 0 {
			if len(b)-i < lenBytes {
				return errors.New("truncated")
			}
			var n uint64
			for _, x := range b[i : i+lenBytes] {
				n = n<<8 | uint64(x)
			}
			i += lenBytes
			if n > uint64(len(b)) {
				return fmt.Errorf("length %d at %d exceeds the record", n, i)
			}
			switch {
			case c == 0xdc || c == 0xdd:
				children = int(n)
			case c == 0xde || c == 0xdf:
				children = 2 * int(n)
			default:
				payload += int(n)
			}
		}
		if payload > len(b)-i || children > len(b)-i {
			return fmt.Errorf("value at %d runs past the end", i)
		}
		i += payload
		if children > 0 {
			if len(pending) == maxNesting {
				return fmt.Errorf("nested over %d deep", maxNesting)
			}
			pending = append(pending, children)
		}
	}
	if i != len(b) {
		return fmt.Errorf("%d trailing bytes", len(b)-i)
	}
	return nil
}

// seqKey is prefix followed by seq, big-endian so keys sort by seq.
func seqKey(prefix string, seq uint64) []byte {
	k := make([]byte, len(prefix)+seqLen)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix):], seq)
	return k
}

// keySeq reads the seq that ends a seqKey or kindKey.
func keySeq(key []byte) (uint64, error) {
	if len(key) < seqLen+2 {
		return 0, fmt.Errorf("key %q: too short for a seq: %w", key, ErrCorrupt)
	}
	return binary.BigEndian.Uint64(key[len(key)-seqLen:]), nil
}

// kindPrefix is the history-by-kind index prefix of one kind.
func kindPrefix(kind HistoryKind) string {
	return prefixKind + string(kind) + "\x00"
}

func nameKey(prefix, name string) []byte {
	return []byte(prefix + name)
}

func grantKey(scope Scope, group string) []byte {
	return []byte(prefixGrant + scope.Session + "\x00" + scope.Stack + "\x00" + group)
}

// grantPrefix covers the grants of one frame, or with Stack "" every grant
// of the session, its frames' included.
func grantPrefix(scope Scope) []byte {
	if scope.Stack == "" {
		return []byte(prefixGrant + scope.Session + "\x00")
	}
	return []byte(prefixGrant + scope.Session + "\x00" + scope.Stack + "\x00")
}

func gatewayTaskKey(id string) []byte { return []byte(prefixGwTask + id) }

func taskKey(server, taskID string) []byte {
	return []byte(prefixTask + server + "\x00" + taskID)
}

// taskPrefix covers the tasks of one server, or with server "" every task.
func taskPrefix(server string) []byte {
	if server == "" {
		return []byte(prefixTask)
	}
	return []byte(prefixTask + server + "\x00")
}

// keyTaskID is the task id that ends a taskKey: what follows the first
// NUL, as server names hold none.
func keyTaskID(key []byte) ([]byte, error) {
	i := bytes.IndexByte(key, 0)
	if i < 0 {
		return nil, fmt.Errorf("key %q: no task id: %w", key, ErrCorrupt)
	}
	return key[i+1:], nil
}

func encodeMark(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

func decodeMark(key string, val []byte) (uint64, error) {
	if len(val) != seqLen {
		return 0, fmt.Errorf("key %q: mark of %d bytes: %w", key, len(val), ErrCorrupt)
	}
	return binary.BigEndian.Uint64(val), nil
}
