package sidecar

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/mcpvisor/mcpvisor"
)

// Two bearer tokens: the gateway token, which an MCP client is given, and
// the admin token, which stays with the person (the CLI, the inbox page).
// A route takes either or the admin token alone (access); a request's
// token is named on its context (mcpvisor.WithCredential), so that an
// approval it raises cannot be decided with the same token.

// access is the token a route takes.
type access int

const (
	gatewayAccess access = iota // the gateway token or the admin token
	adminAccess                 // the admin token only
)

// bearer is one token the sidecar accepts.
type bearer struct {
	secret []byte
	admin  bool
	// id names the token for mcpvisor.WithCredential: its kind and a
	// hash of it, never the token.
	id string
}

// bearers are the tokens of Options: the gateway and admin tokens, or,
// when admin is "", the one token that is both.
func bearers(gateway, admin string) []bearer {
	if admin == "" {
		return []bearer{newBearer("token", gateway, true)}
	}
	return []bearer{newBearer("gateway-token", gateway, false), newBearer("admin-token", admin, true)}
}

func newBearer(kind, token string, admin bool) bearer {
	sum := sha256.Sum256([]byte(token))
	return bearer{secret: []byte(token), admin: admin, id: kind + ":" + hex.EncodeToString(sum[:8])}
}

// bearerOf is the token r carries ("Authorization: Bearer <token>"),
// compared in constant time with each; false for none of them.
func (s *Server) bearerOf(r *http.Request) (bearer, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return bearer{}, false
	}
	got = strings.TrimSpace(got)
	found, match := bearer{}, false
	for _, b := range s.tokens {
		if subtle.ConstantTimeCompare([]byte(got), b.secret) == 1 {
			found, match = b, true
		}
	}
	return found, match
}

// validToken reports whether r carries one of the tokens.
func (s *Server) validToken(r *http.Request) bool {
	_, ok := s.bearerOf(r)
	return ok
}

// auth requires a token that has the access: none is 401, the gateway
// token on an admin route is 403 "admin_required". The request goes on
// with its token's name on its context (mcpvisor.WithCredential).
func (s *Server) auth(need access, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := s.bearerOf(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpvisor"`)
			writeError(w, ErrorView{status: http.StatusUnauthorized, Code: CodeUnauthorized,
				Message: "missing or wrong bearer token: send Authorization: Bearer TOKEN, the token mcpvisor serve keeps in its data directory (mcpvisor token prints it)"})
			return
		}
		if need == adminAccess && !b.admin {
			writeError(w, ErrorView{status: http.StatusForbidden, Code: CodeAdminRequired,
				Message: r.Method + " " + r.URL.Path + " needs the admin token: the gateway token may use /mcp, POST /v1/call, sessions and the GET routes"})
			return
		}
		next.ServeHTTP(w, r.WithContext(mcpvisor.WithCredential(r.Context(), b.id)))
	})
}
