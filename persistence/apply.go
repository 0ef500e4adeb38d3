package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Applied reports what an Apply did.
type Applied struct {
	Events      []EventRecord   // appended, with Seq, in op order
	History     []HistoryRecord // appended, with Seq, generated grant and revoke records included, in order; calls left out by ApplyOptions.OmitCalls
	Granted     []GrantRecord   // grants that were new
	Revoked     []GrantRecord   // grants deleted
	Acked       []uint64        // ids of AckEvents found, whether newly or already processed
	UnknownAcks []uint64        // ids of AckEvents not found
}

// mutation is one badger write: a set, or a delete when del is true.
type mutation struct {
	key, value []byte
	del        bool
}

// unit is the writes that must land in the same badger transaction: one
// record with its index entries. A batch is split between units only.
type unit struct {
	muts []mutation
	// What the unit changes once committed.
	pending              int64  // pending-event count delta
	eventSeq, historySeq uint64 // highest seq written, 0 for none
}

// ApplyOptions tune what ApplyWith reports. The zero value reports
// everything, as Apply does.
type ApplyOptions struct {
	// OmitCalls leaves call records out of Applied.History: a writer that
	// queues thousands of calls a commit and reads none of them back (the
	// journal's) is spared copying each into a list nobody reads.
	OmitCalls bool
}

// Apply validates ops, then commits them in op order and returns once they
// are durable: when it returns nil every op survives a crash of the
// process. The batch is one badger transaction and one sync unless badger
// finds it too big, in which case it is split into several, each holding
// whole records with their index entries; should a later one fail, the
// earlier ones stay committed and the error says so.
//
// Seqs are reserved before committing, so a failed Apply may skip seqs but
// none is ever reused. An empty ops slice is a no-op. Apply is safe to call
// concurrently (calls serialise) and with every read.
func (s *Store) Apply(ops []Op) (Applied, error) { return s.ApplyWith(ops, ApplyOptions{}) }

// ApplyWith is Apply, reporting what opts asks for.
func (s *Store) ApplyWith(ops []Op, opts ApplyOptions) (Applied, error) {
	for i, op := range ops {
		if err := op.validate(); err != nil {
			return Applied{}, fmt.Errorf("apply: op %d (%s): %w", i, op, err)
		}
	}
	if err := s.acquire(); err != nil {
		return Applied{}, err
	}
	defer s.closeMu.RUnlock()
	if len(ops) == 0 {
		return Applied{}, nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.disk.readOnly.Load() { // before planning, which would be for nothing
		return Applied{}, fmt.Errorf("journal %s: %w", s.dir, ErrDiskFull)
	}

	p := planner{
		view:        s.db.NewTransaction(false),
		now:         s.opts.Now(),
		lastEvent:   s.reservedEvent,
		lastHistory: s.reservedHistory,
		firstEvent:  s.reservedEvent + 1,
		pendingFrom: s.pendingFrom,
		calls:       &s.calls,
		omitCalls:   opts.OmitCalls,
	}
	s.calls.n = 0 // what a failed Apply left
	defer p.view.Discard()
	// Sized once: a group commit of calls holds thousands of records. A
	// commit that appends none returns none (nil), as it always did.
	if n := countHistory(ops, opts.OmitCalls); n > 0 {
		p.applied.History = make([]HistoryRecord, 0, n)
	}
	for i, op := range ops {
		if err := p.add(op); err != nil {
			return Applied{}, fmt.Errorf("apply: op %d (%s): %w", i, op, err)
		}
	}
	p.closeBlock()
	if p.acked {
		// Last, in its own unit: should a split batch fail part way, the
		// mark stays where it was, below every event still pending.
		if err := p.advancePendingFrom(); err != nil {
			return Applied{}, fmt.Errorf("apply: %w", err)
		}
	}
	s.reservedEvent, s.reservedHistory = p.lastEvent, p.lastHistory

	// Every transaction carries the marks of the whole reservation, so once
	// any of it is durable no reserved seq can be handed out again.
	marks := []mutation{
		{key: []byte(keyEventMark), value: encodeMark(p.lastEvent)},
		{key: []byte(keyHistoryMark), value: encodeMark(p.lastHistory)},
	}
	if err := s.writable(diskCost(p.units, marks)); err != nil {
		return Applied{}, err
	}
	if err := s.commit(p.units, marks); err != nil {
		return Applied{}, fmt.Errorf("apply: %w", err)
	}
	s.pendingFrom = p.pendingFrom
	s.pendingFromPub.Store(p.pendingFrom)
	return p.applied, nil
}

// countHistory is how many records ops append to the history (calls
// left out when omitCalls), but for the revocations DeleteGrants finds.
func countHistory(ops []Op, omitCalls bool) int {
	n := 0
	for _, op := range ops {
		switch {
		case op.kind == opPutGrant:
			n++
		case op.kind == opAppendHistory && !(omitCalls && op.history.Kind == HistoryCall):
			n++
		}
	}
	return n
}

// commit writes units in order, each with marks, splitting into several
// transactions where badger says ErrTxnTooBig. Badger cannot take back the
// writes of a unit that only partly fitted, so the transaction is rebuilt
// from the units before it and committed, and the unit starts the next.
func (s *Store) commit(units []unit, marks []mutation) error {
	s.disk.spent.Add(diskCost(units, marks))
	txn, err := s.begin(marks, nil)
	if err != nil {
		return err
	}
	defer func() {
		if txn != nil { // nil when a rebuild failed; begin discarded it
			txn.Discard()
		}
	}()
	start := 0
	for i := 0; i < len(units); i++ {
		err := write(txn, units[i].muts)
		if err == nil {
			continue
		}
		if !errors.Is(err, badger.ErrTxnTooBig) || i == start {
			return s.partial(start, fmt.Errorf("record %d of %d: %w", i+1, len(units), err))
		}
		txn.Discard()
		if txn, err = s.begin(marks, units[start:i]); err != nil {
			return s.partial(start, err)
		}
		if err := s.finish(txn, units[start:i]); err != nil {
			return s.partial(start, err)
		}
		start = i
		if txn, err = s.begin(marks, nil); err != nil {
			return s.partial(start, err)
		}
		i-- // the unit that did not fit goes first in the new transaction
	}
	if err := s.finish(txn, units[start:]); err != nil {
		return s.partial(start, err)
	}
	return nil
}

// partial annotates a commit failure that came after units were committed.
func (s *Store) partial(committed int, err error) error {
	if committed == 0 {
		return err
	}
	return fmt.Errorf("the first %d records were committed, the rest not: %w", committed, err)
}

// begin opens a write transaction holding marks and units.
func (s *Store) begin(marks []mutation, units []unit) (*badger.Txn, error) {
	txn := s.db.NewTransaction(true)
	err := write(txn, marks)
	for i := 0; err == nil && i < len(units); i++ {
		err = write(txn, units[i].muts)
	}
	if err != nil {
		txn.Discard()
		return nil, err
	}
	return txn, nil
}

// finish commits txn (one sync) and publishes what its units changed.
func (s *Store) finish(txn *badger.Txn, units []unit) error {
	if err := txn.Commit(); err != nil {
		return err
	}
	s.commits.Add(1)
	var pending int64
	var ev, hi uint64
	for _, u := range units {
		pending += u.pending
		ev, hi = max(ev, u.eventSeq), max(hi, u.historySeq)
	}
	s.pending.Add(pending)
	if ev > s.lastEvent.Load() {
		s.lastEvent.Store(ev) // only the writer stores, under writeMu
	}
	if hi > s.lastHistory.Load() {
		s.lastHistory.Store(hi)
	}
	return nil
}

func write(txn *badger.Txn, muts []mutation) error {
	for _, m := range muts {
		var err error
		if m.del {
			err = txn.Delete(m.key)
		} else {
			err = txn.Set(m.key, m.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// planner turns ops into units. It reads committed state from view and
// overlays what earlier ops of the same batch changed, so a batch sees its
// own writes (an ack of an event appended in the same batch, a grant put
// then deleted) without writing before the whole batch is validated.
type planner struct {
	view                   *badger.Txn
	now                    time.Time
	lastEvent, lastHistory uint64 // last seq reserved
	firstEvent             uint64 // the first seq this batch appends: applied.Events[seq-firstEvent]
	pendingFrom            uint64 // every event below it is processed
	acked                  bool   // an event turned processed: the mark may move

	acks   map[uint64]*EventRecord // committed events acked by this batch
	grants map[string]*GrantRecord // changed by this batch; nil: deleted
	calls  *callBlock              // the run of call records not written yet
	// omitCalls: call records are not reported in applied.History
	// (ApplyOptions.OmitCalls); call is the one being encoded then.
	omitCalls bool
	call      HistoryRecord

	units   []unit
	applied Applied
}

func (p *planner) add(op Op) error {
	switch op.kind {
	case opPutServer:
		return putRecord(p, nameKey(prefixServer, op.server.Name), *op.server)
	case opPutCatalog:
		return putRecord(p, nameKey(prefixCatalog, op.catalog.Server), *op.catalog)
	case opPutTask:
		t := *op.task
		if t.Created.IsZero() {
			t.Created = p.now
		}
		if t.Updated.IsZero() {
			t.Updated = p.now
		}
		return putRecord(p, taskKey(t.Server, t.TaskID), t)
	case opDeleteTask:
		p.units = append(p.units, unit{muts: []mutation{{key: taskKey(op.name, op.taskID), del: true}}})
		return nil
	case opPutGatewayTask:
		t := *op.gwTask
		if t.Created.IsZero() {
			t.Created = p.now
		}
		if t.Updated.IsZero() {
			t.Updated = p.now
		}
		return putRecord(p, gatewayTaskKey(t.ID), t)
	case opPutContainment:
		return putRecord(p, nameKey(prefixContainment, op.contain.ID), *op.contain)
	case opDeleteContainment:
		p.units = append(p.units, unit{muts: []mutation{{key: nameKey(prefixContainment, op.name), del: true}}})
		return nil
	case opPutPin:
		return putRecord(p, pinKey(op.pin.Server, op.pin.Tool), *op.pin)
	case opDeleteServer:
		pins, err := p.deletePins(op.name)
		if err != nil {
			return err
		}
		p.units = append(p.units, unit{muts: append([]mutation{
			{key: nameKey(prefixServer, op.name), del: true},
			{key: nameKey(prefixCatalog, op.name), del: true},
		}, pins...)})
		return nil
	case opAppendEvent:
		return p.appendEvent(*op.event)
	case opAckEvents:
		for _, id := range op.ids {
			if err := p.ack(id); err != nil {
				return err
			}
		}
		return nil
	case opPutGrant:
		return p.putGrant(*op.grant)
	case opDeleteGrants:
		return p.deleteGrants(op.scope)
	case opAppendHistory:
		if op.history.Kind == HistoryCall {
			return p.appendCall(op.history)
		}
		h := *op.history
		if h.Time.IsZero() {
			h.Time = p.now
		}
		u, err := p.history(h)
		if err != nil {
			return err
		}
		p.units = append(p.units, u)
		return nil
	}
	return fmt.Errorf("zero Op: %w", ErrInvalidRecord)
}

// putRecord plans an upsert of r, a copy, under key.
func putRecord[T any, P record[T]](p *planner, key []byte, r T) error {
	b, err := encodeRecord[T, P](&r)
	if err != nil {
		return err
	}
	p.units = append(p.units, unit{muts: []mutation{{key: key, value: b}}})
	return nil
}

func (p *planner) appendEvent(e EventRecord) error {
	p.lastEvent++
	e.Seq = p.lastEvent
	e.Status = EventPending
	e.ProcessedAt = time.Time{}
	if e.Received.IsZero() {
		e.Received = p.now
	}
	b, err := encodeRecord(&e)
	if err != nil {
		return err
	}
	p.units = append(p.units, unit{
		muts:     []mutation{{key: seqKey(prefixEvent, e.Seq), value: b}},
		pending:  1,
		eventSeq: e.Seq,
	})
	p.applied.Events = append(p.applied.Events, e)
	return nil
}

// batchEvent is the event seq as this batch leaves it: appended or acked
// by it (ok), or as committed (not ok: read the view).
func (p *planner) batchEvent(seq uint64) (*EventRecord, bool) {
	if seq >= p.firstEvent && seq-p.firstEvent < uint64(len(p.applied.Events)) {
		return &p.applied.Events[seq-p.firstEvent], true
	}
	e, ok := p.acks[seq]
	return e, ok
}

func (p *planner) ack(id uint64) error {
	e, ok := p.batchEvent(id)
	if !ok {
		key := seqKey(prefixEvent, id)
		rec, found, err := get[EventRecord](p.view, key)
		if err != nil {
			return err
		}
		if !found {
			p.applied.UnknownAcks = append(p.applied.UnknownAcks, id)
			return nil
		}
		e = &rec
	}
	p.applied.Acked = append(p.applied.Acked, id)
	if e.Status == EventProcessed {
		return nil
	}
	acked := *e
	acked.Status = EventProcessed
	acked.ProcessedAt = p.now
	b, err := encodeRecord(&acked)
	if err != nil {
		return err
	}
	p.units = append(p.units, unit{
		muts:    []mutation{{key: seqKey(prefixEvent, id), value: b}},
		pending: -1,
	})
	p.acked = true
	if id >= p.firstEvent {
		*e = acked // appended by this batch: Applied reports it as it is written
		return nil
	}
	if p.acks == nil {
		p.acks = make(map[uint64]*EventRecord)
	}
	p.acks[id] = &acked
	return nil
}

// advancePendingFrom moves the pending mark past the processed events it
// sits on, and plans writing it. A seq with no event (pruned, or reserved
// by an Apply that failed) counts as processed. Events are visited with
// one iterator from the mark, so acks in order cost a step or two.
func (p *planner) advancePendingFrom() error {
	from := max(p.pendingFrom, 1)
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefixEvent)
	iter := p.view.NewIterator(opts)
	defer iter.Close()
	iter.Seek(seqKey(prefixEvent, from))
	for ; from <= p.lastEvent; from++ {
		e, ok := p.batchEvent(from)
		if !ok {
			for iter.ValidForPrefix(opts.Prefix) {
				if seq, err := keySeq(iter.Item().Key()); err != nil || seq >= from {
					break
				}
				iter.Next()
			}
			if iter.ValidForPrefix(opts.Prefix) && bytes.Equal(iter.Item().Key(), seqKey(prefixEvent, from)) {
				rec, err := itemRecord[EventRecord](iter.Item())
				if err != nil {
					return err
				}
				e, ok = &rec, true
			}
		}
		if ok && e.Status == EventPending {
			break
		}
	}
	if from == p.pendingFrom {
		return nil
	}
	p.pendingFrom = from
	p.units = append(p.units, unit{muts: []mutation{{key: []byte(keyPendingFrom), value: encodeMark(from)}}})
	return nil
}

func (p *planner) putGrant(g GrantRecord) error {
	if g.Granted.IsZero() {
		g.Granted = p.now
	}
	key := grantKey(g.Scope, g.Group)
	exists, err := p.grantExists(key)
	if err != nil {
		return err
	}
	b, err := encodeRecord(&g)
	if err != nil {
		return err
	}
	u := unit{muts: []mutation{{key: key, value: b}}}
	if !exists {
		h, err := p.history(HistoryRecord{Time: g.Granted, Kind: HistoryGrant, Scope: g.Scope, Group: g.Group})
		if err != nil {
			return err
		}
		u.muts = append(u.muts, h.muts...)
		u.historySeq = h.historySeq
		p.applied.Granted = append(p.applied.Granted, g)
	}
	p.units = append(p.units, u)
	p.setGrant(key, &g)
	return nil
}

func (p *planner) grantExists(key []byte) (bool, error) {
	if g, ok := p.grants[string(key)]; ok {
		return g != nil, nil
	}
	_, err := p.view.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

func (p *planner) setGrant(key []byte, g *GrantRecord) {
	if p.grants == nil {
		p.grants = make(map[string]*GrantRecord)
	}
	p.grants[string(key)] = g
}

func (p *planner) deleteGrants(scope Scope) error {
	prefix := grantPrefix(scope)
	found := make(map[string]GrantRecord)
	err := scan(p.view, iteration{prefix: prefix}, func(key []byte, g GrantRecord) (bool, error) {
		found[string(key)] = g
		return true, nil
	})
	if err != nil {
		return err
	}
	for key, g := range p.grants {
		if !strings.HasPrefix(key, string(prefix)) {
			continue
		}
		if g == nil {
			delete(found, key)
		} else {
			found[key] = *g
		}
	}
	keys := make([]string, 0, len(found))
	for key := range found {
		keys = append(keys, key)
	}
	slices.Sort(keys) // key order: session, stack, group
	for _, key := range keys {
		g := found[key]
		u, err := p.history(HistoryRecord{Time: p.now, Kind: HistoryRevoke, Scope: g.Scope, Group: g.Group})
		if err != nil {
			return err
		}
		u.muts = append(u.muts, mutation{key: []byte(key), del: true})
		p.units = append(p.units, u)
		p.setGrant([]byte(key), nil)
		p.applied.Revoked = append(p.applied.Revoked, g)
	}
	return nil
}

// appendCall reserves a seq for the call record h and adds it to the run of
// calls, written as one block when the run ends (history_block.go). h is
// the op's and stays as it is.
func (p *planner) appendCall(h *HistoryRecord) error {
	var rec *HistoryRecord
	if p.omitCalls {
		p.call = *h
		rec = &p.call
	} else {
		p.applied.History = append(p.applied.History, *h)
		// Encoded from its place in Applied, so the record is not copied again.
		rec = &p.applied.History[len(p.applied.History)-1]
	}
	if rec.Time.IsZero() {
		rec.Time = p.now
	}
	p.lastHistory++
	rec.Seq = p.lastHistory
	if err := p.calls.add(rec); err != nil {
		return err
	}
	if p.calls.full() {
		p.closeBlock()
	}
	return nil
}

// closeBlock plans writing the run of calls, if any: before any other
// history record takes a seq, so that no key falls inside a block's range,
// and at the end of the batch.
func (p *planner) closeBlock() {
	if key, value, ok := p.calls.take(); ok {
		p.units = append(p.units, unit{muts: []mutation{{key: key, value: value}}, historySeq: p.calls.last})
	}
}

// history reserves a seq for h, which is no call, and returns the unit
// writing it and its kind index entry.
func (p *planner) history(h HistoryRecord) (unit, error) {
	p.closeBlock()
	p.lastHistory++
	h.Seq = p.lastHistory
	b, err := encodeRecord(&h)
	if err != nil {
		return unit{}, err
	}
	p.applied.History = append(p.applied.History, h)
	u := unit{muts: []mutation{{key: seqKey(prefixHistory, h.Seq), value: b}}, historySeq: h.Seq}
	if indexedKind(h.Kind) {
		u.muts = append(u.muts, mutation{key: seqKey(kindPrefix(h.Kind), h.Seq), value: []byte{}})
	}
	return u, nil
}

// indexedKind reports whether a kind has an index. Calls have none: they
// are most of the history, so walking the history for them reads little
// else, and an index key per call cost the call path a second write
// (measured: ~40% of the host's throughput with 64 callers).
func indexedKind(k HistoryKind) bool { return k != HistoryCall }
