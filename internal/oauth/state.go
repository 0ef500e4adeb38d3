package oauth

import "time"

// Store keeps an Authorizer's State between runs: secret material (tokens,
// client secrets, the DPoP key), so it belongs in the host's secret store.
type Store interface {
	// Load returns what Save stored under key; nil when nothing is.
	Load(key string) ([]byte, error)
	// Save stores b under key, durably; nil b deletes it.
	Save(key string, b []byte) error
}

// State is what an Authorizer keeps for one server and one user.
type State struct {
	// Clients are the client identities registered (or pre-registered)
	// with each authorization server, by issuer: a client id is only ever
	// used with the issuer that issued it.
	Clients map[string]Client `json:"clients,omitempty"`
	// Token is the current token, if any.
	Token *Token `json:"token,omitempty"`
	// DPoPKey is the PEM of the key tokens are bound to (DPoP only).
	DPoPKey string `json:"dpopKey,omitempty"`
}

// Client is a client identity at one authorization server.
type Client struct {
	ID          string `json:"id"`
	Secret      string `json:"secret,omitempty"`
	AuthMethod  string `json:"authMethod,omitempty"` // token_endpoint_auth_method
	RedirectURI string `json:"redirectUri,omitempty"`
	// How it was obtained: "preregistered", "cimd" or "dcr".
	Kind string `json:"kind"`
	// SecretExpires is when a registered secret expires (RFC 7591
	// client_secret_expires_at); zero: never. The client registers again
	// after it.
	SecretExpires time.Time `json:"secretExpires,omitzero"`
}

// Token is an access token with what it was issued for.
type Token struct {
	Access  string    `json:"access"`
	Refresh string    `json:"refresh,omitempty"`
	Type    string    `json:"type"` // Bearer or DPoP
	Expiry  time.Time `json:"expiry,omitzero"`
	// Issued is when it was received: with Expiry, its lifetime, which
	// says when to refresh it.
	Issued time.Time `json:"issued,omitzero"`
	Scopes []string  `json:"scopes,omitempty"`
	// Issuer issued it; Resource is the server it is for (RFC 8707).
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
}

// expiresWithin reports whether t expires within d of now.
func (t *Token) expiresWithin(now time.Time, d time.Duration) bool {
	return !t.Expiry.IsZero() && now.Add(d).After(t.Expiry)
}

// Refreshing before expiry: a token is refreshed once less than a third of
// its lifetime remains, or less than minRefreshMargin, whichever is more,
// but never in the first half of its life. A fixed margin refreshes a
// short-lived token on every request (a 60 s margin and 60 s tokens) and
// a long-lived one too late to ride out an unreachable authorization
// server; a fraction suits every lifetime, and the floor leaves time for
// the request that carries it.
const (
	refreshFraction  = 3
	minRefreshMargin = 5 * time.Second
	// legacyRefreshMargin is the margin of a token stored without its
	// issue time, whose lifetime is unknown.
	legacyRefreshMargin = 60 * time.Second
)

// refreshMargin is how long before its expiry t is refreshed.
func (t *Token) refreshMargin() time.Duration {
	if t.Issued.IsZero() || !t.Expiry.After(t.Issued) {
		return legacyRefreshMargin
	}
	life := t.Expiry.Sub(t.Issued)
	return max(life/refreshFraction, min(minRefreshMargin, life/2))
}

// refreshDue reports whether t should be refreshed before it is used.
func (t *Token) refreshDue(now time.Time) bool {
	return t.expiresWithin(now, t.refreshMargin())
}
