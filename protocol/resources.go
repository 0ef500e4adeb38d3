package protocol

import "encoding/json"

// CursorParams are the params of a paginated list request: resources/list,
// resources/templates/list, prompts/list, tasks/list. The cursor is opaque
// and must not outlive the session.
type CursorParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// Resource is one entry of a resources/list result. Size is the raw size in
// bytes, before any base64.
type Resource struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate is one entry of a resources/templates/list result.
// URITemplate is an RFC 6570 template.
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Icons       []Icon          `json:"icons,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ListResourcesResult is one page of resources/list; an empty NextCursor
// ends it.
type ListResourcesResult struct {
	Resources  []Resource      `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Resources as [], since resources is required.
func (r ListResourcesResult) MarshalJSON() ([]byte, error) {
	type wire ListResourcesResult
	if r.Resources == nil {
		r.Resources = []Resource{}
	}
	return json.Marshal(wire(r))
}

// ListResourceTemplatesResult is one page of resources/templates/list; an
// empty NextCursor ends it.
type ListResourceTemplatesResult struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string             `json:"nextCursor,omitempty"`
	Meta              json.RawMessage    `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil ResourceTemplates as [], since it is required.
func (r ListResourceTemplatesResult) MarshalJSON() ([]byte, error) {
	type wire ListResourceTemplatesResult
	if r.ResourceTemplates == nil {
		r.ResourceTemplates = []ResourceTemplate{}
	}
	return json.Marshal(wire(r))
}

// ReadResourceParams are the params of resources/read.
type ReadResourceParams struct {
	URI  string          `json:"uri"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ReadResourceResult is the result of resources/read. It may hold several
// contents, sub-resources included.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     json.RawMessage    `json:"_meta,omitempty"`
}

// MarshalJSON writes a nil Contents as [], since contents is required.
func (r ReadResourceResult) MarshalJSON() ([]byte, error) {
	type wire ReadResourceResult
	if r.Contents == nil {
		r.Contents = []ResourceContents{}
	}
	return json.Marshal(wire(r))
}

// SubscribeParams are the params of resources/subscribe and
// resources/unsubscribe, allowed only if the server declared
// resources.subscribe.
type SubscribeParams struct {
	URI string `json:"uri"`
}

// ResourceUpdatedParams are the params of notifications/resources/updated.
// URI may be a sub-resource of the one subscribed to.
type ResourceUpdatedParams struct {
	URI string `json:"uri"`
}

// Completion reference types.
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	Context  *CompleteContext  `json:"context,omitempty"`
}

// CompleteReference names what is completed: a prompt (Type RefPrompt,
// Name) or a resource template (Type RefResource, URI).
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext holds arguments already resolved.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion      `json:"completion"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// Completion holds at most 100 suggested values.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int64   `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// MarshalJSON writes a nil Values as [], since values is required.
func (c Completion) MarshalJSON() ([]byte, error) {
	type wire Completion
	if c.Values == nil {
		c.Values = []string{}
	}
	return json.Marshal(wire(c))
}
