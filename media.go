package mcpvisor

import "github.com/mcpvisor/mcpvisor/internal/media"

// Media kinds: "image", "audio", and "file" (an embedded resource's blob).
const (
	MediaKindImage = media.KindImage
	MediaKindAudio = media.KindAudio
	MediaKindFile  = media.KindFile
)

// Defaults of a media store: files are linked under "/v1/media/", and an
// item over 32 MiB decoded is not written.
const (
	DefaultMediaURLBase  = media.DefaultURLBase
	DefaultMediaMaxBytes = media.DefaultMaxBytes
)

// MediaFile is one inline media item of a tool result, saved to the data
// directory and served by URL. The bytes never reach the model: it reads
// the URL in the result's markdown.
type MediaFile = media.File

// ValidMediaName reports whether name has the form the media store
// generates: 32 lowercase hex digits, a dot and a known extension. A GET
// handler serving the media directory refuses any other name, which rules
// out traversal ("..", "/", "\") and the store's temporary files.
func ValidMediaName(name string) bool { return media.ValidName(name) }

// MediaContentType is the Content-Type to serve a stored media file with,
// and false when name is not a valid media name (see ValidMediaName).
//
// SVG is served as image/svg+xml, which a browser runs scripts in when it
// opens the file directly: a handler should send it with
// "Content-Security-Policy: sandbox" and "X-Content-Type-Options: nosniff".
func MediaContentType(name string) (string, bool) { return media.ContentType(name) }

// mediaStore renders the results of a host's tool calls through the media
// store of its data directory.
type mediaStore struct{ store *media.Store }

// newMediaStore returns a store writing to dir (created on first use),
// linking files as urlBase+name (default DefaultMediaURLBase) and refusing
// items over maxBytes decoded (default DefaultMediaMaxBytes).
func newMediaStore(dir, urlBase string, maxBytes int64) *mediaStore {
	return &mediaStore{store: media.New(dir, urlBase, maxBytes)}
}

// render saves r's inline media and rewrites r as markdown when r has at
// least one image, audio, blob resource or resource link block; any other
// result is left as it is. The markdown is media.Store.Render's: r.Type
// becomes ResultString, r.JSON is kept, and r.Media lists the files
// written.
//
// The error, errors.Join of the items that could not be written, is for
// the log: r is rendered even when it is not nil. render is safe for
// concurrent use.
func (m *mediaStore) render(r *Result) error {
	if r == nil || !media.HasMedia(r.Content) {
		return nil
	}
	text, files, err := m.store.Render(r.Content, r.JSON)
	r.Media = append(r.Media, files...)
	r.Text = text
	r.Type = ResultString
	r.rendered = true
	return err
}
