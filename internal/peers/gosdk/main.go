// Command gosdkpeer is an MCP server built on the official Go SDK,
// github.com/modelcontextprotocol/go-sdk, that mcpvisor's tests run as a
// third-party peer of both protocol eras: 2026-07-28 (server/discover,
// per-request _meta, multi round-trip requests, subscriptions/listen) and,
// with -era dual, the initialize-handshake versions up to 2025-11-25.
//
// It is test-only code in a module of its own; it does not import mcpvisor.
// See README.md for its flags and tools.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const modern = "2026-07-28"

func main() {
	transport := flag.String("transport", "stdio", "stdio or http (Streamable HTTP)")
	listen := flag.String("listen", "127.0.0.1:0", "with -transport http: the address to listen on")
	era := flag.String("era", "modern", "modern (2026-07-28 only) or dual (every version the SDK supports)")
	ttlMs := flag.Int("ttl-ms", 0, "ttlMs on list results, with cacheScope private (0: the SDK's defaults)")
	stateful := flag.Bool("stateful", false, "with -transport http: keep sessions (Mcp-Session-Id); the SDK then serves only the legacy versions over HTTP")
	sdkInitialize := flag.Bool("sdk-initialize", false, "with -era modern: let the SDK answer initialize as it does by itself (protocolVersion 2025-11-25, then a legacy session) instead of refusing it")
	app := flag.String("app", "", "serve an MCP App whose interface reads `TEXT`: the resource "+appURI+", the template "+appTemplate+", the resource peer://app/TEXT, the tool show (its _meta names "+appURI+") and the tool touch (resources/updated for "+appURI+"); resources/subscribe is declared")
	flag.Parse()

	if flag.NArg() > 0 {
		fail("unexpected arguments: %q", flag.Args())
	}
	var versions []string
	switch *era {
	case "modern":
		versions = []string{modern}
	case "dual":
	default:
		fail("-era must be modern or dual, not %q", *era)
	}
	if *transport != "stdio" && *transport != "http" {
		fail("-transport must be stdio or http, not %q", *transport)
	}
	if *ttlMs < 0 {
		fail("-ttl-ms must not be negative")
	}
	fmt.Fprintf(os.Stderr, "gosdkpeer %s %s pid %d\n", *era, *transport, os.Getpid())

	key := make([]byte, 32) // signs requestState; per process
	if _, err := rand.Read(key); err != nil {
		fail("%v", err)
	}
	server := newServer(versions, *ttlMs, key, *app)
	if *era == "modern" && !*sdkInitialize {
		server.AddReceivingMiddleware(refuseInitialize)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if *transport == "stdio" {
		if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			fail("stdio: %v", err)
		}
		return
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail("%v", err)
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			// The SDK serves 2026-07-28 over HTTP only when stateless.
			Stateless: !*stateful,
			// A modern client cancels a request by closing its stream.
			PropagateRequestCancellation: true,
			Logger:                       logger(),
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())

	select {
	case err := <-errc:
		fail("http: %v", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(shutdown) != nil {
		srv.Close() // streams still open (hang, subscriptions/listen)
	}
}

// refuseInitialize makes a modern-only server refuse the legacy handshake.
// With SupportedProtocolVersions ["2026-07-28"] go-sdk v1.8.0 still answers
// initialize, with protocolVersion 2025-11-25, and then serves the session
// as a legacy one; the 2026-07-28 spec has a modern-only server reject it
// with a JSON-RPC error that SHOULD name the versions it supports.
func refuseInitialize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "initialize" {
			return next(ctx, method, req)
		}
		requested := ""
		if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
			requested = p.ProtocolVersion
		}
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: []string{modern}, Requested: requested})
		return nil, &jsonrpc.Error{
			Code:    mcp.CodeUnsupportedProtocolVersion,
			Message: "initialize is not supported: this server speaks only protocol version " + modern + " (send server/discover)",
			Data:    data,
		}
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gosdkpeer: "+format+"\n", args...)
	os.Exit(2)
}

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// The MCP App of -app. Every gosdkpeer serves it under the same URI, as
// the ext-apps examples each do under theirs.
const (
	appURI      = "ui://app/mcp-app.html"
	appTemplate = "ui://app/pages/{page}"
	appMIME     = "text/html;profile=mcp-app"
)

// newServer builds the server with every tool, the resource and the
// prompt, and the MCP App when app is not empty.
func newServer(versions []string, ttlMs int, key []byte, app string) *mcp.Server {
	opts := &mcp.ServerOptions{
		Logger:                    logger(),
		SupportedProtocolVersions: versions,
	}
	if app != "" {
		opts.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
		opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	if ttlMs > 0 {
		opts.SetCacheable = func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			switch req.(type) {
			case *mcp.ListToolsRequest, *mcp.ListPromptsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest:
				c.TTLMs = ttlMs
				c.CacheScope = "private"
			}
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdkpeer", Version: "1.8.0"}, opts)
	p := &peer{server: s, key: key}

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns text."}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."}, add)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks for a name, then a colour (two elicitation rounds)."}, p.ask)
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Asks the client's model for a text."}, sample)
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Lists the client's roots."}, roots)
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleeps ms milliseconds, then returns done."}, slow)
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Blocks until the request is cancelled."}, hang)
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Registers an echo tool with the given name."}, p.addTool)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "region",
		Description: "Returns the Mcp-Param-Region header as the server saw it.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"region": {"type": "string", "x-mcp-header": "Region"},
				"query": {"type": "string"}
			}
		}`),
	}, region)

	s.AddResource(&mcp.Resource{URI: "peer://static", Name: "static", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: "static"},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}},
			}}, nil
		})
	// topic asks for a topic (input_required; a legacy client is asked
	// with elicitation/create by the SDK), then returns a message on it.
	s.AddPrompt(&mcp.Prompt{Name: "topic", Description: "Asks for a topic, then writes about it."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if topic, ok, err := elicited(req.Params.InputResponses, "topic"); err != nil {
				return nil, err
			} else if ok {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
					{Role: "user", Content: &mcp.TextContent{Text: "Write about " + topic + "."}},
				}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{
				"topic": &mcp.ElicitParams{Mode: "form", Message: "Which topic?", RequestedSchema: stringSchema("topic")},
			}}, nil
		})
	if app != "" {
		addApp(s, app)
	}
	return s
}

// addApp adds the MCP App of -app: its interface, a template of pages, a
// resource of another scheme named after text, and the tools show and
// touch.
func addApp(s *mcp.Server, view string) {
	s.AddResource(&mcp.Resource{URI: appURI, Name: "app", MIMEType: appMIME},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: appMIME, Text: view},
			}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: appTemplate, Name: "page", MIMEType: appMIME},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			page := strings.TrimPrefix(req.Params.URI, "ui://app/pages/")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: appMIME, Text: view + " page " + page},
			}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "peer://app/" + view, Name: "app-" + view, MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: view},
			}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{
		Name: "show", Description: "Shows the app.",
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": appURI}, "ui/resourceUri": appURI},
	}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(view), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Sends notifications/resources/updated for the app's interface."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: appURI}); err != nil {
				return nil, nil, err
			}
			return text("touched"), nil, nil
		})
}

type peer struct {
	server *mcp.Server
	key    []byte // HMAC-SHA256 key for requestState
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in struct {
	Text string `json:"text"`
}) (*mcp.CallToolResult, any, error) {
	return text(in.Text), nil, nil
}

type sum struct {
	Sum int64 `json:"sum"`
}

func add(_ context.Context, _ *mcp.CallToolRequest, in struct {
	A int64 `json:"a"`
	B int64 `json:"b"`
}) (*mcp.CallToolResult, sum, error) {
	n := in.A + in.B
	return text(fmt.Sprintf("%d+%d=%d", in.A, in.B, n)), sum{n}, nil
}

func slow(ctx context.Context, _ *mcp.CallToolRequest, in struct {
	MS int64 `json:"ms"`
}) (*mcp.CallToolResult, any, error) {
	t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return text("done"), nil, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func hang(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func (p *peer) addTool(_ context.Context, _ *mcp.CallToolRequest, in struct {
	Name string `json:"name"`
}) (*mcp.CallToolResult, any, error) {
	if in.Name == "" {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "add_tool: name is empty"}
	}
	mcp.AddTool(p.server, &mcp.Tool{Name: in.Name, Description: "Added by add_tool; returns text."}, echo)
	return text("added " + in.Name), nil, nil
}

func region(_ context.Context, req *mcp.CallToolRequest, _ struct {
	Region string `json:"region,omitempty"`
	Query  string `json:"query,omitempty"`
}) (*mcp.CallToolResult, any, error) {
	v := ""
	if req.Extra != nil && req.Extra.Header != nil {
		v = req.Extra.Header.Get("Mcp-Param-Region")
	}
	if v == "" {
		v = "none"
	}
	return text("region=" + v), nil, nil
}

// Multi round-trip requests (SEP-2322). The SDK (v1.8.0) has no
// continuation API: a handler sees the retry's inputResponses and
// requestState in CallToolParams and returns InputRequests (and a
// RequestState) in its CallToolResult; the SDK then marks the result
// resultType "input_required" for a 2026-07-28 request. For a request of an
// older version its middleware instead sends the input requests to the
// client as ordinary requests and calls the handler once more with the
// answers: enough for sample and roots, not for ask's two rounds, which
// therefore loops itself on a legacy session (legacyRounds).

func legacy(req *mcp.CallToolRequest) bool {
	v := req.ProtocolVersion()
	return v != "" && v < modern
}

// needCap answers the SEP-2575 error for a request whose client did not
// declare a capability an input request needs (servers MUST NOT send an
// input request the client has not declared support for).
// The data is written out rather than marshalled from
// MissingRequiredClientCapabilityData, whose ClientCapabilities cannot
// express a bare {"roots":{}}.
func needCap(capability string) error {
	data := json.RawMessage(`{"requiredCapabilities":{"` + capability + `":{}}}`)
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "missing required client capability", Data: data}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// askState is what ask's requestState carries, signed.
type askState struct {
	Tool    string `json:"tool"` // "ask": binds the state to this tool
	Round   int    `json:"round"`
	Name    string `json:"name,omitempty"`
	Expires int64  `json:"exp"` // unix seconds
}

const stateTTL = 10 * time.Minute

// seal encodes st as base64url(JSON) "." base64url(HMAC-SHA256).
func (p *peer) seal(st askState) string {
	st.Tool = "ask"
	st.Expires = time.Now().Add(stateTTL).Unix()
	b, _ := json.Marshal(st)
	m := hmac.New(sha256.New, p.key)
	m.Write(b)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(b) + "." + enc.EncodeToString(m.Sum(nil))
}

func (p *peer) open(s string) (askState, error) {
	var st askState
	payload, sig, ok := strings.Cut(s, ".")
	if !ok {
		return st, errors.New("malformed")
	}
	enc := base64.RawURLEncoding
	b, err1 := enc.DecodeString(payload)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return st, errors.New("malformed")
	}
	m := hmac.New(sha256.New, p.key)
	m.Write(b)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return st, errors.New("signature mismatch")
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, errors.New("malformed")
	}
	if st.Tool != "ask" || (st.Round != 1 && st.Round != 2) {
		return st, errors.New("not ask's state")
	}
	if time.Now().Unix() > st.Expires {
		return st, errors.New("expired")
	}
	return st, nil
}

func stringSchema(key string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{key: {Type: "string"}},
		Required:   []string{key},
	}
}

func (p *peer) askFor(key, message string, st askState) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{
			key: &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: stringSchema(key)},
		},
		RequestState: p.seal(st),
	}
}

// elicited returns the string answered for key, or ok false when there is
// no answer; a declined or cancelled elicitation is an error.
func elicited(responses mcp.InputResponseMap, key string) (v string, ok bool, err error) {
	r, _ := responses[key].(*mcp.ElicitResult)
	if r == nil {
		return "", false, nil
	}
	if r.Action != "accept" {
		return "", false, fmt.Errorf("ask: elicitation %q answered %q", key, r.Action)
	}
	v, _ = r.Content[key].(string)
	return v, v != "", nil
}

// ask: round 1 asks for "name"; round 2, given the name, asks for "color"
// with a state that carries the name; round 3 answers both. A retry whose
// answer is missing is asked again (the spec's SHOULD); a retry with
// inputResponses but no requestState, or a state that fails verification,
// is invalid params.
func (p *peer) ask(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return nil, nil, needCap("elicitation")
	}
	if legacy(req) {
		return p.legacyRounds(ctx, req)
	}
	res, err := p.askRound(req.Params.InputResponses, req.Params.RequestState)
	return res, nil, err
}

func (p *peer) askRound(responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	if state == "" {
		if len(responses) > 0 {
			return nil, invalidParams("ask: inputResponses without requestState")
		}
		return p.askFor("name", "What is your name?", askState{Round: 1}), nil
	}
	st, err := p.open(state)
	if err != nil {
		return nil, invalidParams("ask: invalid requestState: %v", err)
	}
	switch st.Round {
	case 1:
		name, ok, err := elicited(responses, "name")
		if err != nil {
			return toolError(err), nil
		}
		if !ok {
			return p.askFor("name", "What is your name?", askState{Round: 1}), nil
		}
		return p.askFor("color", "What is your favourite colour?", askState{Round: 2, Name: name}), nil
	default:
		color, ok, err := elicited(responses, "color")
		if err != nil {
			return toolError(err), nil
		}
		if !ok {
			return p.askFor("color", "What is your favourite colour?", st), nil
		}
		return text("name=" + st.Name + " color=" + color), nil
	}
}

// legacyRounds runs ask's rounds for a client of the initialize era,
// sending each elicitation to it as a server-to-client request.
func (p *peer) legacyRounds(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, any, error) {
	var responses mcp.InputResponseMap
	state := ""
	for range 10 {
		res, err := p.askRound(responses, state)
		if err != nil || res.InputRequests == nil {
			return res, nil, err
		}
		responses = mcp.InputResponseMap{}
		for key, ir := range res.InputRequests {
			r, err := req.Session.Elicit(ctx, ir.(*mcp.ElicitParams))
			if err != nil {
				return nil, nil, fmt.Errorf("ask: elicitation/create: %w", err)
			}
			responses[key] = r
		}
		state = res.RequestState
	}
	return toolError(errors.New("ask: too many rounds")), nil, nil
}

func toolError(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// sample asks for one sampling/createMessage and answers the model's text.
func sample(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
		return nil, nil, needCap("sampling")
	}
	switch r := req.Params.InputResponses["llm"].(type) {
	case *mcp.CreateMessageWithToolsResult:
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				return text(t.Text), nil, nil
			}
		}
		return toolError(errors.New("sample: the model answered no text")), nil, nil
	case *mcp.CreateMessageResult:
		if t, ok := r.Content.(*mcp.TextContent); ok {
			return text(t.Text), nil, nil
		}
		return toolError(errors.New("sample: the model answered no text")), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
		"llm": &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say something."}}},
			MaxTokens: 100,
		},
	}}, nil, nil
}

// roots asks for roots/list and answers the root URIs joined by ",".
func roots(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	// A legacy client's roots capability cannot be told from its absence
	// (the SDK keeps only listChanged), so only a 2026-07-28 one is checked.
	if !legacy(req) {
		if caps := req.ClientCapabilities(); caps == nil || (caps.RootsV2 == nil && !caps.Roots.ListChanged) {
			return nil, nil, needCap("roots")
		}
	}
	if r, ok := req.Params.InputResponses["roots"].(*mcp.ListRootsResult); ok && r != nil {
		uris := make([]string, 0, len(r.Roots))
		for _, root := range r.Roots {
			uris = append(uris, root.URI)
		}
		return text(strings.Join(uris, ",")), nil, nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil, nil
}
