package persistence

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

// historyKeys lists the history keys: each key's seq and how many records
// its value holds (a block's, or 1).
func historyKeys(t *testing.T, s *Store) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	err := s.db.View(func(txn *badger.Txn) error {
		return iterate(txn, iteration{prefix: []byte(prefixHistory), values: true}, func(item *badger.Item) (bool, error) {
			seq, err := keySeq(item.Key())
			if err != nil {
				return false, err
			}
			return true, item.Value(func(v []byte) error {
				recs, err := decodeHistory(item.Key(), v)
				out = append(out, [2]uint64{seq, uint64(len(recs))})
				return err
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func callOp(i int, at time.Time) Op {
	return AppendHistory(HistoryRecord{Kind: HistoryCall, Server: "a", Tool: "mcp__a__t", Time: at,
		Duration: time.Duration(i) * time.Microsecond, Outcome: "ok", Scope: Scope{Session: "s"}})
}

func seqs(recs []HistoryRecord) []uint64 {
	out := make([]uint64, len(recs))
	for i, h := range recs {
		out[i] = h.Seq
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// blockedBatch applies, in one batch: calls 1-5, a transition (6), calls
// 7-306 (a full block and the rest), a grant (307) and one call (308).
func blockedBatch(t *testing.T, s *Store, at time.Time) Applied {
	t.Helper()
	var ops []Op
	for i := range 5 {
		ops = append(ops, callOp(i, at))
	}
	ops = append(ops, AppendHistory(HistoryRecord{Kind: HistoryLifecycle, Server: "a", Transition: "ready", Time: at}))
	for i := range 300 {
		ops = append(ops, callOp(i, at))
	}
	ops = append(ops, PutGrant(GrantRecord{Scope: Scope{Session: "s"}, Group: "a", Granted: at}), callOp(0, at))
	return mustApply(t, s, ops...)
}

// One batch's calls are written as blocks, cut by the other records and at
// maxBlockRecords; every read sees each record once, in seq order.
func TestHistoryBlocks(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	applied := blockedBatch(t, s, time.Now())
	want := [][2]uint64{{5, 5}, {6, 1}, {262, maxBlockRecords}, {306, 300 - maxBlockRecords}, {307, 1}, {308, 1}}
	if diff := cmp.Diff(want, historyKeys(t, s)); diff != "" {
		t.Fatalf("history keys (seq, records) (-want +got):\n%s", diff)
	}
	all, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(applied.History, all); diff != "" {
		t.Fatalf("History differs from what Apply reported (-applied +read):\n%s", diff)
	}
	if diff := cmp.Diff(seqRange(1, 308), seqs(all)); diff != "" {
		t.Fatalf("seqs (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		name string
		f    HistoryFilter
		want []uint64
	}{
		{"after, inside a block", HistoryFilter{After: 100, Limit: 5}, seqRange(101, 105)},
		{"after, a block's last", HistoryFilter{After: 262, Limit: 2}, []uint64{263, 264}},
		{"newest", HistoryFilter{Newest: true, Limit: 4}, seqRange(305, 308)},
		{"newest after, inside a block", HistoryFilter{Newest: true, After: 300}, seqRange(301, 308)},
		{"lifecycle, by its index", HistoryFilter{Kind: HistoryLifecycle}, []uint64{6}},
		{"grants, by their index", HistoryFilter{Kind: HistoryGrant}, []uint64{307}},
		{"calls", HistoryFilter{Kind: HistoryCall, After: 3, Limit: 4}, []uint64{4, 5, 7, 8}},
	} {
		got, err := s.History(tt.f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, seqs(got)); diff != "" {
			t.Errorf("%s: seqs (-want +got):\n%s", tt.name, diff)
		}
	}
	if got := s.LastHistorySeq(); got != 308 {
		t.Errorf("LastHistorySeq = %d, want 308", got)
	}
}

// Pages of every size walk blocks record by record, their cursors inside
// blocks, each record once.
func TestHistoryPageAcrossBlocks(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	blockedBatch(t, s, time.Now())
	for _, limit := range []int{1, 7, 256, 1000} {
		f := HistoryFilter{Limit: limit}
		var got []uint64
		for pages := 0; ; pages++ {
			if pages > 400 {
				t.Fatalf("limit %d: no end after %d pages", limit, pages)
			}
			page, err := s.HistoryPage(f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, seqs(page.Records)...)
			if page.Next == 0 {
				break
			}
			f.After = page.Next
		}
		if diff := cmp.Diff(seqRange(1, 308), got); diff != "" {
			t.Errorf("limit %d: seqs (-want +got):\n%s", limit, diff)
		}
	}
	page, err := s.HistoryPage(HistoryFilter{Newest: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seqRange(299, 308), seqs(page.Records)); diff != "" {
		t.Errorf("newest page (-want +got):\n%s", diff)
	}
}

// writeSingleKeys writes recs the way journals were written before blocks:
// a key per record, calls included, the others with their index key, and
// the high-water mark.
func writeSingleKeys(t *testing.T, s *Store, recs []HistoryRecord) {
	t.Helper()
	err := s.db.Update(func(txn *badger.Txn) error {
		for i := range recs {
			b, err := encodeRecord(&recs[i])
			if err != nil {
				return err
			}
			if err := txn.Set(seqKey(prefixHistory, recs[i].Seq), b); err != nil {
				return err
			}
			if recs[i].Kind != HistoryCall {
				if err := txn.Set(seqKey(kindPrefix(recs[i].Kind), recs[i].Seq), []byte{}); err != nil {
					return err
				}
			}
		}
		return txn.Set([]byte(keyHistoryMark), encodeMark(recs[len(recs)-1].Seq))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A journal written a key per call opens, and its records are read, paged
// and pruned with the blocks written after it.
func TestHistoryOldLayoutStillRead(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	old := clock.Now()
	s, err := Open(dir, Options{MaintenanceInterval: -1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var recs []HistoryRecord
	for i := 1; i <= 40; i++ {
		kind := HistoryCall
		if i%10 == 0 {
			kind = HistoryLifecycle
		}
		recs = append(recs, HistoryRecord{Seq: uint64(i), Time: old, Kind: kind, Server: "a", Tool: "mcp__a__t", Outcome: "ok"})
	}
	writeSingleKeys(t, s, recs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, Options{Now: clock.Now, HistoryRetention: 24 * time.Hour})
	if got := s.LastHistorySeq(); got != 40 {
		t.Fatalf("reopened: LastHistorySeq = %d, want 40", got)
	}
	now := clock.Advance(2 * time.Hour)
	var ops []Op
	for i := range 20 {
		ops = append(ops, callOp(i, now))
	}
	applied := mustApply(t, s, ops...)
	if first := applied.History[0].Seq; first != 41 {
		t.Fatalf("first new seq %d, want 41", first)
	}
	if diff := cmp.Diff([][2]uint64{{39, 1}, {40, 1}, {60, 20}}, historyKeys(t, s)[38:]); diff != "" {
		t.Fatalf("old keys then a block (-want +got):\n%s", diff)
	}
	var got []uint64
	f := HistoryFilter{Limit: 6}
	for {
		page, err := s.HistoryPage(f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, seqs(page.Records)...)
		if page.Next == 0 {
			break
		}
		f.After = page.Next
	}
	if diff := cmp.Diff(seqRange(1, 60), got); diff != "" {
		t.Fatalf("paged seqs (-want +got):\n%s", diff)
	}
	lifecycle, err := s.History(HistoryFilter{Kind: HistoryLifecycle})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{10, 20, 30, 40}, seqs(lifecycle)); diff != "" {
		t.Errorf("lifecycle by index (-want +got):\n%s", diff)
	}

	clock.Advance(23 * time.Hour) // the old records are 25 h old, the new 23 h
	res, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if res.History != 40 {
		t.Errorf("pruned %d history records, want the 40 old ones", res.History)
	}
	left, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(seqRange(41, 60), seqs(left)); diff != "" {
		t.Errorf("left after Prune (-want +got):\n%s", diff)
	}
	if lifecycle, _ := s.History(HistoryFilter{Kind: HistoryLifecycle}); len(lifecycle) != 0 {
		t.Errorf("lifecycle index left %v", seqs(lifecycle))
	}
}

// Prune deletes a block whose records are all past retention, and writes
// back, under its key, one that holds newer records too.
func TestPruneHistoryBlocks(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now, HistoryRetention: time.Hour})
	t0 := clock.Now()
	var ops []Op
	for i := range 10 { // 1-10, all old
		ops = append(ops, callOp(i, t0))
	}
	ops = append(ops, AppendHistory(HistoryRecord{Kind: HistoryLifecycle, Server: "a", Transition: "ready", Time: t0}))
	// 11 is that transition; 12-21 are old and new in turn.
	for i := range 10 {
		at := t0
		if i%2 == 1 {
			at = t0.Add(2 * time.Hour)
		}
		ops = append(ops, callOp(i, at))
	}
	mustApply(t, s, ops...)
	clock.Advance(time.Hour + time.Minute)
	res, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if res.History != 16 {
		t.Errorf("pruned %d history records, want 16", res.History)
	}
	if diff := cmp.Diff([][2]uint64{{21, 5}}, historyKeys(t, s)); diff != "" {
		t.Errorf("keys left (-want +got):\n%s", diff)
	}
	left, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{13, 15, 17, 19, 21}, seqs(left)); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	left, err = s.History(HistoryFilter{After: 15})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{17, 19, 21}, seqs(left)); diff != "" {
		t.Errorf("after 15 (-want +got):\n%s", diff)
	}
}

// A damaged block is ErrCorrupt, a block holding a record of a newer
// schema ErrSchemaVersion, whatever is read through it.
func TestHistoryBlockDamage(t *testing.T) {
	recs := []HistoryRecord{{Seq: 1, Kind: HistoryCall}, {Seq: 2, Kind: HistoryCall}}
	block, err := encodeBlock(recs)
	if err != nil {
		t.Fatal(err)
	}
	if !isBlock(block) || block[len(blockPrefix)] != 0xc6 {
		t.Fatalf("block % x is not a compressed block", block)
	}
	// A build from before blocks refuses one as a record of a newer schema.
	if _, err := decodeRecord[HistoryRecord]([]byte("h/x"), block); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("a block read as one record: %v, want ErrSchemaVersion", err)
	}
	array, _ := msgpack.Marshal([]map[string]any{{"v": SchemaVersion, "seq": 1, "kind": "call"}, {"v": SchemaVersion + 1, "seq": 2, "kind": "call"}})
	newer := append(bytes.Clone(blockPrefix), array...)
	flipped := bytes.Clone(block)
	for i := len(flipped) - 6; i < len(flipped); i++ {
		flipped[i] ^= 0xa5
	}
	bomb := append(bytes.Clone(blockPrefix), 0xc6, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x0f) // claims 4 GiB
	for _, tt := range []struct {
		name string
		val  []byte
		want error
	}{
		{"cut", block[:len(block)-3], ErrCorrupt},
		{"flipped", flipped, ErrCorrupt},
		{"claims a huge size", bomb, ErrCorrupt},
		{"no array", append(bytes.Clone(blockPrefix), 0x80), ErrCorrupt},
		{"plain array, cut", newer[:len(newer)-1], ErrCorrupt},
		{"a newer record", newer, ErrSchemaVersion},
	} {
		_, err := decodeHistory([]byte("h/x"), tt.val)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	got, err := decodeHistory([]byte("h/x"), block)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].V = SchemaVersion
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	s := openStore(t, t.TempDir(), Options{})
	mustApply(t, s, callOp(0, time.Now()), callOp(1, time.Now()))
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(seqKey(prefixHistory, 2), newer) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(HistoryFilter{}); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("History over a newer block: %v, want ErrSchemaVersion", err)
	}
	if _, err := s.HistoryPage(HistoryFilter{Newest: true}); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("HistoryPage over a newer block: %v, want ErrSchemaVersion", err)
	}
}

// FuzzDecodeHistory feeds arbitrary bytes to the history decoder (a record
// or a block). It must never panic; it fails with ErrCorrupt or
// ErrSchemaVersion, or returns records a block written again holds alike.
func FuzzDecodeHistory(f *testing.F) {
	block, _ := encodeBlock([]HistoryRecord{{Seq: 1, Kind: HistoryCall}, {Seq: 2, Kind: HistoryLifecycle}})
	f.Add(block)
	f.Add(append(bytes.Clone(blockPrefix), 0x92, 0x80, 0x80))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := decodeHistory([]byte("fuzz"), data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrSchemaVersion) {
				t.Fatalf("decode error %v wraps neither ErrCorrupt nor ErrSchemaVersion", err)
			}
			return
		}
		if len(recs) == 0 {
			return
		}
		b, err := encodeBlock(recs)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := decodeHistory([]byte("fuzz"), b)
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if len(again) != len(recs) {
			t.Fatalf("round trip: %d records, then %d", len(recs), len(again))
		}
	})
}

// A run of calls whose payloads pass maxBlockDecoded is written
// uncompressed, and read back whole.
func TestHistoryBlockOfBigPayloads(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	big := RawJSON(`"` + strings.Repeat("x", maxBlockDecoded) + `"`)
	mustApply(t, s, callOp(0, time.Now()), AppendHistory(HistoryRecord{Kind: HistoryCall, Server: "a", Result: big}), callOp(2, time.Now()))
	if diff := cmp.Diff([][2]uint64{{2, 2}, {3, 1}}, historyKeys(t, s)); diff != "" {
		t.Fatalf("keys (-want +got):\n%s", diff)
	}
	got, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[1].Result) != len(big) {
		t.Fatalf("read %d records, the big one's result %d bytes, want 3 and %d", len(got), len(got[1].Result), len(big))
	}
}

// ApplyWith's OmitCalls writes the same history as Apply and reports only
// the records that are not calls.
func TestHistoryOmitCalls(t *testing.T) {
	at := time.Now()
	full := openStore(t, t.TempDir(), Options{})
	blockedBatch(t, full, at)
	want, err := full.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}

	s := openStore(t, t.TempDir(), Options{})
	var ops []Op
	for i := range 5 {
		ops = append(ops, callOp(i, at))
	}
	ops = append(ops, AppendHistory(HistoryRecord{Kind: HistoryLifecycle, Server: "a", Transition: "ready", Time: at}))
	for i := range 300 {
		ops = append(ops, callOp(i, at))
	}
	ops = append(ops, PutGrant(GrantRecord{Scope: Scope{Session: "s"}, Group: "a", Granted: at}), callOp(0, at))
	applied, err := s.ApplyWith(ops, ApplyOptions{OmitCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{6, 307}, seqs(applied.History)); diff != "" {
		t.Errorf("reported history seqs (-want +got):\n%s", diff)
	}
	got, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("history written with OmitCalls differs (-Apply +ApplyWith):\n%s", diff)
	}
	// The ops are the caller's: applying them again appends new records
	// with new seqs and leaves the ops' own records unstamped.
	if _, err := s.ApplyWith(ops[:1], ApplyOptions{OmitCalls: true}); err != nil {
		t.Fatal(err)
	}
	if ops[0].history.Seq != 0 || ops[0].history.V != 0 {
		t.Errorf("the op's record was stamped: seq %d, v %d", ops[0].history.Seq, ops[0].history.V)
	}
	last, err := s.History(HistoryFilter{After: 308})
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 1 || last[0].Seq != 309 || last[0].Tool != "mcp__a__t" {
		t.Errorf("the call applied again: %+v, want one call with seq 309", last)
	}
}

// A full block of small calls, as a host journals them, stays under the
// value threshold: in the LSM tree, so a commit of calls syncs the WAL
// alone rather than the value log too.
func TestHistoryBlockUnderValueThreshold(t *testing.T) {
	var b callBlock
	at := time.Now()
	for i := range maxBlockRecords {
		h := HistoryRecord{Seq: uint64(1_000_000 + i), Time: at.Add(time.Duration(i) * 23 * time.Microsecond), Kind: HistoryCall,
			Server: "github", Scope: Scope{Session: "s-7f3a"}, Tool: "mcp__github__search_issues",
			Duration: time.Duration(40_000 + i*37), Outcome: "ok", ResultSize: 1834 + i}
		if err := b.add(&h); err != nil {
			t.Fatal(err)
		}
	}
	_, value, _ := b.take()
	if limit := badgerOptions(t.TempDir(), nil, false).ValueThreshold; int64(len(value)) >= limit {
		t.Errorf("a full block of small calls is %d bytes, not under the value threshold %d", len(value), limit)
	}
}
