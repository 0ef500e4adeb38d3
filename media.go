package mcpvisor

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// Media kinds.
const (
	MediaKindImage = "image"
	MediaKindAudio = "audio"
	MediaKindFile  = "file" // an embedded resource's blob
)

// Defaults of a media store.
const (
	DefaultMediaURLBase  = "/v1/media/"
	DefaultMediaMaxBytes = 32 << 20 // per item, decoded
)

// MediaFile is one inline media item of a tool result, saved to the data
// directory and served by URL. The bytes never reach the model: it reads
// the URL in the result's markdown.
type MediaFile struct {
	Kind     string `json:"kind"`     // MediaKindImage, MediaKindAudio or MediaKindFile
	Name     string `json:"name"`     // <32 hex>.<ext>, generated: never a name the server chose
	URL      string `json:"url"`      // urlBase + Name
	MimeType string `json:"mimeType"` // the server's, lowercase without parameters; "application/octet-stream" when absent
	Size     int64  `json:"size"`     // decoded bytes
}

// mediaExt maps a MIME type (lowercase, without parameters) to the file
// extension it is stored under; anything else is "bin".
var mediaExt = map[string]string{
	"image/png":        "png",
	"image/jpeg":       "jpg",
	"image/jpg":        "jpg",
	"image/gif":        "gif",
	"image/webp":       "webp",
	"image/svg+xml":    "svg",
	"audio/wav":        "wav",
	"audio/x-wav":      "wav",
	"audio/wave":       "wav",
	"audio/mpeg":       "mp3",
	"audio/mp3":        "mp3",
	"audio/ogg":        "ogg",
	"audio/webm":       "weba",
	"application/pdf":  "pdf",
	"text/plain":       "txt",
	"application/json": "json",
}

// mediaContentType is the Content-Type each stored extension is served with.
var mediaContentType = map[string]string{
	"png":  "image/png",
	"jpg":  "image/jpeg",
	"gif":  "image/gif",
	"webp": "image/webp",
	"svg":  "image/svg+xml",
	"wav":  "audio/wav",
	"mp3":  "audio/mpeg",
	"ogg":  "audio/ogg",
	"weba": "audio/webm",
	"pdf":  "application/pdf",
	"txt":  "text/plain; charset=utf-8",
	"json": "application/json",
	"bin":  "application/octet-stream",
}

// mediaIDLen is the length of a stored name's id: 16 random bytes in hex.
const mediaIDLen = 32

// ValidMediaName reports whether name has the form the media store
// generates: 32 lowercase hex digits, a dot and a known extension. A GET
// handler serving the media directory refuses any other name, which rules
// out traversal ("..", "/", "\") and the store's temporary files.
func ValidMediaName(name string) bool {
	id, ext, ok := strings.Cut(name, ".")
	if !ok || len(id) != mediaIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	_, known := mediaContentType[ext]
	return known
}

// MediaContentType is the Content-Type to serve a stored media file with,
// and false when name is not a valid media name (see ValidMediaName).
//
// SVG is served as image/svg+xml, which a browser runs scripts in when it
// opens the file directly: a handler should send it with
// "Content-Security-Policy: sandbox" and "X-Content-Type-Options: nosniff".
func MediaContentType(name string) (string, bool) {
	if !ValidMediaName(name) {
		return "", false
	}
	_, ext, _ := strings.Cut(name, ".")
	return mediaContentType[ext], true
}

// mediaStore saves the inline media of tool results to a directory and
// rewrites those results as markdown that links to them. It holds no
// mutable state.
type mediaStore struct {
	dir      string
	urlBase  string
	maxBytes int64
}

// newMediaStore returns a store writing to dir (created on first use),
// linking files as urlBase+name (default DefaultMediaURLBase) and refusing
// items over maxBytes decoded (default DefaultMediaMaxBytes).
func newMediaStore(dir, urlBase string, maxBytes int64) *mediaStore {
	if urlBase == "" {
		urlBase = DefaultMediaURLBase
	}
	if !strings.HasSuffix(urlBase, "/") {
		urlBase += "/"
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMediaMaxBytes
	}
	return &mediaStore{dir: dir, urlBase: urlBase, maxBytes: maxBytes}
}

// hasMedia reports whether a result carries a block render turns into a
// file or a link.
func hasMedia(content []ContentBlock) bool {
	for _, b := range content {
		switch b.Type {
		case protocol.ContentImage, protocol.ContentAudio, protocol.ContentResourceLink:
			return true
		case protocol.ContentResource:
			if b.Resource != nil && b.Resource.Blob != "" {
				return true
			}
		}
	}
	return false
}

// render saves r's inline media and rewrites r as markdown when r has at
// least one image, audio, blob resource or resource link block; any other
// result is left as it is.
//
// The markdown is the text blocks (or, when there are none, the compact
// structuredContent), then one line per media block in content order:
// "![image](URL) (image/png, 412 KB)", "[audio](URL) (…)", "[file](URL) (…)"
// or "[mime](uri)" for a link. An item that is too large, is not valid
// base64 or cannot be written gets a line that says so instead; the rest of
// the result is still rendered. r.Type becomes ResultString, r.JSON is kept,
// and r.Media lists the files written.
//
// The error, errors.Join of the items that could not be written, is for
// the log: r is rendered even when it is not nil. render writes only new
// files under generated names and is safe for concurrent use.
func (m *mediaStore) render(r *Result) error {
	if r == nil || !hasMedia(r.Content) {
		return nil
	}
	var texts, lines []string
	var errs []error
	for _, b := range r.Content {
		switch b.Type {
		case protocol.ContentText:
			texts = append(texts, b.Text)
		case protocol.ContentImage:
			lines = append(lines, m.saveLine(MediaKindImage, b.Data, b.MimeType, r, &errs))
		case protocol.ContentAudio:
			lines = append(lines, m.saveLine(MediaKindAudio, b.Data, b.MimeType, r, &errs))
		case protocol.ContentResource:
			switch {
			case b.Resource == nil:
			case b.Resource.Blob != "":
				lines = append(lines, m.saveLine(MediaKindFile, b.Resource.Blob, b.Resource.MimeType, r, &errs))
			case b.Resource.Text != "":
				lines = append(lines, b.Resource.Text)
			}
		case protocol.ContentResourceLink:
			label := markdownLabel(baseMIME(b.MimeType))
			if label == "" {
				label = "link"
			}
			lines = append(lines, fmt.Sprintf("[%s](%s)", label, markdownURL(b.URI)))
		}
	}
	head := strings.Join(texts, "\n")
	if len(texts) == 0 && len(r.JSON) > 0 {
		// No text mirror: the structured content is what the model would
		// have read, so it stays in front of the media lines.
		var c bytes.Buffer
		if json.Compact(&c, r.JSON) == nil {
			head = c.String()
		} else {
			head = string(r.JSON)
		}
	}
	if head != "" {
		lines = append([]string{head}, lines...)
	}
	r.Text = strings.Join(lines, "\n")
	r.Type = ResultString
	r.rendered = true
	return errors.Join(errs...)
}

// saveLine decodes and stores one inline item, appending it to r.Media, and
// returns its markdown line.
func (m *mediaStore) saveLine(kind, data, mimeType string, r *Result, errs *[]error) string {
	mt := baseMIME(mimeType)
	if mt == "" {
		mt = "application/octet-stream"
	}
	label := markdownLabel(mt)
	enc, s := base64Variant(data)
	if size := int64(enc.DecodedLen(len(s))); size > m.maxBytes {
		return fmt.Sprintf("[%s not saved: %s, over the %s limit] (%s)", kind, formatSize(size), formatSize(m.maxBytes), label)
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return fmt.Sprintf("[%s not saved: its base64 data could not be decoded] (%s)", kind, label)
	}
	ext := mediaExt[mt]
	if ext == "" {
		ext = "bin"
	}
	name := newMediaID() + "." + ext
	if err := m.write(name, b); err != nil {
		*errs = append(*errs, fmt.Errorf("media %s (%s): %w", kind, mt, err))
		return fmt.Sprintf("[%s not saved: it could not be written] (%s, %s)", kind, label, formatSize(int64(len(b))))
	}
	f := MediaFile{Kind: kind, Name: name, URL: m.urlBase + name, MimeType: mt, Size: int64(len(b))}
	r.Media = append(r.Media, f)
	meta := fmt.Sprintf("(%s, %s)", label, formatSize(f.Size))
	if kind == MediaKindImage {
		return fmt.Sprintf("![image](%s) %s", f.URL, meta)
	}
	return fmt.Sprintf("[%s](%s) %s", kind, f.URL, meta)
}

// write stores b as dir/name atomically: readers see the whole file or
// none.
func (m *mediaStore) write(name string, b []byte) error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	// The temporary name is not a valid media name, so it is never served.
	tmp, err := os.CreateTemp(m.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(m.dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func newMediaID() string {
	var id [mediaIDLen / 2]byte
	rand.Read(id[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(id[:])
}

// base64Variant strips whitespace and padding from s and picks the
// alphabet it uses: servers send standard base64, unpadded or URL-safe, and
// some wrap lines.
func base64Variant(s string) (*base64.Encoding, string) {
	if strings.ContainsAny(s, " \t\r\n") {
		s = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, s)
	}
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding, s
	}
	return base64.RawStdEncoding, s
}

// baseMIME is a MIME type without parameters, lowercase; "" when absent.
func baseMIME(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(s); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(s, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// markdownLabel keeps the characters of a MIME type a link label can hold
// without breaking out of it.
func markdownLabel(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return r
		case strings.ContainsRune("/+-.;=_ ", r):
			return r
		}
		return -1
	}, s)
}

// markdownURL escapes what would end a markdown link target early: a
// server's URI must not inject markup into the model's text.
func markdownURL(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '<' || r == '>' || r == ' ' || r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "%%%02X", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// formatSize writes n bytes for a reader: "512 B", "412 KB", "3.4 MB".
func formatSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
