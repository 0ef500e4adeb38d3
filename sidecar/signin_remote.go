package sidecar

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpvisor/mcpvisor"
)

// Sign-in for a person who is not at the sidecar's host. The sidecar's
// loopback redirect listener is out of their reach, so the redirect comes
// back another way: to the sidecar's own callback on its public URL, or
// pasted back by the person (the browser on their machine fails to load
// the loopback address; they copy it from the address bar). A sign-in
// with a code (?method=device) needs no redirect at all.

// callbackPath is where the sidecar takes sign-in redirects on its public
// URL.
const callbackPath = "/oauth/callback"

// startPath is where the sidecar answers the one-time start URL of a
// sign-in whose redirect comes to callbackPath: beside it, as a loopback
// listener answers both.
const startPath = "/mcpvisor-sign-in/{id}"

// SignInCallback is the redirect URI of a sidecar whose public URL is
// publicURL: what mcpvisor.Options.SignInCallback is set to.
func SignInCallback(publicURL string) string {
	return strings.TrimSuffix(publicURL, "/") + callbackPath
}

// RedirectPaste is the body of POST /v1/servers/{name}/auth/redirect: the
// address the browser ended on after the sign-in.
type RedirectPaste struct {
	URL string `json:"url"`
}

// pasteRedirect completes a sign-in with the redirect address the person
// pasted; its state must be that of a sign-in of this server in progress,
// and is spent by it. It answers the server's authorization status.
func (s *Server) pasteRedirect(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.authStatus(w, name, true); !ok {
		return
	}
	var body RedirectPaste
	if !readJSON(w, r, &body) {
		return
	}
	q, err := redirectQuery(body.URL)
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	if err := s.h.CompleteSignIn(r.Context(), name, q); err != nil {
		writeError(w, ErrorView{status: http.StatusBadRequest, Code: CodeSignInFailed, Message: err.Error()})
		return
	}
	s.log.Info("sidecar: signed in with a pasted redirect", "server", name)
	st, _ := s.authStatus(w, name, false)
	writeJSON(w, http.StatusOK, st)
}

// redirectQuery is the query of a pasted redirect address: it must carry
// a state, and a code or an error.
func redirectQuery(raw string) (url.Values, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("the pasted address is not a URL: %v", err)
	}
	q := u.Query()
	if q.Get("state") == "" || q.Get("code") == "" && q.Get("error") == "" {
		return nil, fmt.Errorf("the pasted address carries no state and code: paste the whole address the browser ended on after signing in")
	}
	return q, nil
}

// callback takes a sign-in redirect on the sidecar's public URL. It needs
// no token (it is the person's browser, sent by the authorization server):
// the state, one-time and known only to the sign-in, is the check.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	server, err := s.h.CompleteSignInRedirect(r.Context(), r.URL.Query())
	if err != nil {
		s.log.Warn("sidecar: sign-in redirect refused", "server", server, "err", err)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<!doctype html><title>Sign-in failed</title><p>Sign-in failed: %s</p>", html.EscapeString(err.Error()))
		return
	}
	s.log.Info("sidecar: signed in through the public callback", "server", server)
	fmt.Fprintf(w, "<!doctype html><title>Signed in</title><p>Signed in to %s. You can close this window.</p>", html.EscapeString(server))
}

// signInStart answers a sign-in's one-time start URL on the public URL:
// the authorization URL the first time, and never again (the sign-in is
// cancelled then: the link went somewhere else too). Like the callback,
// it needs no token; the id, random and one-time, is the check.
func (s *Server) signInStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	u, err := s.h.OpenSignInStart(r.PathValue("id"))
	switch {
	case errors.Is(err, mcpvisor.ErrSignInLinkUsed):
		s.log.Warn("sidecar: a sign-in link was opened twice; that sign-in is cancelled")
		http.Error(w, "This sign-in link was already used; the sign-in is cancelled. Start it again.", http.StatusGone)
	case err != nil:
		http.NotFound(w, r)
	default:
		http.Redirect(w, r, u, http.StatusSeeOther)
	}
}
