package toolpin

import (
	"encoding/json"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

var readFile = Definition{
	Name:        "read_file",
	Title:       "Read file",
	Description: "Read the complete contents of a file from the file system.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number","description":"First N lines"}},"required":["path"]}`),
	Annotations: json.RawMessage(`{"readOnlyHint":true}`),
}

func TestHashGolden(t *testing.T) {
	const wantCanonical = `{"annotations":{"readOnlyHint":true},"description":"Read the complete contents of a file from the file system.","inputSchema":{"properties":{"head":{"description":"First N lines","type":"number"},"path":{"type":"string"}},"required":["path"],"type":"object"},"name":"read_file","title":"Read file"}`
	if got := string(Canonical(readFile)); got != wantCanonical {
		t.Errorf("Canonical:\n got %s\nwant %s", got, wantCanonical)
	}
	// Changing this hash breaks every pin ever recorded: a person would
	// have to approve every tool again.
	const want = "sha256:61c03a7facfc39520923cab2f8a1092f496bbe7bb766988b5fa51c8dbf3fdc9a"
	if got := Hash(readFile); got != want {
		t.Errorf("Hash = %s, want %s", got, want)
	}
}

func TestHashSameMeaning(t *testing.T) {
	base := Definition{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}
	same := []struct {
		name string
		def  Definition
	}{
		{"no input schema", Definition{Name: "t"}},
		{"null input schema", Definition{Name: "t", InputSchema: json.RawMessage(`null`)}},
		{"spaced input schema", Definition{Name: "t", InputSchema: json.RawMessage(" {\n \"type\" : \"object\" } ")}},
		{"null output schema", Definition{Name: "t", OutputSchema: json.RawMessage(`null`)}},
		{"empty annotations", Definition{Name: "t", Annotations: json.RawMessage(`{}`)}},
		{"null annotations", Definition{Name: "t", Annotations: json.RawMessage(`null`)}},
		{"default hints", Definition{Name: "t", Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true,"title":""}`)}},
		{"from tool without annotations", FromTool(protocol.Tool{Name: "t"})},
		{"from tool with empty annotations", FromTool(protocol.Tool{Name: "t", Annotations: &protocol.ToolAnnotations{}})},
	}
	for _, tt := range same {
		if Hash(tt.def) != Hash(base) {
			t.Errorf("%s: hash differs:\n%s\n%s", tt.name, Canonical(tt.def), Canonical(base))
		}
	}
	reordered := readFile
	reordered.InputSchema = json.RawMessage(`{"required":["path"],"properties":{"head":{"description":"First N lines","type":"number"},"path":{"type":"string"}},"type":"object"}`)
	if Hash(reordered) != Hash(readFile) {
		t.Error("property order changed the hash")
	}
}

func TestHashDifferentMeaning(t *testing.T) {
	yes := true
	changes := map[string]func(d *Definition){
		"name":        func(d *Definition) { d.Name = "read_files" },
		"title":       func(d *Definition) { d.Title = "" },
		"description": func(d *Definition) { d.Description += " " },
		"zero-width space": func(d *Definition) {
			d.Description = "Read the complete\u200b contents of a file from the file system."
		},
		"property description": func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number","description":"First N lines!"}},"required":["path"]}`)
		},
		"required": func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number","description":"First N lines"}}}`)
		},
		"empty properties": func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number","description":"First N lines"}},"required":["path"],"x":{}}`)
		},
		"annotation":       func(d *Definition) { d.Annotations = json.RawMessage(`{"readOnlyHint":false}`) },
		"annotation added": func(d *Definition) { d.Annotations = json.RawMessage(`{"readOnlyHint":true,"idempotentHint":true}`) },
		"output schema {}": func(d *Definition) { d.OutputSchema = json.RawMessage(`{}`) },
		"invalid schema":   func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":"object"`) },
		"from tool": func(d *Definition) {
			*d = FromTool(protocol.Tool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: d.InputSchema, Annotations: &protocol.ToolAnnotations{ReadOnlyHint: &yes, OpenWorldHint: new(bool)}})
		},
	}
	seen := map[string]string{Hash(readFile): "original"}
	for name, change := range changes {
		d := readFile
		change(&d)
		h := Hash(d)
		if other, ok := seen[h]; ok {
			t.Errorf("%s: same hash as %s", name, other)
		}
		seen[h] = name
	}
}

func TestCanonicalInvalidOutOfBand(t *testing.T) {
	// A string schema must not collide with invalid bytes spelling it.
	a := Definition{Name: "t", InputSchema: json.RawMessage(`abc`)}
	b := Definition{Name: "t", InputSchema: json.RawMessage(`"abc"`)}
	if Hash(a) == Hash(b) {
		t.Error("invalid schema collides with a string schema")
	}
	if got, want := string(Canonical(a)), `{"invalidInputSchema":"616263","name":"t"}`; got != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
}
