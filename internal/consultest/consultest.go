// Package consultest is a Consul agent's HTTP API for tests of the
// cluster's Consul membership: sessions with a TTL and the delete
// behaviour, KV keys acquired under them, recursive reads with blocking
// queries (X-Consul-Index), and ACL tokens. It stands in for consul, which
// does not run here (no Debian package, and its module cannot be built
// with go install). It keeps what the provider relies on: a session not
// renewed for its TTL is invalidated and its keys deleted; acquiring a key
// held by another session fails; a blocking query returns when the keys
// under its prefix change or its wait ends.
package consultest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Agent is the API.
type Agent struct {
	URL string

	mu       sync.Mutex
	index    uint64
	changed  chan struct{} // closed and replaced at each write
	sessions map[string]*session
	kv       map[string]*entry
	tokens   map[string]bool // valid tokens → cut off
	done     chan struct{}
}

type session struct {
	ttl     time.Duration
	renewed time.Time
}

type entry struct {
	value   []byte
	session string
	modify  uint64
}

// New starts an agent, stopped when the test ends.
func New(t testing.TB) *Agent {
	a := &Agent{index: 1, changed: make(chan struct{}), sessions: map[string]*session{}, kv: map[string]*entry{}, tokens: map[string]bool{}, done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = srv.URL
	go a.expire()
	t.Cleanup(func() {
		close(a.done)
		srv.Close()
	})
	return a
}

// Token makes a valid ACL token named name and returns it.
func (a *Agent) Token(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	tok := "token-" + name
	a.tokens[tok] = false
	return tok
}

// Cut makes the agent unreachable for the holder of the token named name
// (its requests fail at the connection), or reachable again.
func (a *Agent) Cut(name string, cut bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens["token-"+name] = cut
}

// Keys returns the keys under prefix.
func (a *Agent) Keys(prefix string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for k := range a.kv {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// expire invalidates the sessions not renewed for their TTL, as Consul
// does (it may wait up to twice the TTL; this one waits the TTL).
func (a *Agent) expire() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-a.done:
			return
		case now := <-t.C:
			a.mu.Lock()
			for id, s := range a.sessions {
				if now.Sub(s.renewed) > s.ttl {
					a.invalidate(id)
				}
			}
			a.mu.Unlock()
		}
	}
}

// invalidate ends a session and deletes its keys, under mu.
func (a *Agent) invalidate(id string) {
	delete(a.sessions, id)
	for k, e := range a.kv {
		if e.session == id {
			delete(a.kv, k)
		}
	}
	a.write()
}

// write notes a change, under mu.
func (a *Agent) write() {
	a.index++
	close(a.changed)
	a.changed = make(chan struct{})
}

func reply(w http.ResponseWriter, index uint64, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
	_ = json.NewEncoder(w).Encode(v)
}

func (a *Agent) serve(w http.ResponseWriter, r *http.Request) {
	tok := r.Header.Get("X-Consul-Token")
	a.mu.Lock()
	cut, valid := a.tokens[tok]
	a.mu.Unlock()
	if cut {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
	}
	if !valid {
		http.Error(w, "ACL not found", http.StatusForbidden)
		return
	}
	body, _ := io.ReadAll(r.Body)
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPut && path == "/v1/session/create":
		var req struct {
			TTL      string `json:"TTL"`
			Behavior string `json:"Behavior"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "Request decode failed: "+err.Error(), http.StatusBadRequest)
			return
		}
		ttl, err := time.ParseDuration(req.TTL)
		if err != nil || ttl < time.Second || req.Behavior != "delete" {
			http.Error(w, "this agent takes a TTL of a second or more and the delete behaviour", http.StatusBadRequest)
			return
		}
		var b [16]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		a.mu.Lock()
		a.sessions[id] = &session{ttl: ttl, renewed: time.Now()}
		a.write()
		index := a.index
		a.mu.Unlock()
		reply(w, index, map[string]string{"ID": id})
	case r.Method == http.MethodPut && strings.HasPrefix(path, "/v1/session/renew/"):
		id := strings.TrimPrefix(path, "/v1/session/renew/")
		a.mu.Lock()
		s, ok := a.sessions[id]
		if ok {
			s.renewed = time.Now()
		}
		index := a.index
		a.mu.Unlock()
		if !ok {
			http.Error(w, "Session id '"+id+"' not found", http.StatusNotFound)
			return
		}
		reply(w, index, []map[string]string{{"ID": id}})
	case r.Method == http.MethodPut && strings.HasPrefix(path, "/v1/session/destroy/"):
		id := strings.TrimPrefix(path, "/v1/session/destroy/")
		a.mu.Lock()
		if _, ok := a.sessions[id]; ok {
			a.invalidate(id)
		}
		index := a.index
		a.mu.Unlock()
		reply(w, index, true)
	case r.Method == http.MethodPut && strings.HasPrefix(path, "/v1/kv/"):
		key := strings.TrimPrefix(path, "/v1/kv/")
		id := r.URL.Query().Get("acquire")
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, ok := a.sessions[id]; id == "" || !ok {
			http.Error(w, "invalid session \""+id+"\"", http.StatusInternalServerError)
			return
		}
		if e, ok := a.kv[key]; ok && e.session != "" && e.session != id {
			reply(w, a.index, false)
			return
		}
		a.write()
		a.kv[key] = &entry{value: body, session: id, modify: a.index}
		reply(w, a.index, true)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/kv/") && r.URL.Query().Get("recurse") != "":
		prefix := strings.TrimPrefix(path, "/v1/kv/")
		q := r.URL.Query()
		index, _ := strconv.ParseUint(q.Get("index"), 10, 64)
		wait, _ := time.ParseDuration(q.Get("wait"))
		deadline := time.After(wait)
		for {
			a.mu.Lock()
			if index == 0 || a.index > index || wait == 0 {
				var out []map[string]any
				for k, e := range a.kv {
					if strings.HasPrefix(k, prefix) {
						out = append(out, map[string]any{"Key": k, "Value": e.value, "Session": e.session, "ModifyIndex": e.modify})
					}
				}
				current := a.index
				a.mu.Unlock()
				if len(out) == 0 {
					w.Header().Set("X-Consul-Index", strconv.FormatUint(current, 10))
					w.WriteHeader(http.StatusNotFound)
					return
				}
				reply(w, current, out)
				return
			}
			changed := a.changed
			a.mu.Unlock()
			select {
			case <-changed:
			case <-deadline:
				wait = 0 // answer what there is
			case <-r.Context().Done():
				return
			}
		}
	default:
		http.Error(w, r.Method+" "+path+" is not served here", http.StatusMethodNotAllowed)
	}
}
