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
	Scopes  []string  `json:"scopes,omitempty"`
	// Issuer issued it; Resource is the server it is for (RFC 8707).
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
}

// expiresWithin reports whether t expires within d of now.
func (t *Token) expiresWithin(now time.Time, d time.Duration) bool {
	return !t.Expiry.IsZero() && now.Add(d).After(t.Expiry)
}
