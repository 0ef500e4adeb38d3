package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/media"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// ResultType is how a result reaches a model: as a string or as JSON.
type ResultType string

const (
	ResultString ResultType = "string"
	ResultJSON   ResultType = "json"
)

// ContentBlock is one item of a tool result's content.
type ContentBlock = protocol.ContentBlock

// Result is a tool's answer, with its type kept end to end: JSON when the
// server sent structuredContent (preferred, per the spec), text otherwise.
//
// A result carrying media (image, audio, blob resource or resource link
// blocks) is text: markdown linking each item, saved under the data
// directory and listed in Media. JSON then still holds structuredContent.
//
// Its JSON is the one shape the sidecar and the CLI show: structuredContent
// for JSON, camelCase as MCP spells it. Raw is left out (Content and
// structuredContent hold what it says), and so is Wire, which is computed:
// the sidecar's API adds it beside the result as "wire".
type Result struct {
	Type    ResultType      `json:"type"`
	Text    string          `json:"text,omitempty"`              // the text blocks, joined by newlines; the markdown for a media result
	JSON    json.RawMessage `json:"structuredContent,omitempty"` // structuredContent, when the server sent it
	IsError bool            `json:"isError"`                     // the tool failed; Wire holds its message
	Content []ContentBlock  `json:"content,omitempty"`           // every block as sent
	Raw     json.RawMessage `json:"-"`                           // the whole CallToolResult as received; for another method (Call.Method), its result, and nothing else is set
	Media   []media.File    `json:"media,omitempty"`             // the media items saved, in content order
	Task    *TaskInfo       `json:"task,omitempty"`              // a detached task's handle (CallOptions.Detached); Text says so
	// InputRequired: the server asked for input and CallOptions.PassInput
	// returned its input_required result, in Raw, to the caller.
	InputRequired bool `json:"inputRequired,omitempty"`

	rendered bool // Text is the markdown of the media store (see render)
}

// DecodeResult turns a raw CallToolResult into a Result, on the caller's
// goroutine (never in a server's actor).
func DecodeResult(raw json.RawMessage) (*Result, error) {
	// The usual result has one block: it is allocated with the Result.
	rb := new(struct {
		r   Result
		one [1]ContentBlock
	})
	ctr, err := protocol.DecodeCallToolResultIn(raw, &rb.one)
	if err != nil {
		return nil, fmt.Errorf("malformed tools/call result: %w", err)
	}
	r := &rb.r
	*r = Result{Type: ResultString, IsError: ctr.IsError, Content: ctr.Content, Raw: raw}
	var texts []string
	for _, b := range ctr.Content {
		if b.Type == protocol.ContentText {
			texts = append(texts, b.Text)
		}
	}
	r.Text = strings.Join(texts, "\n")
	if sc := bytes.TrimSpace(ctr.StructuredContent); len(sc) > 0 && !bytes.Equal(sc, []byte("null")) {
		r.Type = ResultJSON
		r.JSON = sc
	}
	return r, nil
}

// Wire is the string an agent hands to its model: compact JSON for a JSON
// result, the markdown for a media result, otherwise the text with a line
// describing each non-text block.
func (r *Result) Wire() string {
	if r.rendered {
		return r.Text
	}
	if r.Type == ResultJSON {
		var b bytes.Buffer
		if json.Compact(&b, r.JSON) == nil {
			return b.String()
		}
		return string(r.JSON)
	}
	var parts []string
	if r.Text != "" {
		parts = append(parts, r.Text)
	}
	for _, b := range r.Content {
		if d := describeBlock(b); d != "" {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, "\n")
}

// describeBlock names a non-text block; its bytes never go to the model.
func describeBlock(b ContentBlock) string {
	switch b.Type {
	case protocol.ContentImage, protocol.ContentAudio:
		return fmt.Sprintf("[%s: %s, %d bytes base64]", b.Type, b.MimeType, len(b.Data))
	case protocol.ContentResourceLink:
		return fmt.Sprintf("[resource link: %s](%s)", firstNonEmpty(b.Title, b.Name, b.MimeType), b.URI)
	case protocol.ContentResource:
		if b.Resource == nil {
			return ""
		}
		if b.Resource.Text != "" {
			return b.Resource.Text
		}
		return fmt.Sprintf("[resource %s: %s]", b.Resource.URI, b.Resource.MimeType)
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// render saves r's inline media to s and rewrites r as markdown when r has
// at least one image, audio, blob resource or resource link block; any
// other result, or a nil s, is left as it is. The markdown is
// media.Store.Render's: r.Type becomes ResultString, r.JSON is kept, and
// r.Media lists the files written.
//
// The error, errors.Join of the items that could not be written, is for
// the log: r is rendered even when it is not nil. render is safe for
// concurrent use.
func (r *Result) render(s *media.Store) error {
	if s == nil || r == nil || !media.HasMedia(r.Content) {
		return nil
	}
	text, files, err := s.Render(r.Content, r.JSON)
	r.Media = append(r.Media, files...)
	r.Text = text
	r.Type = ResultString
	r.rendered = true
	return err
}
