package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/outbound"
)

// Token endpoint client authentication methods (RFC 7591 §2, RFC 7523).
const (
	AuthBasic      = "client_secret_basic"
	AuthPost       = "client_secret_post"
	AuthNone       = "none"
	AuthPrivateJWT = "private_key_jwt"
)

// Grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantRefreshToken      = "refresh_token"
	GrantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
)

// tokenResponse is a token endpoint's success answer (RFC 6749 §5.1, RFC
// 8693 §2.2.1).
type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in,omitempty"`
	RefreshToken    string `json:"refresh_token,omitempty"`
	Scope           string `json:"scope,omitempty"`
	IssuedTokenType string `json:"issued_token_type,omitempty"`
}

// tokenError is a token endpoint's error answer (RFC 6749 §5.2).
type tokenError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// endpointClient is who talks to a token endpoint: the client identity and
// how it authenticates.
type endpointClient struct {
	client   Client
	audience string       // the assertion's aud for private_key_jwt
	signer   *assertioner // private_key_jwt
	dpop     *dpopKey     // proofs on the request, when DPoP is on
}

// clientRequest is a POST of form to endpoint, authenticated as ec's
// client: client_secret_basic, _post, private_key_jwt (a fresh assertion)
// or none (client_id only); with a DPoP proof when DPoP is on. Made anew
// for each attempt, so no assertion or proof is sent twice.
func (a *Authorizer) clientRequest(ctx context.Context, endpoint string, ec endpointClient, form url.Values) (*http.Request, error) {
	form = cloneValues(form)
	switch ec.client.AuthMethod {
	case AuthPost:
		form.Set("client_id", ec.client.ID)
		form.Set("client_secret", ec.client.Secret)
	case AuthPrivateJWT:
		assertion, err := ec.signer.sign(ec.client.ID, ec.audience, a.now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", ec.client.ID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	case AuthBasic:
	default: // none
		if ec.client.ID != "" {
			form.Set("client_id", ec.client.ID)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if ec.client.AuthMethod == AuthBasic {
		// RFC 6749 §2.3.1: both parts form-urlencoded first.
		req.SetBasicAuth(url.QueryEscape(ec.client.ID), url.QueryEscape(ec.client.Secret))
	}
	if ec.dpop != nil {
		proof, err := ec.dpop.proof(http.MethodPost, endpoint, "", a.nonce(endpoint), a.now())
		if err != nil {
			return nil, err
		}
		req.Header.Set("DPoP", proof)
	}
	return req, nil
}

// plainRequest POSTs form to endpoint with the client's authentication
// and wants a 2xx with any body (RFC 7009 revocation).
func (a *Authorizer) plainRequest(ctx context.Context, endpoint string, ec endpointClient, form url.Values) error {
	req, err := a.clientRequest(ctx, endpoint, ec, form)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", outbound.Where(endpoint), unwrapURL(err))
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := &endpointError{where: outbound.Where(endpoint), status: resp.StatusCode}
		_ = json.Unmarshal(b, &e.body)
		return e
	}
	return nil
}

// endpointError is an authorization server's refusal of a plain request
// (revocation): its HTTP status and OAuth error code, if it gave one.
type endpointError struct {
	where  string
	status int
	body   tokenError
}

func (e *endpointError) Error() string {
	msg := fmt.Sprintf("%s answered HTTP %d", e.where, e.status)
	if e.body.Code != "" {
		msg += " " + e.body.Code
	}
	return msg
}

// tokenRequest POSTs form to endpoint with the client's authentication and
// returns the token it issues. A DPoP server's use_dpop_nonce answer is
// retried once with its nonce.
func (a *Authorizer) tokenRequest(ctx context.Context, endpoint string, ec endpointClient, form url.Values) (*tokenResponse, error) {
	for attempt := 0; ; attempt++ {
		req, err := a.clientRequest(ctx, endpoint, ec, form)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrToken, err)
		}
		resp, err := a.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrToken, outbound.Where(endpoint), unwrapURL(err))
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata+1))
		resp.Body.Close()
		if n := resp.Header.Get("DPoP-Nonce"); n != "" && ec.dpop != nil {
			a.setNonce(endpoint, n)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrToken, outbound.Where(endpoint), err)
		}
		if resp.StatusCode != http.StatusOK {
			var te tokenError
			_ = json.Unmarshal(b, &te)
			if te.Code == "use_dpop_nonce" && ec.dpop != nil && attempt == 0 && resp.Header.Get("DPoP-Nonce") != "" {
				continue
			}
			if te.Code == "" {
				return nil, fmt.Errorf("%w: %s answered HTTP %d", ErrToken, outbound.Where(endpoint), resp.StatusCode)
			}
			msg := fmt.Sprintf("%s: %s", outbound.Where(endpoint), te.Code)
			if te.Description != "" {
				msg += " (" + a.redact(te.Description) + ")"
			}
			return nil, &TokenError{Code: te.Code, msg: msg}
		}
		var tr tokenResponse
		if err := json.Unmarshal(b, &tr); err != nil {
			return nil, fmt.Errorf("%w: %s: the answer is not a token response", ErrToken, outbound.Where(endpoint))
		}
		if tr.AccessToken == "" {
			return nil, fmt.Errorf("%w: %s issued no access token", ErrToken, outbound.Where(endpoint))
		}
		return &tr, nil
	}
}

// TokenError is a token endpoint's refusal: invalid_grant (an expired or
// revoked refresh token), invalid_client, ...
type TokenError struct {
	Code string
	msg  string
}

func (e *TokenError) Error() string { return ErrToken.Error() + ": " + e.msg }

func (e *TokenError) Unwrap() error { return ErrToken }

// toToken makes a Token of a token response for resource from issuer;
// requested scopes stand in for an answer that names none (RFC 6749 §5.1).
func (a *Authorizer) toToken(tr *tokenResponse, issuer, resource string, requested []string, previous *Token) (*Token, error) {
	typ := tr.TokenType
	switch {
	case strings.EqualFold(typ, "bearer"):
		typ = "Bearer"
	case strings.EqualFold(typ, "dpop"):
		typ = "DPoP"
	case typ == "" || strings.EqualFold(typ, "n_a"):
		typ = "Bearer"
	default:
		return nil, fmt.Errorf("%w: unsupported token type %q", ErrToken, typ)
	}
	t := &Token{Access: tr.AccessToken, Refresh: tr.RefreshToken, Type: typ, Issuer: issuer, Resource: resource, Scopes: requested}
	if tr.Scope != "" {
		t.Scopes = strings.Fields(tr.Scope)
	}
	t.Issued = a.now()
	if tr.ExpiresIn > 0 {
		t.Expiry = t.Issued.Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	if t.Refresh == "" && previous != nil {
		t.Refresh = previous.Refresh // no rotation: the old one still serves
	}
	return t, nil
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}
