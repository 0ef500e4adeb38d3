package persistence

import (
	"time"

	"github.com/dgraph-io/badger/v4"
)

// prefixPin keys PinRecords by server and the server's own tool name:
//
//	n/<server>\x00<tool>   PinRecord
//
// They are never pruned; DeleteServer deletes a server's pins with it, so
// a server registered again under the same name is approved afresh.
const prefixPin = "n/"

// PinRecord is where one tool's definition stands with the people who
// approve definitions (toolpin): the one approved, the one last listed,
// the one last rejected. Hashes are toolpin.Hash values, "" for none.
type PinRecord struct {
	V      int    `msgpack:"v"`
	Server string `msgpack:"server"`
	Tool   string `msgpack:"tool"` // the server's own name
	// Approved is the hash a person approved, Definition its canonical
	// JSON (for diffs against what the server lists next), At and By when
	// and by whom.
	Approved   string    `msgpack:"approved,omitempty"`
	Definition []byte    `msgpack:"definition,omitempty"`
	At         time.Time `msgpack:"at,omitzero"`
	By         string    `msgpack:"by,omitempty"`
	// Unattended: Approved was recorded at first sight under the warn
	// policy, not by a person; the hold policy does not count it.
	Unattended bool `msgpack:"unattended,omitempty"`
	// Rejected is the hash a person last rejected: it stays withheld and
	// is not offered for approval again.
	Rejected string `msgpack:"rejected,omitempty"`
	// Seen is the hash of the definition the server last listed (every
	// policy but off), so a change is detected and journaled once.
	Seen string `msgpack:"seen,omitempty"`
	// HashVersion is the toolpin.HashVersion the hashes were recorded
	// under; 0 for version 1, from before icons and _meta were pinned.
	// The runtime carries such a pin over when the tool is next listed.
	HashVersion int `msgpack:"hashVersion,omitempty"`
}

func (r *PinRecord) schemaVersion() *int { return &r.V }

func pinKey(server, tool string) []byte { return []byte(prefixPin + server + "\x00" + tool) }

func pinPrefix(server string) []byte { return []byte(prefixPin + server + "\x00") }

// PutPin upserts r by (r.Server, r.Tool).
func PutPin(r PinRecord) Op { return Op{kind: opPutPin, pin: &r} }

// Pins returns every pin record, by server then tool.
func (s *Store) Pins() ([]PinRecord, error) { return all[PinRecord](s, prefixPin) }

// deletePins deletes the pins of server, for DeleteServer.
func (p *planner) deletePins(server string) ([]mutation, error) {
	var muts []mutation
	err := iterate(p.view, iteration{prefix: pinPrefix(server)}, func(item *badger.Item) (bool, error) {
		muts = append(muts, mutation{key: item.KeyCopy(nil), del: true})
		return true, nil
	})
	return muts, err
}
