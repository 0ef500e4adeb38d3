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
