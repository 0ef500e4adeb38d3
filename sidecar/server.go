package sidecar

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// maxBody bounds a request body, read before any of it is decoded;
// maxCallBody bounds POST /v1/call's, whose arguments may be as large as
// a stdio frame (the CLI's call @FILE sends them through here).
const (
	maxBody     = 1 << 20
	maxCallBody = protocol.DefaultMaxFrame
)

// Options configure a Server.
type Options struct {
	// Token is the gateway token: the bearer token of /mcp, /metrics,
	// calls, sessions and the /v1 routes that read (doc.go has the
	// table). It must not be empty: New panics otherwise.
	Token string
	// AdminToken is the admin token, which every route takes, those that
	// change servers, sign-ins and decisions included. It must differ
	// from Token: New panics otherwise. "": Token is both, as before
	// there were two (a setup to split: an MCP client given the token
	// may then change the servers).
	AdminToken string
	// DataDir is the host's data directory, where GET /v1/media serves
	// DataDir/media from. "": mcpvisor.DefaultDataDir. (Server logs are
	// found through the Host: Host.LogFile.)
	DataDir string
	// Logger receives the server's logs. nil: slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is served at /metrics behind either token.
	Metrics http.Handler
	// Ops, when set, is served at /v1/ops and /v1/ops/stream, for the
	// operations page and `mcpvisor top`; without it they answer 404.
	Ops *Ops
	// MCP, when set, is served at /mcp behind either token: the gateway's
	// Streamable HTTP endpoint.
	MCP http.Handler

	// AllowedOrigins lists the Origin values, exactly as browsers send
	// them ("https://app.example"), whose pages may call the /v1 routes
	// that change state (every method but GET, HEAD and OPTIONS). Empty:
	// loopback origins (http://localhost:3000, http://127.0.0.1,
	// http://[::1]). Either way requests without Origin (curl, the CLI, a
	// platform's client) and from the sidecar's own origin (its inbox page)
	// pass; any other is refused with 403 code "forbidden". The gateway's
	// gateway.Options.AllowedOrigins reads alike.
	AllowedOrigins []string
	// AllowedHosts lists the Host names (without port) a /v1 request to a
	// loopback listener may give besides localhost and loopback addresses
	// (a reverse proxy that keeps the client's Host); any other is refused
	// with 403, the defence against DNS rebinding. Requests to other
	// listeners are not checked.
	AllowedHosts []string
	// PublicURL is where people reach the sidecar ("https://mcp.example"),
	// set when the host's sign-ins redirect to the sidecar itself
	// (mcpvisor.Options.SignInCallback = SignInCallback(PublicURL)): it
	// then answers GET /oauth/callback, open to any browser, whose
	// one-time state is the check. "": no callback route.
	PublicURL string

	// Limits bound Serve's connections: timeouts, and caps on those held.
	// Zero fields take the defaults.
	Limits Limits
	// TLSConfig, when set, has Serve speak HTTPS with it (it is cloned).
	TLSConfig *tls.Config
	// ShutdownGrace is how long Serve waits, once its context has ended
	// and requests' contexts are cancelled, for handlers to return before
	// it closes their connections. Zero: DefaultShutdownGrace.
	ShutdownGrace time.Duration
}

// Server is the HTTP API of one Host. It holds no goroutines between
// calls: those of a request end with it, and those of Serve (its
// http.Server's, and the answers to refused connections) have ended when
// Serve returns.
type Server struct {
	h       *mcpvisor.Host
	opts    Options
	tokens  []bearer
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler // mux behind the connection accounting (track)
}

// New returns the API of h. opts is copied. It panics on an empty Token.
func New(h *mcpvisor.Host, opts Options) *Server {
	if h == nil {
		panic("sidecar: nil Host")
	}
	if opts.Token == "" {
		panic("sidecar: empty Options.Token")
	}
	if opts.AdminToken == opts.Token {
		panic("sidecar: Options.AdminToken is Options.Token")
	}
	if opts.DataDir == "" {
		opts.DataDir = mcpvisor.DefaultDataDir
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	opts.Limits = opts.Limits.withDefaults()
	opts.AllowedOrigins = slices.Clone(opts.AllowedOrigins)
	opts.AllowedHosts = slices.Clone(opts.AllowedHosts)
	s := &Server{h: h, opts: opts, tokens: bearers(opts.Token, opts.AdminToken), log: opts.Logger, mux: http.NewServeMux()}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.routes()
	s.handler = s.track(s.mux)
	return s
}

// Handler is the API's handler. Safe for concurrent use. It checks tokens,
// Host and Origin, and bounds bodies, but holds no connection limits: for
// those, serve it with Serve.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if s.opts.PublicURL != "" {
		s.mux.HandleFunc("GET "+callbackPath, s.callback)
		s.mux.HandleFunc("GET "+startPath, s.signInStart)
	}
	s.mux.Handle("GET /ui/", s.ui())
	// The address serve prints is the first a person opens: the pages.
	s.mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	if s.opts.Metrics != nil {
		s.mux.Handle("GET /metrics", s.auth(gatewayAccess, s.opts.Metrics))
	}
	if s.opts.MCP != nil {
		s.mux.Handle("/mcp", s.auth(gatewayAccess, s.opts.MCP))
	}
	// Each route's token: the gateway token reads, makes calls and keeps
	// sessions, as an MCP client at /mcp does; whatever changes servers,
	// sign-ins or what a person decides takes the admin token (the table
	// in doc.go).
	v1 := map[string]struct {
		h      http.HandlerFunc
		access access
	}{
		"GET /v1/servers":                       {s.listServers, gatewayAccess},
		"PUT /v1/servers/{name}":                {s.putServer, adminAccess},
		"DELETE /v1/servers/{name}":             {s.deleteServer, adminAccess},
		"POST /v1/servers/{name}/enable":        {s.enableServer, adminAccess},
		"POST /v1/servers/{name}/disable":       {s.disableServer, adminAccess},
		"POST /v1/servers/{name}/restart":       {s.restartServer, adminAccess},
		"GET /v1/ops":                           {s.ops, gatewayAccess},
		"GET /v1/ops/stream":                    {s.opsStream, gatewayAccess},
		"GET /v1/servers/{name}/log":            {s.serverLog, adminAccess}, // a server's stderr may hold its secrets
		"POST /v1/servers/{name}/auth":          {s.signIn, adminAccess},
		"POST /v1/servers/{name}/auth/redirect": {s.pasteRedirect, adminAccess},
		"DELETE /v1/servers/{name}/auth":        {s.signOut, adminAccess},
		"GET /v1/auth":                          {s.listAuth, gatewayAccess},
		"GET /v1/tools":                         {s.tools, gatewayAccess},
		"GET /v1/catalog":                       {s.catalog, gatewayAccess},
		"POST /v1/call":                         {s.call, gatewayAccess},
		"POST /v1/sessions/{session}/activate":  {s.activate, gatewayAccess},
		"POST /v1/sessions/{session}/end":       {s.endSession, gatewayAccess},
		"GET /v1/events":                        {s.events, gatewayAccess},
		"POST /v1/events/ack":                   {s.ackEvents, adminAccess},
		"GET /v1/history":                       {s.history, gatewayAccess},
		"GET /v1/cluster":                       {s.cluster, gatewayAccess},
		"GET /v1/events/stream":                 {s.eventStream, gatewayAccess},
		"GET /v1/elicitations":                  {s.elicitations, gatewayAccess},
		"GET /v1/inbox/stream":                  {s.inboxStream, gatewayAccess},
		"POST /v1/elicitations/{id}":            {s.resolveElicitation, adminAccess},
		"GET /v1/approvals":                     {s.approvals, gatewayAccess},
		"POST /v1/approvals/{id}":               {s.resolveApproval, adminAccess},
		"GET /v1/tools/reviews":                 {s.toolReviews, gatewayAccess},
		"POST /v1/tools/reviews/decide":         {s.decideToolReview, adminAccess},
		"GET /v1/tasks":                         {s.tasks, gatewayAccess},
		"GET /v1/tasks/{id}":                    {s.task, gatewayAccess},
		"GET /v1/media/{file}":                  {s.media, gatewayAccess},
	}
	for pattern, route := range v1 {
		s.mux.Handle(pattern, s.auth(route.access, s.guard(route.h)))
	}
	// Anything else under /v1 is a JSON 404, after the token check, so
	// that an unauthenticated client learns nothing of the routes.
	s.mux.Handle("/v1/", s.auth(gatewayAccess, s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		notFound(w, "no such route: "+r.Method+" "+r.URL.Path)
	}))))
}

// track accounts every request to its connection, when Serve holds it
// (connTracker.begin): a request with a token makes the connection
// authenticated; one without counts it against its address's limit, and
// past that limit is refused with 503 and the connection closed.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tc, _ := r.Context().Value(connKey{}).(*trackedConn)
		if tc == nil {
			next.ServeHTTP(w, r)
			return
		}
		if !tc.tracker.begin(tc, s.validToken(r)) {
			w.Header().Set("Connection", "close")
			writeError(w, ErrorView{status: http.StatusServiceUnavailable, Code: CodeUnavailable, RetryAfter: 1000,
				Message: "too many connections without the token from this address, all busy: retry shortly"})
			return
		}
		defer tc.tracker.end(tc)
		next.ServeHTTP(w, r)
	})
}

// healthz is 200 {"status": "ok"} while the host runs. A read-only
// journal (its disk full) adds "journal": "read-only: disk full" but stays
// 200, as does /readyz: servers and calls go on, only what the journal
// would keep is dropped (and counted). It reads nothing that may wait on
// the disk.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	body := map[string]string{"status": "ok"}
	if s.h.Journal().Disk().ReadOnly {
		body["journal"] = mcpvisor.JournalReadOnlyDiskFull
	}
	writeJSON(w, http.StatusOK, body)
}

// readyz is 200 {"status": "ready"} when every enabled server is ready,
// else 503 {"status": "not_ready"}. Only with the token does it say which
// servers are not ready and their states ("notReady"): an open probe
// tells no one what the host runs.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	type notReady struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	bad := []notReady{}
	for _, st := range s.h.Status() {
		if st.Enabled && st.State != mcpvisor.StateReady {
			bad = append(bad, notReady{Name: st.Name, State: string(st.State)})
		}
	}
	if len(bad) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
		return
	}
	body := map[string]any{"status": "not_ready"}
	if s.validToken(r) {
		body["notReady"] = bad
	}
	writeJSON(w, http.StatusServiceUnavailable, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// readJSON decodes a bounded JSON body into v, strictly (decodeStrict: no
// trailing data, no key given twice); on failure it has written the 400
// and returns false. An empty body leaves v as it is.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return readJSONMax(w, r, v, maxBody)
}

// readJSONMax is readJSON with a body of at most limit bytes.
func readJSONMax(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	body, ok := readBodyMax(w, r, limit)
	if !ok {
		return false
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return true
	}
	if err := decodeStrict(body, v); err != nil {
		badRequest(w, "request body: "+err.Error())
		return false
	}
	return true
}

// readBody reads at most maxBody bytes of the body, refusing a larger one
// before holding more of it.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return readBodyMax(w, r, maxBody)
}

// readBodyMax is readBody with a body of at most limit bytes.
func readBodyMax(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, ErrorView{status: http.StatusRequestEntityTooLarge, Code: CodeInvalidRequest,
				Message: fmt.Sprintf("request body over %d MiB", limit>>20)})
			return nil, false
		}
		badRequest(w, "reading the request body: "+err.Error())
		return nil, false
	}
	return body, true
}
