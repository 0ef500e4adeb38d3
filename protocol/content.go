package protocol

import "encoding/json"

// ContentBlock types.
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// ContentBlock is one block of a tool result (or prompt message). It is the
// union of the schema's block types; Type says which members apply:
//
//   - text: Text
//   - image, audio: Data (base64) and MimeType
//   - resource_link: URI, Name, and optionally Title, Description, MimeType,
//     Size, Icons
//   - resource: Resource, an embedded resource
//
// Any block may carry Annotations (audience, priority, lastModified) and Meta.
type ContentBlock struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        string            `json:"data,omitempty"`
	MimeType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"`
	Annotations json.RawMessage   `json:"annotations,omitempty"`
	Meta        json.RawMessage   `json:"_meta,omitempty"`
}

// MarshalJSON writes the members that Type requires even when empty, so that
// a text block with no text is still {"type":"text","text":""}.
func (c ContentBlock) MarshalJSON() ([]byte, error) {
	w := contentWire{
		Type:        c.Type,
		Text:        optional(c.Text, c.Type == ContentText),
		Data:        optional(c.Data, c.Type == ContentImage || c.Type == ContentAudio),
		MimeType:    optional(c.MimeType, c.Type == ContentImage || c.Type == ContentAudio),
		URI:         optional(c.URI, c.Type == ContentResourceLink),
		Name:        optional(c.Name, c.Type == ContentResourceLink),
		Title:       c.Title,
		Description: c.Description,
		Size:        c.Size,
		Resource:    c.Resource,
		Icons:       c.Icons,
		Annotations: c.Annotations,
		Meta:        c.Meta,
	}
	return json.Marshal(w)
}

type contentWire struct {
	Type        string            `json:"type"`
	Text        *string           `json:"text,omitempty"`
	Data        *string           `json:"data,omitempty"`
	MimeType    *string           `json:"mimeType,omitempty"`
	URI         *string           `json:"uri,omitempty"`
	Name        *string           `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"`
	Annotations json.RawMessage   `json:"annotations,omitempty"`
	Meta        json.RawMessage   `json:"_meta,omitempty"`
}

// optional returns &s when s is set or required, nil otherwise.
func optional(s string, required bool) *string {
	if s == "" && !required {
		return nil
	}
	return &s
}

// ResourceContents is an embedded resource: text contents (Text) or binary
// contents (Blob, base64).
type ResourceContents struct {
	URI      string          `json:"uri"`
	MimeType string          `json:"mimeType,omitempty"`
	Text     string          `json:"text,omitempty"`
	Blob     string          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes text contents' text even when empty: contents without
// a blob are text contents, which require it.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	w := struct {
		URI      string          `json:"uri"`
		MimeType string          `json:"mimeType,omitempty"`
		Text     *string         `json:"text,omitempty"`
		Blob     string          `json:"blob,omitempty"`
		Meta     json.RawMessage `json:"_meta,omitempty"`
	}{URI: r.URI, MimeType: r.MimeType, Text: optional(r.Text, r.Blob == ""), Blob: r.Blob, Meta: r.Meta}
	return json.Marshal(w)
}
