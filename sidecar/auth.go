package sidecar

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpvisor/mcpvisor"
)

// Sign-in of remote servers that need OAuth. The API starts a sign-in and
// hands back the authorization URL; the person opens it, and the
// authorization server redirects to the host's own loopback listener,
// which completes the sign-in and starts the server. No token ever passes
// through the API: AuthStatus holds none.

// grantAuthorizationCode is the grant a person signs in with; a server
// with a machine grant gets its tokens by itself.
const grantAuthorizationCode = "authorization_code"

// SignInView answers POST /v1/servers/{name}/auth: the URL to open in a
// browser, and where the authorization server will send it back.
type SignInView struct {
	Server      string `json:"server"`
	URL         string `json:"url"`
	RedirectURI string `json:"redirectUri"`
	// AuthorizationURL is set for ?method=paste: the authorization
	// server's URL itself, for a person on another machine, who opens it
	// there and pastes the address the browser ends on to POST
	// /v1/servers/{name}/auth/redirect (unless the redirect URI is the
	// sidecar's own public callback, which the browser reaches itself).
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
	// Device is set for ?method=device, a sign-in with a code: the person
	// enters Device.UserCode at Device.VerificationURI (URL).
	Device *mcpvisor.DeviceCode `json:"device,omitempty"`
}

// listAuth lists the authorization of every server that has an authorizer.
func (s *Server) listAuth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"auth": nonNil(s.h.AuthStatuses())})
}

// signIn starts a sign-in. It returns once the authorization URL is known
// (discovery and client registration done); the sign-in itself ends when
// the browser reaches the host's redirect listener.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.authStatus(w, name, true); !ok {
		return
	}
	var si *mcpvisor.SignIn
	var err error
	user, method := r.URL.Query().Get("user"), r.URL.Query().Get("method")
	switch {
	case method != "" && method != "browser" && method != "device" && method != "paste":
		badRequest(w, fmt.Sprintf("method %q: want browser, paste or device", method))
		return
	case method == "device" && user != "":
		badRequest(w, "a sign-in with a code is for the host's own identity, not a per-user server's user")
		return
	case method == "device":
		si, err = s.h.BeginDeviceSignIn(r.Context(), name)
	case user != "":
		si, err = s.h.BeginUserSignIn(r.Context(), name, user) // a per-user server's user
	default:
		si, err = s.h.BeginSignIn(r.Context(), name)
	}
	if errors.Is(err, mcpvisor.ErrNoDeviceSignIn) {
		writeError(w, ErrorView{status: http.StatusConflict, Code: CodeNoDeviceSignIn, Message: err.Error()})
		return
	}
	if err != nil {
		e := classify(err)
		if e.Code == CodeInternal { // discovery, registration: the authorization server's side
			e.status, e.Code = http.StatusBadGateway, CodeSignInFailed
		}
		writeError(w, e)
		return
	}
	s.log.Info("sidecar: sign-in started", "server", name, "redirect", si.RedirectURI)
	view := SignInView{Server: si.Server, URL: si.URL, RedirectURI: si.RedirectURI, Device: si.Device}
	if method == "paste" {
		// Asked for by a person whose browser is elsewhere: the one-time
		// start URL is on the host's loopback listener, out of its reach.
		view.AuthorizationURL = si.AuthorizationURL
	}
	writeJSON(w, http.StatusOK, view)
}

// signOut forgets the server's token and client registrations and answers
// its authorization status after.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.authStatus(w, name, false); !ok {
		return
	}
	var err error
	if user := r.URL.Query().Get("user"); user != "" {
		err = s.h.SignOutUser(r.Context(), name, user)
	} else {
		err = s.h.SignOut(r.Context(), name)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.log.Info("sidecar: signed out", "server", name)
	st, _ := s.authStatus(w, name, false)
	writeJSON(w, http.StatusOK, st)
}

// authStatus returns name's authorization status; when it has none it
// writes why (404 for an unknown server, 409 for one that does not use
// OAuth, or, with interactive, uses a grant nobody signs in to).
func (s *Server) authStatus(w http.ResponseWriter, name string, interactive bool) (mcpvisor.AuthStatus, bool) {
	for _, st := range s.h.AuthStatuses() {
		if st.Server != name {
			continue
		}
		if interactive && st.Grant != "" && st.Grant != grantAuthorizationCode {
			writeError(w, ErrorView{status: http.StatusConflict, Code: CodeNoSignIn,
				Message: fmt.Sprintf("server %q uses the %s grant: it gets its tokens by itself, there is nothing to sign in to", name, st.Grant)})
			return st, false
		}
		return st, true
	}
	if _, ok := s.status(name); !ok {
		writeErr(w, fmt.Errorf("%w: %q", mcpvisor.ErrUnknownServer, name))
		return mcpvisor.AuthStatus{}, false
	}
	writeError(w, ErrorView{status: http.StatusConflict, Code: CodeNoSignIn,
		Message: fmt.Sprintf("server %q does not use OAuth (a stdio server, or one with a static Authorization header or a headers helper)", name)})
	return mcpvisor.AuthStatus{}, false
}
