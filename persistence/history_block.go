package persistence

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/vmihailenco/msgpack/v5"
)

// Call records are written in blocks: the run of call records an Apply
// appends between two other history records is one key, h/<the run's last
// seq>, whose value holds the records (each the map a single record is).
// A key per call cost Badger more than the rest of the call: its WAL entry,
// its memtable node, its table entry, rewritten again at each compaction.
// A run of one is written as a single record, as every record was before
// blocks; both are read alike.
//
// A block is a msgpack map {"v": 2, "calls": ...}: a build from before
// blocks reads it as a record of a newer schema and refuses it with
// ErrSchemaVersion, as it would any. "calls" is the records' msgpack
// array, Snappy-compressed in a bin value: call records repeat their field
// names and most of their values, so a block takes about a sixth of its
// bytes (a 150-call block: 14.9 kB raw, 2.4 kB compressed), and
// compressing costs less than the bytes saved (the WAL write and its
// msync, the memtable, the tables). An array too big to compress is the
// value itself.
//
// Since a block's key is its last seq and no other key falls inside its
// range, a seek to h/<s> lands on the key holding seq s or on the first one
// after it, in either layout, and keys still iterate in seq order.
const (
	// maxBlockRecords bounds a block: reading from the middle of one decodes
	// it whole.
	maxBlockRecords = 256
	// maxBlockBytes bounds a block's value, far below what one Badger
	// entry may be.
	maxBlockBytes = 256 << 10
	// blockHeader is the array32 header a block's records start with,
	// written once their number is known.
	blockHeader = 5
	// maxBlockDecoded bounds what a compressed block may decode to, so
	// that a few damaged bytes cannot ask for gigabytes.
	maxBlockDecoded = 4 * maxBlockBytes
)

// blockPrefix starts every block: a map of two, "v": 2, "calls". No record
// is a map of two (one has at least v, seq, time and kind).
var blockPrefix = []byte{0x82, 0xa1, 'v', 0x02, 0xa5, 'c', 'a', 'l', 'l', 's'}

// callBlock collects the call records of one run, encoded once.
type callBlock struct {
	buf  bytes.Buffer
	z    []byte // room to compress into, reused: its worst case is several times a block
	n    int
	last uint64
}

// add stamps h with SchemaVersion and encodes it, its Seq assigned, into
// the block.
func (b *callBlock) add(h *HistoryRecord) error {
	if b.n == 0 {
		b.buf.Reset()
		b.buf.Write(make([]byte, blockHeader))
	}
	h.V = SchemaVersion
	b.buf.Write(appendHistory(b.buf.AvailableBuffer(), h))
	b.n++
	b.last = h.Seq
	return nil
}

// full reports whether the block should be written before it grows more.
func (b *callBlock) full() bool { return b.n >= maxBlockRecords || b.buf.Len() >= maxBlockBytes }

// take returns the block's key and value and empties it; ok is false when
// it holds nothing. A block of one record is that record alone.
func (b *callBlock) take() (key, value []byte, ok bool) {
	if b.n == 0 {
		return nil, nil, false
	}
	raw := b.buf.Bytes()
	raw[0] = 0xdd // array32
	binary.BigEndian.PutUint32(raw[1:blockHeader], uint32(b.n))
	switch {
	case b.n == 1:
		value = bytes.Clone(raw[blockHeader:])
	case len(raw) > maxBlockDecoded: // a call's payloads made it big: kept as it is
		value = append(bytes.Clone(blockPrefix), raw...)
	default:
		n := len(blockPrefix) + 5
		if need := n + s2.MaxEncodedLen(len(raw)); cap(b.z) < need {
			b.z = make([]byte, need)
		}
		value = b.z[:cap(b.z)]
		copy(value, blockPrefix)
		z := s2.EncodeSnappy(value[n:], raw)
		value[n-5] = 0xc6 // bin32
		binary.BigEndian.PutUint32(value[n-4:n], uint32(len(z)))
		value = bytes.Clone(value[:n+len(z)]) // the value keeps no spare room
	}
	key = seqKey(prefixHistory, b.last)
	b.n = 0
	if b.buf.Cap() > maxBlockDecoded {
		b.buf = bytes.Buffer{} // a big payload's room is not kept for good
	}
	if cap(b.z) > maxBlockDecoded {
		b.z = nil
	}
	return key, value, true
}

// isBlock reports whether a history value is a block rather than one
// record.
func isBlock(val []byte) bool { return bytes.HasPrefix(val, blockPrefix) }

// decodeHistory decodes the value under a history key: one record, or a
// block's records in seq order. Like decodeRecord it never panics, wraps
// ErrCorrupt for bytes that are not records and ErrSchemaVersion for a
// record of a newer schema.
func decodeHistory(key, val []byte) ([]HistoryRecord, error) {
	if !isBlock(val) {
		h, err := decodeRecord[HistoryRecord](key, val)
		if err != nil {
			return nil, err
		}
		return []HistoryRecord{h}, nil
	}
	return decodeBlock(key, val[len(blockPrefix):])
}

// decodeBlock decodes what follows a block's prefix: its compressed
// records, or their array.
func decodeBlock(key, val []byte) (recs []HistoryRecord, err error) {
	defer func() {
		if p := recover(); p != nil {
			recs, err = nil, fmt.Errorf("key %q: decoder panic: %v: %w", key, p, ErrCorrupt)
		}
	}()
	if len(val) > 0 && val[0] == 0xc6 { // bin32: compressed
		if len(val) < 5 || binary.BigEndian.Uint32(val[1:5]) != uint32(len(val)-5) {
			return nil, fmt.Errorf("key %q: compressed block of %d bytes cut or padded: %w", key, len(val), ErrCorrupt)
		}
		n, err := s2.DecodedLen(val[5:])
		if err != nil || n > maxBlockDecoded {
			return nil, fmt.Errorf("key %q: compressed block of %d bytes (%v): %w", key, n, err, ErrCorrupt)
		}
		if val, err = s2.Decode(make([]byte, n), val[5:]); err != nil {
			return nil, fmt.Errorf("key %q: compressed block: %v: %w", key, err, ErrCorrupt)
		}
	}
	if len(val) == 0 || !(val[0]&0xf0 == 0x90 || val[0] == 0xdc || val[0] == 0xdd) {
		return nil, fmt.Errorf("key %q: block holds no array: %w", key, ErrCorrupt)
	}
	if err := wellFormed(val); err != nil {
		return nil, fmt.Errorf("key %q: %v: %w", key, err, ErrCorrupt)
	}
	r := bytes.NewReader(val)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, fmt.Errorf("key %q: block: %v: %w", key, err, ErrCorrupt)
	}
	recs = make([]HistoryRecord, n) // wellFormed bounded n by len(val)
	for i := range recs {
		if err := dec.Decode(&recs[i]); err != nil {
			return nil, fmt.Errorf("key %q: block record %d: %v: %w", key, i, err, ErrCorrupt)
		}
		if err := checkVersion(key, &recs[i].V); err != nil {
			return nil, err
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("key %q: %d trailing bytes: %w", key, r.Len(), ErrCorrupt)
	}
	return recs, nil
}

// encodeBlock is the value of a block holding recs, whose Seqs are set:
// what Prune writes back when it deletes part of a block.
func encodeBlock(recs []HistoryRecord) ([]byte, error) {
	var b callBlock
	for i := range recs {
		if err := b.add(&recs[i]); err != nil {
			return nil, err
		}
	}
	_, value, _ := b.take()
	return value, nil
}
