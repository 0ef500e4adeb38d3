package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/mcpvisor/mcpvisor"
)

// cmdDoctor checks the journal of --data and prints what it finds; with
// --reset it sets a damaged journal aside.
func cmdDoctor(e *env) error {
	if len(e.args) > 0 {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("doctor: unexpected argument %q", e.args[0])}
	}
	in, err := mcpvisor.InspectJournal(e.f.data)
	if err != nil {
		return lockHint(err)
	}
	quarantines, _ := filepath.Glob(filepath.Join(in.Dir, "quarantine-*"))
	if e.f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			mcpvisor.JournalInspection
			Damaged     bool     `json:"damaged"`
			Refused     bool     `json:"refused"`
			Quarantines []string `json:"quarantines"`
		}{in, len(in.Findings) > 0, in.Fatal(), append([]string{}, quarantines...)}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "journal %s: %d tables, %d WALs, %d records readable (keys and WAL entries)\n",
			in.Dir, in.Tables, in.WALs, in.Records)
		for _, f := range in.Findings {
			fatal := ""
			if f.Fatal {
				fatal = " [refused at open]"
			}
			fmt.Fprintf(e.stdout, "  %s%s\n", f, fatal)
		}
		for _, q := range quarantines {
			fmt.Fprintf(e.stdout, "  copies kept from an earlier start: %s\n", q)
		}
		switch {
		case in.Fatal():
			fmt.Fprintln(e.stdout, "damaged: mcpvisor refuses to open this journal. Restore it from a backup, or run\n"+
				"mcpvisor doctor --reset to set it aside and start an empty one (nothing is deleted).")
		case len(in.Findings) > 0:
			fmt.Fprintln(e.stdout, "damaged: the next start opens it, copies its files aside first, and drops what is listed above.")
		default:
			fmt.Fprintln(e.stdout, "whole")
		}
	}
	if e.f.reset {
		if !in.Fatal() {
			return &exitError{code: exitUsage, msg: "doctor --reset: the journal opens as it is; --reset sets aside only one that is refused"}
		}
		q, err := mcpvisor.SetJournalAside(e.f.data)
		if err != nil {
			return lockHint(err)
		}
		fmt.Fprintf(e.stderr, "the journal's files were moved to %s; the next start begins an empty journal\n", q)
		return nil
	}
	if len(in.Findings) > 0 {
		return &exitError{code: exitFailure, msg: "the journal is damaged"}
	}
	return nil
}
