// Package k8stest is a Kubernetes API server for tests of the cluster's
// Kubernetes membership: the Lease objects of coordination.k8s.io/v1 in
// memory, over TLS, with bearer tokens. It stands in for kube-apiserver,
// which does not run here (no Debian package; envtest downloads its
// binaries). It keeps what the provider relies on: resourceVersion on
// every write, optimistic concurrency on update (409 on a stale version),
// 409 on creating what exists, 404, equality label selectors, and
// delete preconditions.
package k8stest

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is the API server.
type Server struct {
	URL    string
	CAFile string

	srv *httptest.Server
	dir string

	mu      sync.Mutex
	version int
	leases  map[string]map[string]json.RawMessage // namespace → name → object
	tokens  map[string]bool                       // valid tokens → cut off
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{dir: t.TempDir(), leases: map[string]map[string]json.RawMessage{}, tokens: map[string]bool{}}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	s.CAFile = filepath.Join(s.dir, "ca.crt")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	if err := os.WriteFile(s.CAFile, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// Token makes a valid token and returns the file that holds it.
func (s *Server) Token(t testing.TB, name string) string {
	tok := "token-" + name
	s.mu.Lock()
	s.tokens[tok] = false
	s.mu.Unlock()
	f := filepath.Join(s.dir, name+".token")
	if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Cut makes the server unreachable for the holder of the token named
// name (its requests fail at the connection), or reachable again.
func (s *Server) Cut(name string, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens["token-"+name] = cut
}

// Leases returns the names of the Leases in namespace.
func (s *Server) Leases(namespace string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name := range s.leases[namespace] {
		out = append(out, name)
	}
	return out
}

func status(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "code": code})
}

type object struct {
	Metadata struct {
		Name            string            `json:"name"`
		ResourceVersion string            `json:"resourceVersion,omitempty"`
		Labels          map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
}

// setVersion returns raw with metadata.resourceVersion set.
func setVersion(raw json.RawMessage, v string) json.RawMessage {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	md["resourceVersion"] = v
	b, _ := json.Marshal(m)
	return b
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	cut, valid := s.tokens[tok]
	s.mu.Unlock()
	if cut {
		// As a network cut: no answer.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		status(w, http.StatusServiceUnavailable, "cut off")
		return
	}
	if !ok || !valid {
		status(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	const prefix = "/apis/coordination.k8s.io/v1/namespaces/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 2 || parts[1] != "leases" || len(parts) > 3 {
		status(w, http.StatusNotFound, "the server could not find the requested resource")
		return
	}
	ns, name := parts[0], ""
	if len(parts) == 3 {
		name = parts[2]
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	leases := s.leases[ns]
	if leases == nil {
		leases = map[string]json.RawMessage{}
		s.leases[ns] = leases
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && name == "":
		sel := map[string]string{}
		for _, term := range strings.Split(r.URL.Query().Get("labelSelector"), ",") {
			if k, v, ok := strings.Cut(term, "="); ok {
				sel[k] = v
			}
		}
		items := []json.RawMessage{}
		for _, raw := range leases {
			var o object
			_ = json.Unmarshal(raw, &o)
			match := true
			for k, v := range sel {
				match = match && o.Metadata.Labels[k] == v
			}
			if match {
				items = append(items, raw)
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
			"metadata": map[string]string{"resourceVersion": strconv.Itoa(s.version)}, "items": items})
	case r.Method == http.MethodGet:
		raw, ok := leases[name]
		if !ok {
			status(w, http.StatusNotFound, "leases "+name+" not found")
			return
		}
		_, _ = w.Write(raw)
	case r.Method == http.MethodPost && name == "":
		var o object
		if json.Unmarshal(body, &o) != nil || o.Metadata.Name == "" {
			status(w, http.StatusBadRequest, "a Lease with a name is needed")
			return
		}
		if _, ok := leases[o.Metadata.Name]; ok {
			status(w, http.StatusConflict, "leases "+o.Metadata.Name+" already exists")
			return
		}
		s.version++
		raw := setVersion(body, strconv.Itoa(s.version))
		leases[o.Metadata.Name] = raw
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(raw)
	case r.Method == http.MethodPut && name != "":
		var o object
		if json.Unmarshal(body, &o) != nil || o.Metadata.Name != name {
			status(w, http.StatusBadRequest, "the name in the body is not the one in the path")
			return
		}
		old, ok := leases[name]
		if !ok {
			status(w, http.StatusNotFound, "leases "+name+" not found")
			return
		}
		var was object
		_ = json.Unmarshal(old, &was)
		if o.Metadata.ResourceVersion != "" && o.Metadata.ResourceVersion != was.Metadata.ResourceVersion {
			status(w, http.StatusConflict, "the object has been modified; please apply your changes to the latest version and try again")
			return
		}
		s.version++
		raw := setVersion(body, strconv.Itoa(s.version))
		leases[name] = raw
		_, _ = w.Write(raw)
	case r.Method == http.MethodDelete && name != "":
		old, ok := leases[name]
		if !ok {
			status(w, http.StatusNotFound, "leases "+name+" not found")
			return
		}
		var opts struct {
			Preconditions struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"preconditions"`
		}
		_ = json.Unmarshal(body, &opts)
		var was object
		_ = json.Unmarshal(old, &was)
		if v := opts.Preconditions.ResourceVersion; v != "" && v != was.Metadata.ResourceVersion {
			status(w, http.StatusConflict, "Precondition failed: ResourceVersion in precondition: "+v+", ResourceVersion in object meta: "+was.Metadata.ResourceVersion)
			return
		}
		delete(leases, name)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
	default:
		status(w, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
	}
}
