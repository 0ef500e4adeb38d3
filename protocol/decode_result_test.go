package protocol

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// unmarshalResult is the reference DecodeCallToolResult must match.
func unmarshalResult(raw []byte) (CallToolResult, error) {
	var res CallToolResult
	err := json.Unmarshal(raw, &res)
	return res, err
}

// checkDecodeResult asserts that DecodeCallToolResult agrees with
// json.Unmarshal on raw: the same result exactly (nil and empty slices are
// told apart, raw messages compared byte for byte), or the same error.
func checkDecodeResult(t *testing.T, raw []byte) (CallToolResult, error) {
	t.Helper()
	before := bytes.Clone(raw)
	got, err := DecodeCallToolResult(raw)
	if !bytes.Equal(raw, before) {
		t.Fatalf("DecodeCallToolResult(%q) modified its input", before)
	}
	want, wantErr := unmarshalResult(raw)
	if wantErr != nil {
		if err == nil || err.Error() != wantErr.Error() {
			t.Fatalf("DecodeCallToolResult(%q) = %+v, %v; json.Unmarshal error %v", raw, got, err, wantErr)
		}
		if !reflect.ValueOf(got).IsZero() {
			t.Fatalf("DecodeCallToolResult(%q) = %+v with error %v, want zero", raw, got, err)
		}
		return got, err
	}
	if err != nil {
		t.Fatalf("DecodeCallToolResult(%q) error %v; json.Unmarshal succeeds with %+v", raw, err, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("DecodeCallToolResult(%q) mismatch (-json.Unmarshal +got):\n%s", raw, diff)
	}
	// The raw members may alias raw, but appending to one must not write
	// into it.
	for _, m := range rawMembers(&got) {
		_ = append(m, "\x00\x00"...)
	}
	if !bytes.Equal(raw, before) {
		t.Fatalf("DecodeCallToolResult(%q): appending to a raw member changed the input to %q", before, raw)
	}
	return got, nil
}

func rawMembers(r *CallToolResult) []json.RawMessage {
	ms := []json.RawMessage{r.StructuredContent, r.Meta}
	for _, c := range r.Content {
		ms = append(ms, c.Annotations, c.Meta)
	}
	return ms
}

func TestDecodeCallToolResult(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want CallToolResult
		// fast: decoded without encoding/json for the whole result (a block
		// may still go to encoding/json).
		fast bool
	}{
		{
			name: "text",
			in:   `{"content":[{"type":"text","text":"{\"n\":1}"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: `{"n":1}`}}},
			fast: true,
		},
		{
			name: "text and structuredContent",
			in:   `{"content":[{"type":"text","text":"{\"temperature\":22.5}"}],"structuredContent":{"temperature":22.5},"isError":false}`,
			want: CallToolResult{
				Content:           []ContentBlock{{Type: "text", Text: `{"temperature":22.5}`}},
				StructuredContent: raw(`{"temperature":22.5}`),
			},
			fast: true,
		},
		{
			name: "whitespace everywhere, raw values keep theirs",
			in:   " \t\r\n{ \"content\" : [ { \"type\" : \"text\" , \"text\" : \"a\" } ] , \"structuredContent\" : { \"a\" : [ 1 , 2 ] } , \"_meta\" : { } } \n",
			want: CallToolResult{
				Content:           []ContentBlock{{Type: "text", Text: "a"}},
				StructuredContent: raw(`{ "a" : [ 1 , 2 ] }`),
				Meta:              raw(`{ }`),
			},
			fast: true,
		},
		{
			name: "isError",
			in:   `{"content":[{"type":"text","text":"API error: 503"}],"isError":true}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "API error: 503"}}, IsError: true},
			fast: true,
		},
		{
			name: "isError null leaves it false, last isError wins",
			in:   `{"isError":true,"isError":null,"content":[],"isError":false}`,
			want: CallToolResult{Content: []ContentBlock{}},
			fast: true,
		},
		{
			name: "image and audio",
			in:   `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav","annotations":{"audience":["user"],"priority":0.5}}]}`,
			want: CallToolResult{Content: []ContentBlock{
				{Type: "image", Data: "iVBORw0KGgo=", MimeType: "image/png"},
				{Type: "audio", Data: "UklGRg==", MimeType: "audio/wav", Annotations: raw(`{"audience":["user"],"priority":0.5}`)},
			}},
			fast: true,
		},
		{
			name: "resource_link",
			in:   `{"content":[{"type":"resource_link","uri":"file:///srv/report.csv","name":"report.csv","title":"Report","description":"Q3","mimeType":"text/csv","size":4096,"_meta":{"k":"v"}}]}`,
			want: CallToolResult{Content: []ContentBlock{{
				Type: "resource_link", URI: "file:///srv/report.csv", Name: "report.csv", Title: "Report",
				Description: "Q3", MimeType: "text/csv", Size: ptr(int64(4096)), Meta: raw(`{"k":"v"}`),
			}}},
			fast: true,
		},
		{
			name: "resource_link with icons",
			in:   `{"content":[{"type":"resource_link","uri":"u","name":"n","icons":[{"src":"https://x/i.png","sizes":["16x16"]}]}]}`,
			want: CallToolResult{Content: []ContentBlock{{
				Type: "resource_link", URI: "u", Name: "n", Icons: []Icon{{Src: "https://x/i.png", Sizes: []string{"16x16"}}},
			}}},
			fast: true,
		},
		{
			name: "embedded resource among other blocks",
			in:   `{"content":[{"type":"text","text":"see"},{"type":"resource","resource":{"uri":"file:///y","mimeType":"text/plain","text":"y"},"annotations":{"audience":["user"]}},{"type":"text","text":"end"}]}`,
			want: CallToolResult{Content: []ContentBlock{
				{Type: "text", Text: "see"},
				{Type: "resource", Resource: &ResourceContents{URI: "file:///y", MimeType: "text/plain", Text: "y"}, Annotations: raw(`{"audience":["user"]}`)},
				{Type: "text", Text: "end"},
			}},
			fast: true,
		},
		{
			name: "escapes",
			in:   `{"content":[{"type":"text","text":"a\nb\t\"q\" \\ \/ \b\f\r \u00e9 \ud83d\ude00 é 😀"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "a\nb\t\"q\" \\ / \b\f\r é 😀 é 😀"}}},
			fast: true,
		},
		{
			name: "lone and mismatched surrogates become U+FFFD",
			in:   `{"content":[{"type":"text","text":"\ud83d \ude00 \ud83d\u0041 \ud83d\ud83d\ude00 \udc00\udc00 \ud800"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "\uFFFD \uFFFD \uFFFDA \uFFFD😀 \uFFFD\uFFFD \uFFFD"}}},
			fast: true,
		},
		{
			name: "invalid UTF-8 becomes U+FFFD per byte",
			in:   "{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\xed\xa0\x80c\xe2\x82\"},{\"type\":\"text\",\"text\":\"\\n\xc0\"}]}",
			want: CallToolResult{Content: []ContentBlock{
				{Type: "text", Text: "a\uFFFDb\uFFFD\uFFFD\uFFFDc\uFFFD\uFFFD"},
				{Type: "text", Text: "\n\uFFFD"},
			}},
			fast: true,
		},
		{
			name: "empty content",
			in:   `{"content":[]}`,
			want: CallToolResult{Content: []ContentBlock{}},
			fast: true,
		},
		{
			name: "content null",
			in:   `{"content":null,"isError":true}`,
			want: CallToolResult{IsError: true},
			fast: true,
		},
		{
			name: "missing content",
			in:   `{"structuredContent":{"n":1}}`,
			want: CallToolResult{StructuredContent: raw(`{"n":1}`)},
			fast: true,
		},
		{
			name: "empty object",
			in:   `{}`,
			fast: true,
		},
		{
			name: "null raw members are kept as null",
			in:   `{"content":[{"type":"text","text":"","annotations":null,"_meta":null}],"structuredContent":null,"_meta":null}`,
			want: CallToolResult{
				Content:           []ContentBlock{{Type: "text", Annotations: raw(`null`), Meta: raw(`null`)}},
				StructuredContent: raw(`null`),
				Meta:              raw(`null`),
			},
			fast: true,
		},
		{
			name: "null strings leave the earlier value",
			in:   `{"content":[{"type":"text","text":"a","text":null,"size":1,"size":null,"title":"x","title":"y"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "a", Title: "y"}}},
			fast: true,
		},
		{
			name: "null and empty blocks",
			in:   `{"content":[null,{},{"type":"text"}]}`,
			want: CallToolResult{Content: []ContentBlock{{}, {}, {Type: "text"}}},
			fast: true,
		},
		{
			name: "unknown members are ignored",
			in:   `{"task":{"id":"t1"},"content":[{"type":"text","text":"a","extra":[1,{"b":null}],"x":1e5}],"z":"\u00e9"}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "a"}}},
			fast: true,
		},
		{
			name: "many blocks",
			in:   `{"content":[{"type":"text","text":"1"},{"type":"text","text":"2"},{"type":"text","text":"3"},{"type":"text","text":"4"},{"type":"text","text":"5"},{"type":"text","text":"6"}]}`,
			want: CallToolResult{Content: []ContentBlock{
				{Type: "text", Text: "1"}, {Type: "text", Text: "2"}, {Type: "text", Text: "3"},
				{Type: "text", Text: "4"}, {Type: "text", Text: "5"}, {Type: "text", Text: "6"},
			}},
			fast: true,
		},
		{
			name: "extreme sizes",
			in:   `{"content":[{"size":-9223372036854775808},{"size":9223372036854775807},{"size":-0}]}`,
			want: CallToolResult{Content: []ContentBlock{
				{Size: ptr(int64(-9223372036854775808))}, {Size: ptr(int64(9223372036854775807))}, {Size: ptr(int64(0))},
			}},
			fast: true,
		},
		{
			name: "escaped type",
			in:   `{"content":[{"type":"te\u0078t","text":"a"},{"type":"custom"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "a"}, {Type: "custom"}}},
			fast: true,
		},
		{
			name: "block key matched case-insensitively",
			in:   `{"content":[{"type":"text","Text":"a","MIMETYPE":"m"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "a", MimeType: "m"}}},
			fast: true,
		},
		{
			name: "block key escaped",
			in:   `{"content":[{"type":"text","t\u0065xt":"a"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text", Text: "a"}}},
			fast: true,
		},
		{
			name: "block key folding to size",
			in:   `{"content":[{"ſize":3}]}`,
			want: CallToolResult{Content: []ContentBlock{{Size: ptr(int64(3))}}},
			fast: true,
		},
		{
			name: "top-level key matched case-insensitively",
			in:   `{"content":[],"IsError":true}`,
			want: CallToolResult{Content: []ContentBlock{}, IsError: true},
		},
		{
			name: "top-level key folding to structuredContent",
			in:   `{"ſtructuredContent":{"a":1}}`,
			want: CallToolResult{StructuredContent: raw(`{"a":1}`)},
		},
		{
			name: "top-level key escaped",
			in:   `{"\u0063ontent":[{"type":"text"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "text"}}},
		},
		{
			name: "content twice merges blocks",
			in:   `{"content":[{"type":"text","text":"a"},{"type":"text"}],"content":[{"type":"image"}]}`,
			want: CallToolResult{Content: []ContentBlock{{Type: "image", Text: "a"}}},
		},
		{
			name: "null result",
			in:   `null`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkDecodeResult(t, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if _, fast := decodeResultFast([]byte(tt.in), nil); fast != tt.fast {
				t.Errorf("fast path taken: %v, want %v", fast, tt.fast)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecodeCallToolResultErrors(t *testing.T) {
	for _, in := range []string{
		``,
		` `,
		`[]`,
		`"content"`,
		`1`,
		`true`,
		`{`,
		`{"content":[]`,
		`{"content":[]}}`,
		`{"content":[]} x`,
		`{"content":[],}`,
		`{"content" []}`,
		`{content:[]}`,
		`{"content":{}}`,
		`{"content":"text"}`,
		`{"content":[1]}`,
		`{"content":[[]]}`,
		`{"content":[true]}`,
		`{"content":[{"type":1}]}`,
		`{"content":[{"text":true}]}`,
		`{"content":[{"type":"text","text":["a"]}]}`,
		`{"content":[{"size":1.5}]}`,
		`{"content":[{"size":1e3}]}`,
		`{"content":[{"size":9223372036854775808}]}`,
		`{"content":[{"size":"3"}]}`,
		`{"content":[{"resource":"x"}]}`,
		`{"content":[{"icons":{}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":1}}]}`,
		`{"content":[{"type":"text","text":"a` + "\x01" + `"}]}`,
		`{"content":[{"type":"text","text":"\x"}]}`,
		`{"content":[{"type":"text","text":"\u12"}]}`,
		`{"content":[{"type":"text","text":"a}]}`,
		`{"content":[{"type":"text" "text":"a"}]}`,
		`{"content":[{"type":"text",}]}`,
		`{"content":[{"type":"text"]}`,
		`{"content":[{"type":"text"},]}`,
		`{"content":[{"x":01}]}`,
		`{"isError":"true"}`,
		`{"isError":1}`,
		`{"isError":tru}`,
		`{"isError":nul}`,
		`{"structuredContent":}`,
		`{"structuredContent":{"a":}}`,
		`{"_meta":[1,]}`,
		`{"IsError":"x"}`,
		"\ufeff{}",
		`{"content":[]}` + strings.Repeat("[", 10),
		`{"structuredContent":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"content":[{"annotations":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}]}`,
	} {
		if _, err := checkDecodeResult(t, []byte(in)); err == nil {
			t.Errorf("DecodeCallToolResult(%.80q) succeeded", in)
		}
	}
}

// TestDecodeCallToolResultDepth checks the nesting limit at its edge: the
// result object, the content array and a block count as three levels.
func TestDecodeCallToolResultDepth(t *testing.T) {
	ok := `{"content":[{"annotations":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `}]}`
	if _, err := checkDecodeResult(t, []byte(ok)); err != nil {
		t.Errorf("depth 10000: %v", err)
	}
	if _, fast := decodeResultFast([]byte(ok), nil); !fast {
		t.Errorf("depth 10000 not decoded on the fast path")
	}
}

// TestDecodeCallToolResultFields guards the decoder's lists of member names:
// a field added to CallToolResult or ContentBlock must be added there, and
// decoded (or left to encoding/json) in decodeResultFast or decodeBlock.
func TestDecodeCallToolResultFields(t *testing.T) {
	for _, tt := range []struct {
		typ   reflect.Type
		names []string
	}{
		{reflect.TypeFor[CallToolResult](), resultFields},
		{reflect.TypeFor[ContentBlock](), blockFields},
	} {
		var tags []string
		for f := range tt.typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			tags = append(tags, name)
		}
		if !slices.Equal(tags, tt.names) {
			t.Errorf("%v: json names %q, decoder knows %q", tt.typ, tags, tt.names)
		}
	}
}

func TestDecodeCallToolResultAliasing(t *testing.T) {
	in := []byte(`{"content":[{"type":"text","text":"a","annotations":{"p":1}}],"structuredContent":{"n":1},"_meta":{}}`)
	res, err := DecodeCallToolResult(in)
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(in)
	_ = append(res.StructuredContent, "xxxx"...)
	_ = append(res.Content[0].Annotations, "xxxx"...)
	_ = append(res.Meta, "xxxx"...)
	if !bytes.Equal(in, before) {
		t.Errorf("appending to a raw member changed the input: %s", in)
	}
}

func TestDecodeCallToolResultAllocs(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
		max  float64
	}{
		{"echo", echoResult, 2},
		{"structured", structuredResult, 2},
		{"plain text", []byte(`{"content":[{"type":"text","text":"hello"}]}`), 2},
		{"two blocks", []byte(`{"content":[{"type":"text","text":"hello"},{"type":"image","data":"AA==","mimeType":"image/png"}]}`), 5},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := DecodeCallToolResult(tt.in); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > tt.max {
			t.Errorf("%s: %v allocations, want at most %v", tt.name, allocs, tt.max)
		}
	}
}

// TestDecodeCallToolResultRandom compares with json.Unmarshal on generated
// results: the shapes servers send, with case-folded, escaped and unknown
// keys, nulls, duplicates, values of the wrong type, odd strings and, now
// and then, a damaged byte. It reaches deeper into the fast path than the
// byte-level fuzzer does in a short run.
func TestDecodeCallToolResultRandom(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	g := resultGen{rand.New(rand.NewPCG(1, 2))}
	fast := 0
	for range n {
		in := g.result()
		if g.r.IntN(8) == 0 && len(in) > 0 {
			const damage = `{}[],:"\x0 `
			in[g.r.IntN(len(in))] = damage[g.r.IntN(len(damage))]
		}
		checkDecodeResult(t, in)
		if _, ok := decodeResultFast(in, nil); ok {
			fast++
		}
	}
	t.Logf("%d of %d results decoded on the fast path", fast, n)
	if fast < n/4 {
		t.Errorf("only %d of %d results decoded on the fast path", fast, n)
	}
}

type resultGen struct{ r *rand.Rand }

func (g resultGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g resultGen) ws() string {
	if g.r.IntN(4) > 0 {
		return ""
	}
	return g.pick(" ", "\n", "\t ", "\r\n")
}

func (g resultGen) result() []byte {
	var b strings.Builder
	b.WriteString(g.ws() + "{")
	for k := range g.r.IntN(5) {
		if k > 0 {
			b.WriteString(",")
		}
		key := g.pick("content", "content", "content", "structuredContent", "isError", "_meta",
			"IsError", "Content", "STRUCTUREDCONTENT", "_Meta", "ſtructuredContent", `\u0063ontent`, "task", "x", "")
		b.WriteString(g.ws() + `"` + key + `"` + g.ws() + ":" + g.ws())
		switch {
		case strings.EqualFold(key, "content") && g.r.IntN(8) > 0:
			b.WriteString(g.content())
		case strings.EqualFold(key, "isError") && g.r.IntN(4) > 0:
			b.WriteString(g.pick("true", "false", "null"))
		default:
			b.WriteString(g.value(2))
		}
		b.WriteString(g.ws())
	}
	b.WriteString("}" + g.ws())
	return []byte(b.String())
}

func (g resultGen) content() string {
	if g.r.IntN(10) == 0 {
		return "null"
	}
	var b strings.Builder
	b.WriteString("[")
	for k := range g.r.IntN(6) {
		if k > 0 {
			b.WriteString(",")
		}
		b.WriteString(g.ws())
		switch g.r.IntN(20) {
		case 0:
			b.WriteString("null")
		case 1:
			b.WriteString(g.value(2))
		default:
			b.WriteString(g.block())
		}
		b.WriteString(g.ws())
	}
	b.WriteString("]")
	return b.String()
}

func (g resultGen) block() string {
	var b strings.Builder
	b.WriteString("{")
	for k := range g.r.IntN(7) {
		if k > 0 {
			b.WriteString(",")
		}
		key := g.pick("type", "type", "text", "text", "data", "mimeType", "uri", "name", "title", "description",
			"size", "annotations", "_meta", "resource", "icons", "Text", "MIMETYPE", "ſize", `t\u0065xt`, "extra", "k")
		b.WriteString(g.ws() + `"` + key + `"` + g.ws() + ":" + g.ws())
		switch {
		case g.r.IntN(10) == 0:
			b.WriteString(g.value(2))
		case key == "size" || key == "ſize":
			b.WriteString(g.pick("0", "-0", "4096", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "1.5", "1e3", "null", `"1"`))
		case key == "resource":
			b.WriteString(g.pick(`{"uri":"file:///y","mimeType":"text/plain","text":"y"}`, `{"uri":"u","blob":"AA==","_meta":{}}`, `null`, `{"uri":1}`, `{"URI":"v","Text":"w"}`))
		case key == "icons":
			b.WriteString(g.pick(`[{"src":"s","sizes":["1x1"]}]`, `[]`, `null`, `{}`))
		case key == "annotations" || key == "_meta" || key == "extra" || key == "k":
			b.WriteString(g.value(3))
		case g.r.IntN(12) == 0:
			b.WriteString("null")
		case key == "type" && g.r.IntN(2) == 0:
			b.WriteString(g.pick(`"text"`, `"image"`, `"audio"`, `"resource_link"`, `"resource"`, `"te\u0078t"`))
		default:
			b.WriteString(g.str())
		}
		b.WriteString(g.ws())
	}
	b.WriteString("}")
	return b.String()
}

func (g resultGen) str() string {
	var b strings.Builder
	b.WriteString(`"`)
	for range g.r.IntN(6) {
		b.WriteString(g.pick("a", "hello world", `{\"n\":1}`, `\n`, `\\`, `\/`, `\b\f\r\t`,
			`\u00e9`, `\u00E9`, `\ud83d\ude00`, `\ud800`, `\udc00`, `\ud83d\u0041`, `\u0000`,
			"é", "😀", "\xff", "\xed\xa0\x80", "\xe2\x82", "\xef\xbf\xbd", strings.Repeat("x", 13)))
	}
	b.WriteString(`"`)
	return b.String()
}

// value is any JSON value, nested at most depth levels.
func (g resultGen) value(depth int) string {
	k := g.r.IntN(9)
	if depth == 0 {
		k %= 6
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return g.pick("true", "false")
	case 2:
		return g.pick("0", "-1", "2.5e-3", "1E+2", "123456789012345678901234567890")
	case 3, 4, 5:
		return g.str()
	case 6, 7:
		var b strings.Builder
		b.WriteString("{")
		for j := range g.r.IntN(3) {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(g.ws() + g.str() + g.ws() + ":" + g.ws() + g.value(depth-1) + g.ws())
		}
		return b.String() + "}"
	default:
		var b strings.Builder
		b.WriteString("[")
		for j := range g.r.IntN(3) {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(g.ws() + g.value(depth-1) + g.ws())
		}
		return b.String() + "]"
	}
}

// decodeResultSeeds are results of every shape for the fuzzer's seed corpus
// (more live in testdata/fuzz/FuzzDecodeCallToolResult).
var decodeResultSeeds = []string{
	`{"content":[{"type":"text","text":"{\"n\":1}"}]}`,
	`{"content":[{"type":"text","text":"{\"temperature\":22.5}"}],"structuredContent":{"temperature":22.5},"isError":false}`,
	`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","annotations":{"audience":["user"],"priority":0.5}}],"isError":true,"_meta":{"k":[1,null]}}`,
	`{"content":[{"type":"resource_link","uri":"file:///x","name":"x","title":"t","description":"d","mimeType":"text/plain","size":3,"_meta":null}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"file:///y","mimeType":"text/plain","text":"y","blob":"AA==","_meta":{}}},{"type":"resource_link","uri":"u","name":"n","icons":[{"src":"s","mimeType":"image/png","sizes":["1x1"],"theme":"dark"}]}]}`,
	`{"content":[{"type":"text","text":"\u00e9\ud83d\ude00\ud800\udc00x\\\"\/\b\f\n\r\t"},null,{}],"content2":1}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xed\xa0\x80\xf0\x9f\x98\"}]}",
	`{"content":null,"structuredContent":null,"isError":null,"_meta":null}`,
	`{"Content":[{"TYPE":"text"}],"ISERROR":true,"structuredcontent":{}}`,
	`{"content":[{"type":"a"}],"content":[{"text":"b"},{}]}`,
	`{"\u0063ontent":[{"t\u0079pe":"text","ſize":1}]}`,
	`{"content":[{"size":-9223372036854775808,"size":null,"size":12}]}`,
	` { "content" : [ { "type" : "text" , "text" : "" } ] } `,
	`{"content":[]}`,
	`{}`,
	`null`,
	`[]`,
	`{"content":[{"type":"text","text":"a"}]} x`,
}

func FuzzDecodeCallToolResult(f *testing.F) {
	for _, s := range decodeResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecodeResult(t, raw)
	})
}

var (
	echoResult       = []byte(`{"content":[{"type":"text","text":"{\"n\":1}"}]}`)
	structuredResult = []byte(`{"content":[{"type":"text","text":"{\"temperature\":22.5,\"conditions\":\"Partly cloudy\"}"}],"structuredContent":{"temperature":22.5,"conditions":"Partly cloudy"},"isError":false}`)
	resourceResult   = []byte(`{"content":[{"type":"text","text":"Found 1 file"},{"type":"resource","resource":{"uri":"file:///srv/report.csv","mimeType":"text/csv","text":"a,b\n1,2\n"}}]}`)
	largeTextResult  = []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(`lorem ipsum \"dolor\" sit amet, `, 256) + `"}],"isError":false}`)
)

func BenchmarkDecodeCallToolResult(b *testing.B) {
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"echo", echoResult},
		{"structured", structuredResult},
		{"resource", resourceResult},
		{"8KiB-text", largeTextResult},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.in)))
			for b.Loop() {
				if _, err := DecodeCallToolResult(tt.in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.in)))
			for b.Loop() {
				var res CallToolResult
				if err := json.Unmarshal(tt.in, &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// DecodeCallToolResultIn decodes as DecodeCallToolResult does, holding a
// result's one block in the caller's array and allocating no slice for it;
// a result of more blocks, or none, leaves the array out.
func TestDecodeCallToolResultIn(t *testing.T) {
	for _, in := range [][]byte{echoResult, structuredResult, resourceResult, []byte(`{"content":[]}`), []byte(`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}`)} {
		want, err := DecodeCallToolResult(in)
		if err != nil {
			t.Fatal(err)
		}
		var one [1]ContentBlock
		got, err := DecodeCallToolResultIn(in, &one)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-DecodeCallToolResult +In):\n%s", in, diff)
		}
		if inOne := len(got.Content) == 1 && &got.Content[0] == &one[0]; inOne != (len(want.Content) == 1 && bytes.Count(in, []byte(`"content"`)) == 1) {
			t.Errorf("%s: block held in the caller's array: %v", in, inOne)
		}
	}
	var one [1]ContentBlock
	if n := testing.AllocsPerRun(100, func() { DecodeCallToolResultIn(echoResult, &one) }); n != 1 {
		t.Errorf("an echo's result: %v allocations, want 1 (its text)", n)
	}
}
