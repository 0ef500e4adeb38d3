package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// TestDoctorDamagedJournal: a journal whose MANIFEST is gone is refused by
// every command that opens it, with the reason and what to do; doctor
// says what is wrong and exits 1; doctor --reset sets it aside (its files
// kept) and the journal then opens empty.
func TestDoctorDamagedJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := mcpvisor.OpenJournal(dir, mcpvisor.JournalOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := j.Write(context.Background(), persistence.AppendEvent(persistence.EventRecord{
			Server: "m", Method: "event/test", Params: mcpvisor.RawJSON(fmt.Sprintf(`{"n":%d}`, i))})); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLIData(t, dir, "doctor"); code != 0 || !strings.Contains(out, "whole") {
		t.Fatalf("doctor on a whole journal: exit %d, %q, %q", code, out, errOut)
	}

	journal := mcpvisor.JournalDir(dir)
	tables, _ := filepath.Glob(filepath.Join(journal, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table file: the damage below would test nothing")
	}
	if err := os.Remove(filepath.Join(journal, "MANIFEST")); err != nil {
		t.Fatal(err)
	}

	_, errOut, code := runCLIData(t, dir, "events")
	if code != 1 || !strings.Contains(errOut, "journal") || !strings.Contains(errOut, "MANIFEST: missing") ||
		!strings.Contains(errOut, "doctor --reset") {
		t.Fatalf("events on a journal without MANIFEST: exit %d, stderr %q; want it refused, saying why and what to do", code, errOut)
	}
	out, errOut, code := runCLIData(t, dir, "doctor")
	if code != 1 || !strings.Contains(out, "MANIFEST: missing") || !strings.Contains(out, "refused at open") {
		t.Fatalf("doctor: exit %d, %q, %q", code, out, errOut)
	}
	if out, _, code := runCLIData(t, dir, "doctor", "--json"); code != 1 || !strings.Contains(out, `"refused": true`) {
		t.Fatalf("doctor --json: exit %d, %q", code, out)
	}
	for _, table := range tables {
		if _, err := os.Stat(table); err != nil {
			t.Errorf("table %s gone after the refusals: %v", table, err)
		}
	}

	_, errOut, code = runCLIData(t, dir, "doctor", "--reset")
	if code != 0 || !strings.Contains(errOut, "set-aside") {
		t.Fatalf("doctor --reset: exit %d, %q", code, errOut)
	}
	aside, _ := filepath.Glob(filepath.Join(journal, "quarantine-*-set-aside", "*.sst"))
	if len(aside) != len(tables) {
		t.Errorf("set aside %v, want the %d tables", aside, len(tables))
	}
	if out, errOut, code := runCLIData(t, dir, "events"); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("events after --reset: exit %d, %q, %q; want an empty journal", code, out, errOut)
	}
}
