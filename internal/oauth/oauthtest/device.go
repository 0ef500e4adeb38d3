package oauthtest

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"
)

// deviceGrant is the device authorization grant's grant type (RFC 8628 §3.4).
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// DeviceDecision is what the person decides at the verification URI.
type DeviceDecision string

const (
	DeviceApprove DeviceDecision = "approve"
	DeviceDeny    DeviceDecision = "deny"
)

// deviceAuthorization is RFC 8628 §3.1–3.2: a device code and a user code,
// recorded as "device_authorization".
func (s *AuthServer) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Endpoint: "device_authorization", Form: f, ClientID: id})
	c := s.clients[id]
	if !s.opts.Device || c == nil || c.secret != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	if c.grants != nil && !slices.Contains(c.grants, deviceGrant) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unauthorized_client", "error_description": "the client did not register the device_code grant"})
		return
	}
	expiresIn := cmp.Or(s.opts.DeviceExpiresIn, 600)
	code := s.newSecret("dc-")
	user := strings.ToUpper(s.newSecret("")[:8])
	s.grants[code] = &grant{kind: "device", client: id, scopes: s.grantable(strings.Fields(f.Get("scope"))),
		resource: f.Get("resource"), userCode: user, expiry: s.now().Add(time.Duration(expiresIn) * time.Second)}
	iss := s.Issuer()
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code":               code,
		"user_code":                 user,
		"verification_uri":          iss + "/device",
		"verification_uri_complete": iss + "/device?user_code=" + user,
		"expires_in":                expiresIn,
		"interval":                  s.opts.DeviceInterval,
	})
}

// pollLocked answers a poll of device code g: done with the answer to
// write, or not done when the code is approved and tokens are to be
// issued (it is then spent). s.mu held.
func (s *AuthServer) pollLocked(g *grant) (status int, resp any, done bool) {
	answer := func(code string) (int, any, bool) {
		return http.StatusBadRequest, map[string]string{"error": code}, true
	}
	if g.revoked {
		return answer("invalid_grant")
	}
	if !s.now().Before(g.expiry) {
		return answer("expired_token")
	}
	g.polls++
	if g.polls <= len(s.opts.DeviceAnswers) {
		return answer(s.opts.DeviceAnswers[g.polls-1])
	}
	switch DeviceDecision(g.decision) {
	case DeviceApprove:
		g.revoked = true // single use
		return 0, nil, false
	case DeviceDeny:
		return answer("access_denied")
	}
	return answer("authorization_pending")
}

// DecideDevice records the person's decision on the sign-in whose user
// code is userCode; false when there is none.
func (s *AuthServer) DecideDevice(userCode string, d DeviceDecision) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.grants {
		if g.kind == "device" && g.userCode == userCode {
			g.decision = string(d)
			return true
		}
	}
	return false
}

// DevicePolls is how many times the device code of userCode was polled.
func (s *AuthServer) DevicePolls(userCode string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.grants {
		if g.kind == "device" && g.userCode == userCode {
			return g.polls
		}
	}
	return 0
}
