package persistence

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// The marks file keeps, beside Badger's files, what the store knows of the
// journal that Badger does not say, so that the next Open need not find it
// out the slow way:
//
//   - The seq high-water marks, rewritten about once a second and at Close.
//     Seqs only grow, so a journal that opens with lower marks than its
//     file has lost what lay between: Badger truncates a damaged WAL
//     without a word, and this is how the loss gets counted. The file lags
//     the journal by up to a second, so a count is a lower bound.
//   - Whether the store was closed cleanly: Close writes Clean, with the
//     pending-event count and each table file's size and modification
//     time, only after Badger closed without error, and Open writes it
//     false (synced) before Badger opens. A missing or unreadable file
//     counts as unclean. After a clean close Open checks only the
//     structure (the MANIFEST against the tables present, each table's
//     size and time against the file's) and takes the pending count as
//     written; after anything else it verifies every table's checksums
//     and counts the pending events.
//   - Records dropped and not journaled (Store.KeepDropped): a host that
//     stops while the journal is read-only for want of space keeps its
//     drop counts here, and the next start that can write journals them.
const marksFile = "MARKS.json"

// Marks are what the store wrote beside the journal when it last did.
type Marks struct {
	// Event and History are seq high-water marks: no event or history
	// record above them was ever committed.
	Event   uint64 `json:"event"`
	History uint64 `json:"history"`
	// Clean: Badger closed without error after the file was written,
	// and nothing has opened the journal since.
	Clean bool `json:"clean"`
	// Pending is the count of pending events at a clean close.
	Pending int64 `json:"pending,omitempty"`
	// Tables are the table files at a clean close: name to size and
	// modification time.
	Tables map[string]TableStamp `json:"tables,omitempty"`
	// Dropped counts, per server, records dropped that no event counts
	// yet (an mcpvisor/events_dropped event journals them).
	Dropped map[string]uint64 `json:"dropped,omitempty"`
}

// TableStamp is what a clean close saw of a table file: a table that
// still has both was not written since, so its checksums need not be
// verified again at Open.
type TableStamp struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime"` // unix nanoseconds
}

// readMarks reads dir's marks file; a missing or unreadable one is zero
// marks (unclean) and an error.
func readMarks(dir string) (Marks, error) {
	var m Marks
	b, err := os.ReadFile(filepath.Join(dir, marksFile))
	if err != nil {
		return Marks{}, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Marks{}, err
	}
	return m, nil
}

// writeMarks replaces dir's marks file. Unless sync, it does not sync: the
// seq marks have to survive the process, not the machine (Badger's own
// syncs cover that, and a marks file lost with the machine only means no
// count). The unclean mark Open writes is synced: a clean mark that
// outlived a crash of the machine would skip the checks that crash calls
// for.
func writeMarks(dir string, m Marks, sync bool) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, marksFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, marksFile)); err != nil {
		return err
	}
	if sync {
		return syncDir(dir)
	}
	return nil
}

// tableStamps reads the size and modification time of every table file
// in dir.
func tableStamps(dir string) map[string]TableStamp {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	stamps := map[string]TableStamp{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		stamps[e.Name()] = TableStamp{Size: info.Size(), ModTime: info.ModTime().UnixNano()}
	}
	return stamps
}
