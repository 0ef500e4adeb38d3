package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
)

// Log tail bounds: lines returned by default and at most, and how much of
// the end of a log file is read to find them.
const (
	defaultLogLines = 100
	maxLogLines     = 10000
	maxLogTailBytes = 4 << 20
)

func (s *Server) listServers(w http.ResponseWriter, r *http.Request) {
	if !s.settle(w, r) {
		return
	}
	body := map[string]any{"servers": s.serverViews()}
	// The journal's health rides with the servers' states: a damaged
	// journal found at open is as much the host's state as theirs.
	if rec := s.h.JournalRecovery(); rec.Damaged() {
		body["journal"] = journalView{Damaged: true, Summary: rec.String(), Recovery: rec}
	}
	writeJSON(w, http.StatusOK, body)
}

// journalView is the "journal" member of GET /v1/servers, there only when
// opening the journal found damage.
type journalView struct {
	Damaged  bool                     `json:"damaged"`
	Summary  string                   `json:"summary"`
	Recovery mcpvisor.JournalRecovery `json:"recovery"`
}

// settle waits, when the request says ?wait=DURATION, until every enabled
// server has settled (Host.WaitSettled: ready, or its start under way has
// failed) or the duration has passed, whichever comes first; the answer
// then says each server's state. On a bad value it has written the 400
// and returns false.
func (s *Server) settle(w http.ResponseWriter, r *http.Request) bool {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		badRequest(w, fmt.Sprintf("wait must be a duration such as 30s, not %q", v))
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	_ = s.h.WaitSettled(ctx) // not settled in time: the states say so
	return true
}

func (s *Server) serverViews() []mcpvisor.ServerStatus { return nonNil(s.h.Status()) }

// putServer registers or replaces a server from one mcpServers entry,
// parsed exactly as the config file's entries are.
func (s *Server) putServer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		badRequest(w, "the body must be one mcpServers entry: a JSON object")
		return
	}
	if _, err := checkStrict(body); err != nil {
		badRequest(w, "request body: "+err.Error())
		return
	}
	file, err := json.Marshal(map[string]map[string]json.RawMessage{"mcpServers": {name: body}})
	if err != nil {
		writeErr(w, err)
		return
	}
	cfg, err := mcpvisor.ParseConfig(file)
	if err != nil {
		writeErr(w, err)
		return
	}
	if len(cfg.Servers) != 1 {
		badRequest(w, "the body must be one mcpServers entry")
		return
	}
	if err := s.h.Register(r.Context(), cfg.Servers[0]); err != nil {
		writeErr(w, err)
		return
	}
	s.log.Info("sidecar: server registered", "server", name)
	resp := map[string]any{"name": name, "warnings": nonNil(cfg.Warnings)}
	if st, ok := s.status(name); ok {
		resp["server"] = st
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) deleteServer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.h.Unregister(r.Context(), name); err != nil {
		writeErr(w, err)
		return
	}
	s.log.Info("sidecar: server unregistered", "server", name)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) enableServer(w http.ResponseWriter, r *http.Request)  { s.setEnabled(w, r, true) }
func (s *Server) disableServer(w http.ResponseWriter, r *http.Request) { s.setEnabled(w, r, false) }

func (s *Server) setEnabled(w http.ResponseWriter, r *http.Request, enabled bool) {
	name := r.PathValue("name")
	if _, ok := s.status(name); !ok {
		writeErr(w, fmt.Errorf("%w: %q", mcpvisor.ErrUnknownServer, name))
		return
	}
	if err := s.h.SetEnabled(r.Context(), name, enabled); err != nil {
		writeErr(w, err)
		return
	}
	st, _ := s.status(name)
	writeJSON(w, http.StatusOK, st)
}

// serverLog answers the last ?lines=N (default 100) lines of the server's
// log file, DataDir/logs/<sanitized name>.log.
func (s *Server) serverLog(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.status(name); !ok {
		writeErr(w, fmt.Errorf("%w: %q", mcpvisor.ErrUnknownServer, name))
		return
	}
	n := defaultLogLines
	if q := r.URL.Query().Get("lines"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 || v > maxLogLines {
			badRequest(w, fmt.Sprintf("lines must be an integer from 1 to %d", maxLogLines))
			return
		}
		n = v
	}
	path := s.h.LogFile(name)
	lines, err := tailLines(path, n)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		writeErr(w, fmt.Errorf("reading the log of %q: %w", name, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": name, "lines": nonNil(lines)})
}

func (s *Server) status(name string) (mcpvisor.ServerStatus, bool) {
	for _, st := range s.h.Status() {
		if st.Name == name {
			return st, true
		}
	}
	return mcpvisor.ServerStatus{}, false
}

// tailLines reads the last n lines of path, looking at most maxLogTailBytes
// back from its end (a partial first line there is dropped).
func tailLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start := max(st.Size()-maxLogTailBytes, 0)
	buf := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	text := strings.TrimSuffix(string(buf), "\n")
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	if start > 0 {
		lines = lines[1:]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// nonNil turns a nil slice into an empty one, which marshals as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
