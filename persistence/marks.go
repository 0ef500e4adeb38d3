package persistence

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// The marks file keeps the journal's seq high-water marks beside Badger's
// files, rewritten by the Store about once a second and at Close. Seqs
// only grow, so a journal that opens with lower marks than its file has
// lost what lay between: Badger truncates a damaged WAL without a word,
// and this is how the loss gets counted. The file lags the journal by up
// to a second, so a count is a lower bound.
const marksFile = "MARKS.json"

// Marks are seq high-water marks: no event or history record above them
// was ever committed.
type Marks struct {
	Event   uint64 `json:"event"`
	History uint64 `json:"history"`
}

// readMarks reads dir's marks file; a missing or unreadable one is zero
// marks and an error.
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

// writeMarks replaces dir's marks file. It does not sync: the file has to
// survive the process, not the machine (Badger's own syncs cover that, and
// a marks file lost with the machine only means no count).
func writeMarks(dir string, m Marks) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, marksFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, marksFile))
}
