package media

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
	KindImage = "image"
	KindAudio = "audio"
	KindFile  = "file" // an embedded resource's blob
)

// Defaults of a Store.
const (
	DefaultURLBase  = "/v1/media/"
	DefaultMaxBytes = 32 << 20 // per item, decoded
)

// File is one inline media item of a tool result, saved to the store's
// directory and served by URL.
type File struct {
	Kind     string `json:"kind"`     // KindImage, KindAudio or KindFile
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

// ValidName reports whether name has the form a Store
// generates: 32 lowercase hex digits, a dot and a known extension. A GET
// handler serving the media directory refuses any other name, which rules
// out traversal ("..", "/", "\") and the store's temporary files.
func ValidName(name string) bool {
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

// ContentType is the Content-Type to serve a stored media file with,
// and false when name is not a valid media name (see ValidName).
//
// SVG is served as image/svg+xml, which a browser runs scripts in when it
// opens the file directly: a handler should send it with
// "Content-Security-Policy: sandbox" and "X-Content-Type-Options: nosniff".
func ContentType(name string) (string, bool) {
	if !ValidName(name) {
		return "", false
	}
	_, ext, _ := strings.Cut(name, ".")
	return mediaContentType[ext], true
}

// Store saves the inline media of tool results to a directory and renders
// those results as markdown that links to them. It holds no mutable state
// and is safe for concurrent use.
type Store struct {
	dir      string
	urlBase  string
	maxBytes int64
}

// New returns a store writing to dir (created on first use), linking files
// as urlBase+name (default DefaultURLBase) and refusing items over maxBytes
// decoded (default DefaultMaxBytes).
func New(dir, urlBase string, maxBytes int64) *Store {
	if urlBase == "" {
		urlBase = DefaultURLBase
	}
	if !strings.HasSuffix(urlBase, "/") {
		urlBase += "/"
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Store{dir: dir, urlBase: urlBase, maxBytes: maxBytes}
}

// HasMedia reports whether a result's content holds a block Render turns
// into a file or a link: an image, audio, a blob resource or a resource
// link.
func HasMedia(content []protocol.ContentBlock) bool {
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

// Render saves the inline media of a result's content and returns the
// result as markdown: the text blocks (or, when there are none, the compact
// structured content), then one line per media block in content order:
// "![image](URL) (image/png, 412 KB)", "[audio](URL) (…)", "[file](URL) (…)"
// or "[mime](uri)" for a link. An item that is too large, is not valid
// base64 or cannot be written gets a line that says so instead; the rest of
// the result is still rendered. files lists the files written, in content
// order.
//
// The error, errors.Join of the items that could not be written, is for
// the log: markdown is complete even when it is not nil. Render writes only
// new files under generated names. Callers use it for content that
// HasMedia reports on; other content is rendered the same way, with no
// media lines.
func (m *Store) Render(content []protocol.ContentBlock, structured json.RawMessage) (markdown string, files []File, err error) {
	var texts, lines []string
	var errs []error
	for _, b := range content {
		switch b.Type {
		case protocol.ContentText:
			texts = append(texts, b.Text)
		case protocol.ContentImage:
			lines = append(lines, m.saveLine(KindImage, b.Data, b.MimeType, &files, &errs))
		case protocol.ContentAudio:
			lines = append(lines, m.saveLine(KindAudio, b.Data, b.MimeType, &files, &errs))
		case protocol.ContentResource:
			switch {
			case b.Resource == nil:
			case b.Resource.Blob != "":
				lines = append(lines, m.saveLine(KindFile, b.Resource.Blob, b.Resource.MimeType, &files, &errs))
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
	if len(texts) == 0 && len(structured) > 0 {
		// No text mirror: the structured content is what the model would
		// have read, so it stays in front of the media lines.
		var c bytes.Buffer
		if json.Compact(&c, structured) == nil {
			head = c.String()
		} else {
			head = string(structured)
		}
	}
	if head != "" {
		lines = append([]string{head}, lines...)
	}
	return strings.Join(lines, "\n"), files, errors.Join(errs...)
}

// saveLine decodes and stores one inline item, appending it to files, and
// returns its markdown line.
func (m *Store) saveLine(kind, data, mimeType string, files *[]File, errs *[]error) string {
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
	f := File{Kind: kind, Name: name, URL: m.urlBase + name, MimeType: mt, Size: int64(len(b))}
	*files = append(*files, f)
	meta := fmt.Sprintf("(%s, %s)", label, formatSize(f.Size))
	if kind == KindImage {
		return fmt.Sprintf("![image](%s) %s", f.URL, meta)
	}
	return fmt.Sprintf("[%s](%s) %s", kind, f.URL, meta)
}

// write stores b as dir/name atomically: readers see the whole file or
// none.
func (m *Store) write(name string, b []byte) error {
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
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
