package toolpin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Definition is what is pinned of a tool: everything a model reads of it,
// everything that shapes a call to it, and what a client shows or acts on
// beside it: its icons (a person sees them, and fetches their URLs) and
// its _meta (MCP Apps' _meta.ui.resourceUri names the interface a client
// renders for the tool). Only execution is not pinned: it says whether
// the host may run a call as a task, which the host handles itself and
// which changes neither what the tool does nor what anyone is shown.
//
// JSON fields hold raw JSON as the server sent it; Canonical and Hash read
// them as described there. The JSON form of a Definition is what a journal
// record or an API answer carries.
type Definition struct {
	// Name is the server's own name for the tool, as it listed it, not the
	// namespaced name the host exposes it by.
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
}

// HashVersion is the version of Hash's canonical form. Version 1 left out
// icons and _meta; version 2 (this one) keeps them. A definition without
// either hashes alike in both (LegacyHash(def) == Hash(def)), so only the
// pins of tools that list icons or _meta differ between them.
const HashVersion = 2

// FromTool takes the pinned fields of a tools/list entry.
func FromTool(t protocol.Tool) Definition {
	d := Definition{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
	}
	if t.Annotations != nil {
		// A struct of strings and *bool always marshals.
		d.Annotations, _ = json.Marshal(t.Annotations)
	}
	if len(t.Icons) > 0 {
		// A slice of plain structs always marshals.
		d.Icons, _ = json.Marshal(t.Icons)
	}
	if len(t.Meta) > 0 {
		d.Meta = t.Meta
	}
	return d
}

// Canonical returns the canonical JSON form of a definition, the bytes Hash
// digests. It is a JCS object (see CanonicalJSON) with these members, each
// in its canonical form:
//
//   - name: always present.
//   - title, description: absent when empty.
//   - inputSchema: absent, empty or null reads as {"type":"object"}, the
//     schema the host exposes for a tool without one (the spec requires
//     one).
//   - outputSchema: absent when absent, empty or null. {} is kept: it
//     promises structured content, which no outputSchema does not.
//   - annotations: hints equal to the spec's defaults (readOnlyHint false,
//     destructiveHint true, idempotentHint false, openWorldHint true) and
//     an empty title are dropped, then an empty object, like null or
//     absent annotations, is left out. So nil, {} and
//     {"destructiveHint":true} hash alike: they tell a client the same.
//   - icons: absent when absent, null or []; otherwise the array as
//     written (order, sizes, theme and mime type all count).
//   - _meta: absent when absent, null or {}; otherwise the object as
//     written, every key included: no key of a tool's _meta is volatile
//     in the spec or in the extensions that use it (MCP Apps' ui, the
//     OpenAI Apps SDK's openai/*), and each says something a client acts
//     on.
//
// Schemas are otherwise hashed as written: key order, whitespace and the
// spelling of numbers do not count, everything else does (a schema with
// "properties":{} differs from one without).
//
// A field holding invalid JSON is kept out of band as
// "invalid<Field>" (invalidMeta for _meta): hex of its bytes, so it cannot
// collide with any valid definition. The host never builds such a
// Definition from the wire.
func Canonical(def Definition) []byte {
	return appendCanonical(nil, canonicalNode(def))
}

// Hash returns "sha256:" followed by the lower-case hex SHA-256 of
// Canonical(def): the hash of version HashVersion.
func Hash(def Definition) string {
	return hashOf(Canonical(def))
}

// LegacyHash returns the hash version 1 gave def: Hash of def without its
// icons and _meta. A host uses it to carry a pin recorded by version 1
// over to this one: the definition it approved is the one listed when the
// legacy hashes agree.
func LegacyHash(def Definition) string {
	def.Icons, def.Meta = nil, nil
	return hashOf(Canonical(def))
}

func hashOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func canonicalNode(def Definition) *node {
	obj := &node{kind: kindObject}
	add := func(key string, v *node) { obj.obj = append(obj.obj, member{key, v}) }
	addRaw := func(key string, raw json.RawMessage, parse func(json.RawMessage) (*node, bool)) {
		n, ok := parse(raw)
		if !ok {
			name := strings.TrimPrefix(key, "_")
			add("invalid"+strings.ToUpper(name[:1])+name[1:], &node{kind: kindString, s: hex.EncodeToString(raw)})
			return
		}
		if n != nil {
			add(key, n)
		}
	}
	add("name", str(def.Name))
	if def.Title != "" {
		add("title", str(def.Title))
	}
	if def.Description != "" {
		add("description", str(def.Description))
	}
	addRaw("inputSchema", def.InputSchema, inputSchemaNode)
	addRaw("outputSchema", def.OutputSchema, optionalNode)
	addRaw("annotations", def.Annotations, func(raw json.RawMessage) (*node, bool) {
		n, ok := optionalNode(raw)
		if !ok || n == nil || n.kind != kindObject {
			return n, ok
		}
		n = dropDefaultHints(n)
		if len(n.obj) == 0 {
			return nil, true
		}
		return n, true
	})
	addRaw("icons", def.Icons, func(raw json.RawMessage) (*node, bool) {
		n, ok := optionalNode(raw)
		if ok && n != nil && n.kind == kindArray && len(n.arr) == 0 {
			return nil, true
		}
		return n, ok
	})
	addRaw("_meta", def.Meta, func(raw json.RawMessage) (*node, bool) {
		n, ok := optionalNode(raw)
		if ok && n != nil && n.kind == kindObject && len(n.obj) == 0 {
			return nil, true
		}
		return n, ok
	})
	return obj
}

func str(s string) *node { return &node{kind: kindString, s: s} }

// optionalNode parses raw, reading absent, blank and null as nil.
func optionalNode(raw json.RawMessage) (*node, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	n, err := parseJSON(raw)
	if err != nil {
		return nil, false
	}
	if n.kind == kindNull {
		return nil, true
	}
	return n, true
}

func inputSchemaNode(raw json.RawMessage) (*node, bool) {
	n, ok := optionalNode(raw)
	if ok && n == nil {
		n = &node{kind: kindObject, obj: []member{{"type", str("object")}}}
	}
	return n, ok
}

// annotationDefaults are the spec's defaults for the hints, and what an
// absent hint means.
var annotationDefaults = []member{
	{"destructiveHint", &node{kind: kindBool, b: true}},
	{"idempotentHint", &node{kind: kindBool, b: false}},
	{"openWorldHint", &node{kind: kindBool, b: true}},
	{"readOnlyHint", &node{kind: kindBool, b: false}},
}

func isDefaultHint(m member) bool {
	if m.key == "title" {
		return m.val.kind == kindString && m.val.s == ""
	}
	for _, d := range annotationDefaults {
		if d.key == m.key {
			return m.val.kind == kindBool && m.val.b == d.val.b
		}
	}
	return false
}

func dropDefaultHints(n *node) *node {
	out := &node{kind: kindObject}
	for _, m := range n.obj {
		if !isDefaultHint(m) {
			out.obj = append(out.obj, m)
		}
	}
	return out
}

// withDefaultHints fills in every absent hint, for a diff a person reads:
// "readOnlyHint: true → false" says more than "removed".
func withDefaultHints(n *node) *node {
	out := &node{kind: kindObject}
	if n != nil && n.kind == kindObject {
		out.obj = append(out.obj, n.obj...)
	}
	for _, d := range annotationDefaults {
		if out.get(d.key) == nil {
			out.obj = append(out.obj, d)
		}
	}
	return out
}
