// Package mcphttptest is a Streamable HTTP (and legacy HTTP+SSE) MCP server
// for tests, with switches for the misbehaviours a client must survive.
package mcphttptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a Streamable HTTP MCP server for tests, written from the spec,
// with switches for the behaviours a client must handle. Set the switches
// before Start; read what happened with Stats.
type Server struct {
	SSE        bool          // reply to requests with an SSE stream
	AskFirst   bool          // stream a ping request before the response and wait for its answer
	WrongID    bool          // answer tools/call with another id
	CloseEarly time.Duration // close the stream after the priming event (retry: this); serve the response on GET
	GetStatus  int           // answer to a GET without a resumable stream (default 405)
	Legacy     bool          // speak only the 2024-11-05 HTTP+SSE transport
	Oversize   int           // pad tools/call results to this many bytes
	Hang       bool          // never answer tools/call
	Expire     bool          // forget every session after the first tools/call

	mu          sync.Mutex
	sessions    map[string]bool
	nextSession int
	inits       int
	conns       int
	gets        int
	deletes     int
	lastEventID string
	resumeAt    time.Time
	closedAt    time.Time
	headers     []http.Header // of every POST, in order
	answers     []string      // responses the client posted to our requests
	pending     map[string][]byte
	legacyOut   chan []byte
	answered    chan struct{}
	Cancelled   chan string // requestIds of notifications/cancelled, as they arrive
}

// Start serves m on a loopback listener; it is closed after anything the
// test opens later (cleanups run last-in first-out).
func Start(t testing.TB, m *Server) *httptest.Server {
	m.sessions = map[string]bool{}
	m.pending = map[string][]byte{}
	m.legacyOut = make(chan []byte, 16)
	m.answered = make(chan struct{}, 16)
	m.Cancelled = make(chan string, 64)
	if m.GetStatus == 0 {
		m.GetStatus = http.StatusMethodNotAllowed
	}
	srv := httptest.NewUnstartedServer(m)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			m.mu.Lock()
			m.conns++
			m.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

type rpc struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (m *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.Legacy {
		m.serveLegacy(w, r)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		m.mu.Lock()
		m.deletes++
		m.mu.Unlock()
		return
	case http.MethodGet:
		m.serveGet(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg rpc
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.headers = append(m.headers, r.Header.Clone())
	known := m.sessions[r.Header.Get("Mcp-Session-Id")]
	m.mu.Unlock()
	if msg.Method != "initialize" && !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if msg.Method == "" || len(msg.ID) == 0 { // a notification or a response to us
		if msg.Method == "notifications/cancelled" {
			var p struct{ RequestID json.RawMessage }
			json.Unmarshal(msg.Params, &p)
			m.Cancelled <- string(p.RequestID)
		}
		if msg.Method == "" {
			m.mu.Lock()
			m.answers = append(m.answers, string(body))
			m.mu.Unlock()
			m.answered <- struct{}{}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result, id := m.handle(&msg, w)
	if result == nil {
		return
	}
	if m.Hang && msg.Method == "tools/call" {
		<-r.Context().Done()
		return
	}
	resp := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	if !m.SSE || msg.Method != "tools/call" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	retry := ""
	if m.CloseEarly > 0 {
		retry = fmt.Sprintf("retry: %d\n", m.CloseEarly.Milliseconds())
	}
	fmt.Fprintf(w, "id: ev-1\n%sdata:\n\n", retry) // the priming event
	fl.Flush()
	if m.AskFirst {
		fmt.Fprintf(w, "id: ev-2\ndata: %s\n\n", `{"jsonrpc":"2.0","id":"srv-1","method":"ping"}`)
		fl.Flush()
		select {
		case <-m.answered:
		case <-time.After(10 * time.Second):
			return
		}
	}
	if m.CloseEarly > 0 {
		m.mu.Lock()
		m.pending["ev-1"] = resp
		m.closedAt = time.Now()
		m.mu.Unlock()
		return // the stream closes before the response
	}
	fmt.Fprintf(w, "id: ev-3\ndata: %s\n\n", resp)
	fl.Flush()
}

// handle answers a request; it returns the result and the id to answer with.
func (m *Server) handle(msg *rpc, w http.ResponseWriter) (json.RawMessage, string) {
	id := string(msg.ID)
	switch msg.Method {
	case "initialize":
		m.mu.Lock()
		m.inits++
		m.nextSession++
		sid := fmt.Sprintf("session-%d", m.nextSession)
		m.sessions[sid] = true
		m.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"http-test","version":"1"}}`), id
	case "tools/list":
		return json.RawMessage(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), id
	case "tools/call":
		var p struct{ Arguments json.RawMessage }
		json.Unmarshal(msg.Params, &p)
		text := string(p.Arguments)
		if m.Oversize > 0 {
			text += strings.Repeat("x", m.Oversize)
		}
		res, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
		m.mu.Lock()
		if m.Expire {
			m.sessions = map[string]bool{}
		}
		m.mu.Unlock()
		if m.WrongID {
			id = "999999"
		}
		return res, id
	}
	http.Error(w, "no such method", http.StatusBadRequest)
	return nil, ""
}

func (m *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.gets++
	last := r.Header.Get("Last-Event-ID")
	resp, ok := m.pending[last]
	if ok {
		delete(m.pending, last)
		m.lastEventID = last
		m.resumeAt = time.Now()
	}
	m.mu.Unlock()
	if !ok {
		w.WriteHeader(m.GetStatus)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: ev-4\ndata: %s\n\n", resp)
}

// serveLegacy speaks the 2024-11-05 transport: POST /mcp is refused, GET
// opens the stream whose first event names the endpoint for POSTs.
func (m *Server) serveLegacy(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /messages?sid=7\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case frame := <-m.legacyOut:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", frame)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case r.Method == http.MethodPost && r.URL.Path == "/messages":
		body, _ := io.ReadAll(r.Body)
		var msg rpc
		json.Unmarshal(body, &msg)
		w.WriteHeader(http.StatusAccepted)
		if msg.Method == "" || len(msg.ID) == 0 {
			return
		}
		if msg.Method == "initialize" {
			m.mu.Lock()
			m.inits++
			m.mu.Unlock()
			m.legacyOut <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, msg.ID))
			return
		}
		rec := httptest.NewRecorder()
		result, id := m.handle(&msg, rec)
		m.legacyOut <- []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// Stats is what a Server saw.
type Stats struct {
	Inits, Gets, Deletes int
	Conns                int           // connections the client opened
	LastEventID          string        // of the GET that resumed a stream
	ResumeGap            time.Duration // from the early close to that GET
	Headers              []http.Header // of every POST, in order
	Answers              []string      // responses the client posted to the server's requests
}

// Stats returns a copy of what the server saw so far.
func (m *Server) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{
		Inits: m.inits, Gets: m.gets, Deletes: m.deletes, Conns: m.conns,
		LastEventID: m.lastEventID, ResumeGap: m.resumeAt.Sub(m.closedAt),
		Headers: append([]http.Header(nil), m.headers...), Answers: append([]string(nil), m.answers...),
	}
}
