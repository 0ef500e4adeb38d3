package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JOSE goes through go-jose: signing JWTs (client assertions, DPoP proofs)
// with embedded JWKs is easy to get subtly wrong by hand.

// dpopKey signs DPoP proofs (RFC 9449 §4) with one key pair.
type dpopKey struct {
	priv   *ecdsa.PrivateKey
	signer jose.Signer
}

// newDPoPKey loads the PEM key of a previous run, or makes a new P-256 key.
func newDPoPKey(pemKey string) (*dpopKey, string, error) {
	var priv *ecdsa.PrivateKey
	if pemKey != "" {
		k, err := parsePrivateKey(pemKey)
		if err != nil {
			return nil, "", err
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, "", fmt.Errorf("oauth: the DPoP key is not an EC key")
		}
		priv = ec
	} else {
		var err error
		if priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, "", err
		}
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, "", err
	}
	out := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, opts)
	if err != nil {
		return nil, "", err
	}
	return &dpopKey{priv: priv, signer: s}, out, nil
}

type dpopClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// proof is a DPoP proof for one request: htu without query and fragment,
// ath the hash of the access token it accompanies, if any.
func (k *dpopKey) proof(method, target, accessToken, nonce string, now time.Time) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	u.RawQuery, u.Fragment = "", ""
	c := dpopClaims{JTI: randomString(16), HTM: method, HTU: u.String(), IAT: now.Unix(), Nonce: nonce}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		c.ATH = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return jwt.Signed(k.signer).Claims(c).Serialize()
}

// thumbprint is the key's RFC 7638 thumbprint (dpop_jkt).
func (k *dpopKey) thumbprint() string {
	jwk := jose.JSONWebKey{Key: k.priv.Public()}
	b, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// assertioner signs RFC 7523 client assertions (private_key_jwt).
type assertioner struct {
	signer jose.Signer
}

func newAssertioner(pemKey, alg, keyID string) (*assertioner, error) {
	k, err := parsePrivateKey(pemKey)
	if err != nil {
		return nil, err
	}
	a := jose.SignatureAlgorithm(alg)
	if alg == "" {
		switch k.(type) {
		case *ecdsa.PrivateKey:
			a = jose.ES256
		case *rsa.PrivateKey:
			a = jose.RS256
		case ed25519.PrivateKey:
			a = jose.EdDSA
		}
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if keyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), keyID)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: a, Key: k}, opts)
	if err != nil {
		return nil, fmt.Errorf("oauth: the client assertion key: %v", err)
	}
	return &assertioner{signer: s}, nil
}

// sign makes an assertion of clientID for audience, valid five minutes.
func (a *assertioner) sign(clientID, audience string, now time.Time) (string, error) {
	if a == nil {
		return "", fmt.Errorf("%w: private_key_jwt needs a private key", ErrToken)
	}
	c := jwt.Claims{
		Issuer:   clientID,
		Subject:  clientID,
		Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now),
		Expiry:   jwt.NewNumericDate(now.Add(5 * time.Minute)),
		ID:       randomString(16),
	}
	return jwt.Signed(a.signer).Claims(c).Serialize()
}

// parsePrivateKey reads a PEM private key: PKCS #8, SEC 1 (EC) or PKCS #1
// (RSA).
func parsePrivateKey(s string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, fmt.Errorf("oauth: the private key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("oauth: the private key is neither PKCS #8, SEC 1 nor PKCS #1")
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
