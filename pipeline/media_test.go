package pipeline

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpvisor/mcpvisor/internal/media"
)

// tinyPNG is a real 2x2 PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	img.Set(1, 1, color.RGBA{B: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// mediaResult decodes a CallToolResult built from content blocks, the way
// Host.Call does.
func mediaResult(t *testing.T, structured string, blocks ...map[string]any) *Result {
	t.Helper()
	m := map[string]any{"content": blocks}
	if structured != "" {
		m["structuredContent"] = json.RawMessage(structured)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var mediaNameRE = regexp.MustCompile(`^[0-9a-f]{32}\.[a-z0-9]+$`)

func TestMediaRender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "media")
	store := media.New(dir, "", 3000)

	pngBytes := tinyPNG(t)
	audio := bytes.Repeat([]byte{0xfb, 0xff, 0x01, 0x02, 0x03}, 100) // URL-safe base64 has - and _
	pdf := []byte("%PDF-1.4 tiny")
	big := bytes.Repeat([]byte("x"), 5000)
	if !strings.ContainsAny(base64.RawURLEncoding.EncodeToString(audio), "-_") {
		t.Fatal("the audio fixture does not exercise the URL-safe alphabet")
	}

	r := mediaResult(t, "",
		map[string]any{"type": "text", "text": "here you go"},
		map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(pngBytes)},
		map[string]any{"type": "audio", "mimeType": "audio/wav", "data": base64.RawURLEncoding.EncodeToString(audio)},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": base64.RawStdEncoding.EncodeToString(pdf)}},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "note://1", "text": "an embedded note"}},
		map[string]any{"type": "resource_link", "uri": "https://example.com/a.csv", "name": "a", "mimeType": "text/csv"},
		map[string]any{"type": "resource_link", "uri": "https://example.com/x (1)", "name": "x"},
		map[string]any{"type": "image", "mimeType": "image/jpeg", "data": base64.StdEncoding.EncodeToString(big)},
		map[string]any{"type": "image", "mimeType": "image/gif", "data": "not*base64!"},
		map[string]any{"type": "text", "text": "second text"},
	)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("media dir exists before the first render: %v", err)
	}
	if err := r.render(store); err != nil {
		t.Fatalf("render: %v", err)
	}

	if len(r.Media) != 3 {
		t.Fatalf("Media = %+v, want 3 files", r.Media)
	}
	wantBytes := [][]byte{pngBytes, audio, pdf}
	wantKind := []string{media.KindImage, media.KindAudio, media.KindFile}
	wantMIME := []string{"image/png", "audio/wav", "application/pdf"}
	wantExt := []string{"png", "wav", "pdf"}
	for i, f := range r.Media {
		if !mediaNameRE.MatchString(f.Name) || !media.ValidName(f.Name) || !strings.HasSuffix(f.Name, "."+wantExt[i]) {
			t.Errorf("file %d name = %q, want <32 hex>.%s", i, f.Name, wantExt[i])
		}
		if f.URL != "/v1/media/"+f.Name || f.Kind != wantKind[i] || f.MimeType != wantMIME[i] || f.Size != int64(len(wantBytes[i])) {
			t.Errorf("file %d = %+v", i, f)
		}
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantBytes[i]) {
			t.Errorf("file %d bytes differ from the decoded input", i)
		}
		if fi, _ := os.Stat(filepath.Join(dir, f.Name)); fi.Mode().Perm() != 0o644 {
			t.Errorf("file %d mode = %v, want 0644", i, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("media dir holds %d entries, want the 3 files (no temporaries, nothing for refused items)", len(entries))
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("media dir mode = %v, want 0700: the data directory is its user's alone", fi.Mode().Perm())
	}

	want := strings.Join([]string{
		"here you go\nsecond text",
		fmt.Sprintf("![image](%s) (image/png, %d B)", r.Media[0].URL, len(pngBytes)),
		fmt.Sprintf("[audio](%s) (audio/wav, %d B)", r.Media[1].URL, len(audio)),
		fmt.Sprintf("[file](%s) (application/pdf, %d B)", r.Media[2].URL, len(pdf)),
		"an embedded note",
		"[text/csv](https://example.com/a.csv)",
		"[link](https://example.com/x%20%281%29)",
		"[image not saved: 4 KB, over the 2 KB limit] (image/jpeg)",
		"[image not saved: its base64 data could not be decoded] (image/gif)",
	}, "\n")
	if diff := cmp.Diff(want, r.Text); diff != "" {
		t.Errorf("markdown (-want +got):\n%s", diff)
	}
	if r.Type != ResultString || r.Wire() != want {
		t.Errorf("Type = %s, Wire = %q; want the markdown as a string result", r.Type, r.Wire())
	}
}

func TestMediaRenderKeepsStructuredContent(t *testing.T) {
	store := media.New(t.TempDir(), "https://host/m", 0)
	r := mediaResult(t, `{ "chart": "sales" }`,
		map[string]any{"type": "image", "mimeType": "image/svg+xml; charset=utf-8", "data": base64.StdEncoding.EncodeToString([]byte("<svg/>"))},
	)
	if r.Type != ResultJSON {
		t.Fatalf("decodeResult type = %s, want json", r.Type)
	}
	if err := r.render(store); err != nil {
		t.Fatal(err)
	}
	if len(r.Media) != 1 || !strings.HasSuffix(r.Media[0].Name, ".svg") || r.Media[0].URL != "https://host/m/"+r.Media[0].Name {
		t.Fatalf("Media = %+v", r.Media)
	}
	// With no text mirror the structured content leads the markdown.
	want := fmt.Sprintf(`{"chart":"sales"}`+"\n![image](%s) (image/svg+xml, 6 B)", r.Media[0].URL)
	if r.Type != ResultString || r.Text != want || string(r.JSON) != `{"chart":"sales"}` {
		t.Errorf("Type %s, Text %q, JSON %s; want string markdown %q and JSON kept", r.Type, r.Text, r.JSON, want)
	}
}

func TestMediaRenderLeavesPlainResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "media")
	store := media.New(dir, "", 0)
	for name, r := range map[string]*Result{
		"text":          mediaResult(t, "", map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "text", "text": "b"}),
		"structured":    mediaResult(t, `{"k":1}`, map[string]any{"type": "text", "text": `{"k":1}`}),
		"text resource": mediaResult(t, "", map[string]any{"type": "resource", "resource": map[string]any{"uri": "n://1", "text": "note"}}),
		"empty":         mediaResult(t, ""),
	} {
		t.Run(name, func(t *testing.T) {
			before := *r
			wire := r.Wire()
			if err := r.render(store); err != nil {
				t.Fatal(err)
			}
			if r.Type != before.Type || r.Text != before.Text || string(r.JSON) != string(before.JSON) || r.Media != nil || r.Wire() != wire {
				t.Errorf("render changed a result without media: %+v → %+v", before, *r)
			}
		})
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("media dir created for results without media: %v", err)
	}
}

func TestMediaRenderWriteFailure(t *testing.T) {
	// The "directory" is a file: nothing can be written under it.
	dir := filepath.Join(t.TempDir(), "media")
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	store := media.New(dir, "", 0)
	r := mediaResult(t, "",
		map[string]any{"type": "text", "text": "t"},
		map[string]any{"type": "audio", "mimeType": "audio/mpeg", "data": base64.StdEncoding.EncodeToString(make([]byte, 3000))},
	)
	if err := r.render(store); err == nil {
		t.Error("render: no error for an item it could not write")
	}
	if want := "t\n[audio not saved: it could not be written] (audio/mpeg, 2 KB)"; r.Text != want || len(r.Media) != 0 || r.Wire() != want {
		t.Errorf("Text = %q, Media = %+v; want %q", r.Text, r.Media, want)
	}
}
