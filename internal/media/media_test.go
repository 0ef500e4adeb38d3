package media

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/protocol"
)

func TestMediaBase64Variants(t *testing.T) {
	data := []byte{0xfb, 0xef, 0xff, 0x00, 0x10}
	for name, s := range map[string]string{
		"std":          base64.StdEncoding.EncodeToString(data),
		"std unpadded": base64.RawStdEncoding.EncodeToString(data),
		"url":          base64.URLEncoding.EncodeToString(data),
		"url unpadded": base64.RawURLEncoding.EncodeToString(data),
		"wrapped":      wrap(base64.StdEncoding.EncodeToString(data)),
	} {
		t.Run(name, func(t *testing.T) {
			enc, clean := base64Variant(s)
			got, err := enc.DecodeString(clean)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("decode %q = %x, %v; want %x", s, got, err, data)
			}
		})
	}
}

// wrap breaks s into lines of 4, as MIME encoders do with longer lines.
func wrap(s string) string {
	var b strings.Builder
	for len(s) > 4 {
		b.WriteString(s[:4] + "\r\n")
		s = s[4:]
	}
	return b.String() + s + "\n"
}

func TestMediaExtensions(t *testing.T) {
	for mt, ext := range map[string]string{
		"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "image/svg+xml": "svg",
		"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/ogg": "ogg", "audio/webm": "weba",
		"application/pdf": "pdf", "text/plain": "txt", "application/json": "json", "video/mp4": "bin", "": "bin",
		"IMAGE/PNG; q=1": "png",
	} {
		store := New(t.TempDir(), "", 0)
		_, files, err := store.Render([]protocol.ContentBlock{{Type: protocol.ContentImage, MimeType: mt, Data: "AAAA"}}, nil)
		if err != nil || len(files) != 1 {
			t.Fatalf("%q: Render: %v, files %+v", mt, err, files)
		}
		if !strings.HasSuffix(files[0].Name, "."+ext) || !ValidName(files[0].Name) {
			t.Errorf("%q stored as %q, want .%s", mt, files[0].Name, ext)
		}
		if ct, ok := ContentType(files[0].Name); !ok || ct == "" {
			t.Errorf("ContentType(%q) = %q, %v", files[0].Name, ct, ok)
		}
	}
}

func TestValidName(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 2)
	for name, want := range map[string]bool{
		id + ".png":                  true,
		id + ".bin":                  true,
		id + ".weba":                 true,
		id + ".exe":                  false,
		id + ".png.png":              false,
		strings.ToUpper(id) + ".png": false,
		id[1:] + ".png":              false,
		id + "0.png":                 false,
		id:                           false,
		"../" + id[3:] + ".png":      false,
		"..%2f" + id + ".png":        false,
		".tmp-123":                   false,
		id[:31] + "/.png":            false,
		"":                           false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestContentType(t *testing.T) {
	id := strings.Repeat("ab", 16)
	for name, want := range map[string]string{
		id + ".png": "image/png", id + ".jpg": "image/jpeg", id + ".wav": "audio/wav", id + ".weba": "audio/webm",
		id + ".txt": "text/plain; charset=utf-8", id + ".bin": "application/octet-stream",
	} {
		if got, ok := ContentType(name); !ok || got != want {
			t.Errorf("ContentType(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if ct, ok := ContentType("../etc/passwd"); ok {
		t.Errorf("ContentType(traversal) = %q, true", ct)
	}
}

func TestMediaFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KB", 412*1024 + 500: "412 KB", 1<<20 - 1: "1023 KB",
		1 << 20: "1.0 MB", 3*(1<<20) + 400*1024: "3.4 MB", 32 << 20: "32.0 MB",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "media")
	store := New(dir, "https://host/m", 3000)
	png := []byte("\x89PNG fake")
	content := []protocol.ContentBlock{
		{Type: protocol.ContentText, Text: "here"},
		{Type: protocol.ContentImage, MimeType: "image/png", Data: base64.StdEncoding.EncodeToString(png)},
		{Type: protocol.ContentResourceLink, URI: "https://example.com/x (1)", MimeType: "text/csv"},
		{Type: protocol.ContentAudio, MimeType: "audio/wav", Data: base64.StdEncoding.EncodeToString(make([]byte, 4000))},
	}
	markdown, files, err := store.Render(content, json.RawMessage(`{"ignored": "with a text block"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Kind != KindImage || files[0].MimeType != "image/png" || files[0].Size != int64(len(png)) ||
		files[0].URL != "https://host/m/"+files[0].Name {
		t.Fatalf("files = %+v", files)
	}
	if got, err := os.ReadFile(filepath.Join(dir, files[0].Name)); err != nil || !bytes.Equal(got, png) {
		t.Errorf("stored file = %q, %v; want the decoded image", got, err)
	}
	want := "here\n" +
		"![image](https://host/m/" + files[0].Name + ") (image/png, 9 B)\n" +
		"[text/csv](https://example.com/x%20%281%29)\n" +
		"[audio not saved: 3 KB, over the 2 KB limit] (audio/wav)"
	if markdown != want {
		t.Errorf("markdown = %q, want %q", markdown, want)
	}

	markdown, files, err = store.Render([]protocol.ContentBlock{{Type: protocol.ContentResourceLink, URI: "u"}}, json.RawMessage(`{ "k": 1 }`))
	if err != nil || files != nil || markdown != "{\"k\":1}\n[link](u)" {
		t.Errorf("structured content without text: %q, %+v, %v", markdown, files, err)
	}
}

func TestHasMedia(t *testing.T) {
	for _, tt := range []struct {
		b    protocol.ContentBlock
		want bool
	}{
		{protocol.ContentBlock{Type: protocol.ContentText, Text: "x"}, false},
		{protocol.ContentBlock{Type: protocol.ContentImage}, true},
		{protocol.ContentBlock{Type: protocol.ContentAudio}, true},
		{protocol.ContentBlock{Type: protocol.ContentResourceLink}, true},
		{protocol.ContentBlock{Type: protocol.ContentResource}, false},
		{protocol.ContentBlock{Type: protocol.ContentResource, Resource: &protocol.ResourceContents{Text: "t"}}, false},
		{protocol.ContentBlock{Type: protocol.ContentResource, Resource: &protocol.ResourceContents{Blob: "AAAA"}}, true},
	} {
		if got := HasMedia([]protocol.ContentBlock{tt.b}); got != tt.want {
			t.Errorf("HasMedia(%+v) = %v, want %v", tt.b, got, tt.want)
		}
	}
}
