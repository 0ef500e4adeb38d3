package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SetAside moves every file of the journal in dir into a new directory
// dir/quarantine-<UTC time>-set-aside, so that the next Open starts an
// empty journal. Nothing is deleted. It fails with an error wrapping
// ErrLocked while a Store (of this process or another) holds dir. It
// returns the new directory's path.
func SetAside(dir string) (string, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("journal %s: %w", dir, err)
	}
	q := filepath.Join(dir, "quarantine-"+time.Now().UTC().Format("20060102T150405.000000000Z")+"-set-aside")
	if err := os.Mkdir(q, 0o700); err != nil {
		return "", fmt.Errorf("journal %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(q, e.Name())); err != nil {
			return q, fmt.Errorf("journal %s: setting %s aside: %w", dir, e.Name(), err)
		}
	}
	return q, syncDir(dir)
}

// Check is Inspect under Badger's lock on dir, for a verdict no running
// host's compactions can blur. It fails with an error wrapping ErrLocked
// while a Store holds dir.
func Check(dir string) (Inspection, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return Inspection{Dir: dir, Findings: []Finding{}}, nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return Inspection{Dir: dir}, err
	}
	defer unlock()
	return Inspect(dir)
}
