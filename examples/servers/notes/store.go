package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// note is one stored note, as note_list returns it.
type note struct {
	Key  string `json:"key"`
	Text string `json:"text"`
}

// store is the note map. With a path, every change is written through to a
// JSON file (atomically: a temporary file renamed over it).
type store struct {
	path  string
	mu    sync.Mutex
	notes map[string]string
}

func openStore(path string) (*store, error) {
	s := &store{path: path, notes: make(map[string]string)}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("read notes file: %w", err)
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &s.notes); err != nil {
			return nil, fmt.Errorf("notes file %s: %w", path, err)
		}
	}
	return s, nil
}

func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.notes)
}

func (s *store) get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, ok := s.notes[key]
	return text, ok
}

func (s *store) put(key, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.notes[key]
	s.notes[key] = text
	if err := s.save(); err != nil {
		if had {
			s.notes[key] = old
		} else {
			delete(s.notes, key)
		}
		return err
	}
	return nil
}

func (s *store) delete(key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.notes[key]
	if !ok {
		return false, nil
	}
	delete(s.notes, key)
	if err := s.save(); err != nil {
		s.notes[key] = old
		return false, err
	}
	return true, nil
}

// list returns every note, sorted by key.
func (s *store) list() []note {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]note, 0, len(s.notes))
	for _, k := range slices.Sorted(maps.Keys(s.notes)) {
		out = append(out, note{Key: k, Text: s.notes[k]})
	}
	return out
}

// save writes the notes to s.path; the caller holds s.mu.
func (s *store) save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(s.notes, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("save notes: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save notes: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save notes: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("save notes: %w", err)
	}
	return nil
}
