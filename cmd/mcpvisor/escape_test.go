package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// What a server wrote reaches a person's terminal escaped: ESC, BEL and
// bidi overrides in its events, stderr, errors and results cannot clear
// the screen, ring, or reorder the line (issue 38).
func TestServerTextIsPrintedEscaped(t *testing.T) {
	const nasty = "a\x1b[2J\x07b\u202ec"
	check := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s printed a control character raw: %q", what, out)
		}
		if !strings.Contains(out, `\x1b[2J\ab\u202ec`) {
			t.Errorf("%s: %q, want the bytes escaped", what, out)
		}
	}

	var b bytes.Buffer
	p := newEventPrinter(&b, false, true)
	p.print(mcpvisor.JournalEvent{Seq: 1, Server: "s", Method: "notifications/message", Received: time.Now(),
		Params: mcpvisor.RawJSON(`{"data":"` + nasty + `"}`)})
	p.flush()
	check("events", b.String())

	for _, calls := range []bool{false, true} {
		b.Reset()
		rec := mcpvisor.HistoryRecord{Time: time.Now(), Server: "s", Transition: "failed", Detail: nasty, Stderr: []string{nasty},
			Tool: "mcp__s__t", Error: nasty}
		if err := printHistory(&b, []mcpvisor.HistoryRecord{rec}, false, calls); err != nil {
			t.Fatal(err)
		}
		check("history", b.String())
	}

	// Text keeps its lines and tabs.
	if got := printableText("one\n\ttwo" + nasty); got != "one\n\ttwo"+`a\x1b[2J\ab\u202ec` {
		t.Errorf("printableText = %q", got)
	}

	// --json is for programs: the JSON encoder escapes what JSON must.
	b.Reset()
	for _, listing := range []bool{true, false} {
		b.Reset()
		p = newEventPrinter(&b, true, listing)
		p.print(mcpvisor.JournalEvent{Seq: 1, Server: "s", Params: mcpvisor.RawJSON(`{"data":"x"}`)})
		if err := p.end(); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(bytes.TrimSpace(b.Bytes())) {
			t.Errorf("--json (listing %v): %q", listing, b.String())
		}
	}
}
