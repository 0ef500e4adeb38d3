package toolpin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// appsTool is a tool as an MCP Apps server lists it: an icon and the
// interface a client renders for it.
var appsTool = Definition{
	Name: "chart", Description: "Draw a chart.", InputSchema: json.RawMessage(`{"type":"object"}`),
	Icons: json.RawMessage(`[{"src":"https://cdn.example.com/chart.png","mimeType":"image/png","sizes":["48x48"]}]`),
	Meta:  json.RawMessage(`{"ui":{"resourceUri":"ui://chart/view.html"}}`),
}

// Icons and _meta are pinned: any change to them changes the hash, and
// a change is shown by JSON pointer.
func TestHashPinsIconsAndMeta(t *testing.T) {
	changes := map[string]func(d *Definition){
		"icon URL": func(d *Definition) {
			d.Icons = json.RawMessage(`[{"src":"https://evil.test/chart.png","mimeType":"image/png","sizes":["48x48"]}]`)
		},
		"icon dropped": func(d *Definition) { d.Icons = nil },
		"icon theme": func(d *Definition) {
			d.Icons = json.RawMessage(`[{"src":"https://cdn.example.com/chart.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]`)
		},
		"ui resourceUri": func(d *Definition) { d.Meta = json.RawMessage(`{"ui":{"resourceUri":"ui://chart/other.html"}}`) },
		"meta key added": func(d *Definition) {
			d.Meta = json.RawMessage(`{"ui":{"resourceUri":"ui://chart/view.html"},"openai/widgetAccessible":true}`)
		},
		"meta dropped":    func(d *Definition) { d.Meta = nil },
		"invalid meta":    func(d *Definition) { d.Meta = json.RawMessage(`{"ui":`) },
		"meta not object": func(d *Definition) { d.Meta = json.RawMessage(`"ui"`) },
	}
	seen := map[string]string{Hash(appsTool): "original"}
	for name, change := range changes {
		d := appsTool
		change(&d)
		h := Hash(d)
		if other, ok := seen[h]; ok {
			t.Errorf("%s: same hash as %s", name, other)
		}
		seen[h] = name
		if name != "invalid meta" && len(Diff(appsTool, d)) == 0 {
			t.Errorf("%s: no change in the diff", name)
		}
	}

	// Empty forms mean no icons and no _meta, as absent ones.
	same := appsTool
	same.Icons = json.RawMessage(` [ { "mimeType":"image/png", "sizes":["48x48"], "src":"https://cdn.example.com/chart.png" } ] `)
	if Hash(same) != Hash(appsTool) {
		t.Error("key order and spaces in icons change the hash")
	}
	bare := Definition{Name: "chart", Description: "Draw a chart."}
	for _, empty := range []struct{ icons, meta string }{{"[]", "{}"}, {"null", "null"}, {"", ""}} {
		d := bare
		d.Icons, d.Meta = json.RawMessage(empty.icons), json.RawMessage(empty.meta)
		if Hash(d) != Hash(bare) {
			t.Errorf("icons %q and _meta %q hash apart from none", empty.icons, empty.meta)
		}
	}
}

// The legacy hash is version 1's: without icons and _meta. A definition
// without them hashes alike in both versions, so the upgrade touches only
// the pins of tools that have them.
func TestLegacyHash(t *testing.T) {
	bare := appsTool
	bare.Icons, bare.Meta = nil, nil
	if LegacyHash(bare) != Hash(bare) {
		t.Error("a definition without icons or _meta hashes apart in the two versions")
	}
	if LegacyHash(appsTool) != Hash(bare) {
		t.Error("LegacyHash counts icons or _meta")
	}
	if LegacyHash(appsTool) == Hash(appsTool) {
		t.Error("Hash leaves out icons or _meta")
	}
	if !strings.Contains(string(Canonical(appsTool)), `"_meta":{"ui":{"resourceUri":"ui://chart/view.html"}}`) {
		t.Errorf("Canonical lacks _meta: %s", Canonical(appsTool))
	}
	if got := string(Canonical(Definition{Name: "t", Meta: json.RawMessage(`{`)})); got != `{"inputSchema":{"type":"object"},"invalidMeta":"7b","name":"t"}` {
		t.Errorf("Canonical of invalid _meta = %s", got)
	}
}

func TestFromToolIconsAndMeta(t *testing.T) {
	d := FromTool(protocol.Tool{Name: "chart", Icons: []protocol.Icon{{Src: "https://cdn.example.com/chart.png"}},
		Meta: json.RawMessage(`{"ui":{"resourceUri":"ui://chart/view.html"}}`)})
	if string(d.Icons) != `[{"src":"https://cdn.example.com/chart.png"}]` || string(d.Meta) != `{"ui":{"resourceUri":"ui://chart/view.html"}}` {
		t.Errorf("FromTool: icons %s, _meta %s", d.Icons, d.Meta)
	}
	if d := FromTool(protocol.Tool{Name: "t"}); d.Icons != nil || d.Meta != nil {
		t.Errorf("FromTool of a tool without icons: %+v", d)
	}
}

func TestDiffIconsAndMeta(t *testing.T) {
	next := appsTool
	next.Icons = json.RawMessage(`[{"src":"https://evil.test/chart.png","mimeType":"image/png","sizes":["48x48"]}]`)
	next.Meta = json.RawMessage(`{"ui":{"resourceUri":"ui://chart/other.html"}}`)
	want := `icons /0/src: "https://cdn.example.com/chart.png" → "https://evil.test/chart.png"
_meta /ui/resourceUri: "ui://chart/view.html" → "ui://chart/other.html"
`
	if got := Diff(appsTool, next).String(); got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
}

// Look-alike letters: a name that mixes scripts or is wholly of Latin
// doubles, words that mix scripts in text, and compatibility forms in
// names; never a name or text in one script, nor Japanese, Chinese or
// Korean mixed with Latin as those languages write.
func TestCheckLookalikes(t *testing.T) {
	hit := []struct {
		def  Definition
		path string
		want string // in the reason
	}{
		{Definition{Name: "r\u0435ad_file"}, "name", `reads as "read_file"`},
		{Definition{Name: "\u0435\u0445\u0435\u0441"}, "name", `reads as "exec"`},
		{Definition{Name: "get_\u03bf\u03c1\u03bffile"}, "name", "Latin and Greek"},
		{Definition{Name: "\uff52\uff45\uff41\uff44_file"}, "name", `reads as "read_file"`},
		{Definition{Name: "\U0001d42b\U0001d41e\U0001d41a\U0001d41d"}, "name", `reads as "read"`},
		{Definition{Name: "t", Title: "R\u0435ad File"}, "title", `reads as "Read"`},
		{Definition{Name: "t", Description: "Reads the p\u0430ssword file."}, "description", "Latin and Cyrillic"},
		{Definition{Name: "t", Annotations: json.RawMessage(`{"title":"\u0421opy"}`)}, "annotations/title", `reads as "Copy"`},
		{Definition{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"p\u0430th":{"type":"string"}}}`)}, "inputSchema/properties/p\u0430th", `reads as "path"`},
		{Definition{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"description":"the \u0440ath"}}}`)}, "inputSchema/properties/p/description", "Cyrillic and Latin"},
	}
	for _, tt := range hit {
		fs := Check(tt.def)
		i := slices.IndexFunc(fs, func(f Finding) bool { return f.Rule == RuleMixedScript })
		if i < 0 {
			t.Errorf("%+v: no %s finding in %v", tt.def, RuleMixedScript, fs)
			continue
		}
		if f := fs[i]; f.Path != tt.path || f.Severity != SeverityHold || !strings.Contains(f.Reason, tt.want) || !strings.Contains(f.Excerpt, "U+") {
			t.Errorf("%+v: finding %+v, want path %q, reason with %q, excerpt marking the letter", tt.def, f, tt.path, tt.want)
		}
	}
	miss := []Definition{
		{Name: "read_file", Title: "Read file", Description: "Reads a file. Café, naïve, Øresund."},
		{Name: "погода", Title: "Погода в городе", Description: "Возвращает погоду. Uses the OpenWeather API."},
		{Name: "翻訳_translate", Title: "翻訳する", Description: "日本語のテキストをEnglishに翻訳します。カタカナもOK。"},
		{Name: "검색_search", Description: "한국어 검색 API"},
		{Name: "χρόνος", Description: "Time in μs (microseconds), Ω ohms, 5°C."},
		{Name: "t", Description: "Uses the ∑ operator and π ≈ 3.14; the α parameter; 10 μm."},
	}
	for _, d := range miss {
		for _, f := range Check(d) {
			if f.Rule == RuleMixedScript {
				t.Errorf("%+v: %v", d, f)
			}
		}
	}
}

// Invisible characters and duplicate keys in icons and _meta are found
// as in a schema.
func TestCheckIconsAndMeta(t *testing.T) {
	d := Definition{Name: "t", Icons: json.RawMessage(`[{"src":"https://cdn.example.com/a\u202e.png"}]`),
		Meta: json.RawMessage(`{"ui":{"resourceUri":"ui://a","resourceUri":"ui://b"}}`)}
	var paths []string
	for _, f := range Check(d) {
		paths = append(paths, f.Rule+" "+f.Path)
	}
	want := []string{RuleInvisibleUnicode + " icons/0/src", RuleDuplicateKey + " _meta/ui/resourceUri"}
	if !slices.Equal(paths, want) {
		t.Errorf("findings at %v, want %v", paths, want)
	}
}

// scriptOf's sorted ranges agree with the standard library's script
// tables (every 13th code point, to stay quick under -race).
func TestScriptOfMatchesTables(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r += 13 {
		want := ""
		if unicode.IsLetter(r) {
			for name, table := range unicode.Scripts {
				if name != "Common" && name != "Inherited" && unicode.Is(table, r) {
					want = name
				}
			}
		}
		if got := scriptOf(r); got != want {
			t.Fatalf("scriptOf(%U) = %q, want %q", r, got, want)
		}
	}
}
