package persistence

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenDamaged damages one file of a real journal (made by the test,
// with events and grants, some in tables and some in the WAL as a SIGKILL
// leaves them): the fuzzer picks the file, then either writes its bytes
// at an offset or truncates the file there. Open must never panic; it
// either refuses with ErrDamaged or opens; what it found is kept, byte
// for byte, in the directory or a quarantine; and a journal that opens
// without reporting damage has every record. The seed corpus is in
// testdata/fuzz/FuzzOpenDamaged.
func FuzzOpenDamaged(f *testing.F) {
	const events, grants = 300, 10
	base := makeCrashImage(f, f.TempDir(), filepath.Join(f.TempDir(), "image"), events, grants)
	names := sortedKeys(snapshot(f, base.dir))
	f.Logf("files: %v", names)

	f.Add(uint8(0), uint32(0), []byte{}, true)                    // first file emptied
	f.Add(uint8(1), uint32(10), []byte{}, true)                   // cut at 10 bytes
	f.Add(uint8(2), uint32(5000), []byte("garbage"), false)       // a few bytes overwritten
	f.Add(uint8(3), uint32(30000), make([]byte, 4096), false)     // 4 KiB zeroed
	f.Add(uint8(4), uint32(100), []byte{0xff, 0xff, 0xff}, false) // a header's lengths
	f.Add(uint8(5), uint32(1<<20), []byte{1}, false)
	f.Fuzz(func(t *testing.T, file uint8, offset uint32, data []byte, truncate bool) {
		dir := t.TempDir()
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join(base.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if name == names[int(file)%len(names)] {
				b = damage(b, int(offset), data, truncate)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, dir)

		s, err := Open(dir, Options{MaintenanceInterval: -1})
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open: %v; want it opened or refused with ErrDamaged", err)
			}
			t.Logf("refused: %v", err)
			checkKept(t, dir, before)
			return
		}
		rec := s.Recovery()
		evs, evErr := s.Events(EventFilter{})
		gs, gErr := s.Grants()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if rec.Quarantine != "" {
			checkKept(t, rec.Quarantine, before)
		}
		if rec.Damaged() {
			return
		}
		// Opened whole: nothing may be missing.
		if evErr != nil || gErr != nil {
			t.Fatalf("a journal reported whole fails to read: %v, %v", evErr, gErr)
		}
		if len(evs) != events || len(gs) != grants {
			t.Fatalf("a journal reported whole has %d events and %d grants, want %d and %d (damaged %s)",
				len(evs), len(gs), events, grants, names[int(file)%len(names)])
		}
	})
}

// damage writes data at offset (modulo the file's size) or, if truncate,
// cuts the file there.
func damage(b []byte, offset int, data []byte, truncate bool) []byte {
	if len(b) == 0 {
		return append(b, data...)
	}
	offset %= len(b)
	if truncate {
		return b[:offset]
	}
	out := append([]byte(nil), b...)
	n := copy(out[offset:], data)
	return append(out, data[n:]...)
}
