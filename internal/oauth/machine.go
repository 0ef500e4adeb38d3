package oauth

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// Token types of RFC 8693 and the identity assertion grant.
const (
	tokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG   = "urn:ietf:params:oauth:token-type:id-jag"
)

// mayObtain reports whether a machine grant may be tried now: not after
// one was refused (a refused assertion or secret stays refused until the
// operator acts).
func (a *Authorizer) mayObtain() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.machineFailed
}

// obtain gets a token by the configured machine grant.
func (a *Authorizer) obtain(ctx context.Context) (*Token, error) {
	return a.obtainScopes(ctx, nil)
}

func (a *Authorizer) obtainScopes(ctx context.Context, extra []string) (*Token, error) {
	a.grant.Lock()
	defer a.grant.Unlock()
	a.mu.Lock()
	cur, failed := a.st.Token, a.machineFailed
	a.mu.Unlock()
	if cur != nil && extra == nil {
		return cur, nil // obtained meanwhile by another request
	}
	if failed {
		return nil, fmt.Errorf("%w: %s", ErrNeedsAuth, a.Status().Error)
	}
	t, err := a.machineGrant(ctx, extra)
	if err != nil {
		if refused(err) {
			// A refused secret or assertion stays refused: not asked again
			// until the operator acts.
			a.mu.Lock()
			a.machineFailed = true
			a.mu.Unlock()
		}
		return nil, a.failed("getting a token", err)
	}
	return t, a.setToken(t)
}

func (a *Authorizer) machineGrant(ctx context.Context, extra []string) (*Token, error) {
	d, err := a.discovery(ctx)
	if err != nil {
		return nil, err
	}
	m := d.Server
	if m.TokenEndpoint == "" {
		return nil, fmt.Errorf("%w: %s names no token endpoint", ErrDiscovery, m.Issuer)
	}
	scopes := a.scopes(d, extra)
	form := url.Values{"resource": {d.Resource}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	var ec endpointClient
	switch {
	case a.cfg.GrantType == GrantClientCredentials:
		if a.cfg.ClientID == "" {
			return nil, fmt.Errorf("%w: the client_credentials grant needs oauth.clientId", ErrUnsupported)
		}
		form.Set("grant_type", GrantClientCredentials)
		if ec, err = a.endpointClient(ctx, d); err != nil {
			return nil, err
		}
	case a.cfg.Assertion != "":
		// Workload identity: the workload's own JWT is the grant; the
		// client is public unless a client id is configured.
		form.Set("grant_type", GrantJWTBearer)
		form.Set("assertion", a.cfg.Assertion)
		if a.cfg.ClientID != "" {
			if ec, err = a.endpointClient(ctx, d); err != nil {
				return nil, err
			}
		}
	default:
		assertion, err := a.identityAssertion(ctx, d)
		if err != nil {
			return nil, err
		}
		form.Set("grant_type", GrantJWTBearer)
		form.Set("assertion", assertion)
		if ec, err = a.endpointClient(ctx, d); err != nil {
			return nil, err
		}
	}
	tr, err := a.tokenRequest(ctx, m.TokenEndpoint, ec, form)
	if err != nil {
		return nil, err
	}
	return a.toToken(tr, m.Issuer, d.Resource, scopes, nil)
}

// identityAssertion exchanges the configured ID token at the identity
// provider for an identity assertion authorization grant (ID-JAG) for d's
// authorization server and resource (RFC 8693; enterprise-managed
// authorization).
func (a *Authorizer) identityAssertion(ctx context.Context, d *Discovery) (string, error) {
	if a.cfg.IDPTokenEndpoint == "" || a.cfg.IDToken == "" {
		return "", fmt.Errorf("%w: enterprise-managed authorization needs the identity provider's token endpoint and an ID token", ErrUnsupported)
	}
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"requested_token_type": {tokenTypeIDJAG},
		"subject_token":        {a.cfg.IDToken},
		"subject_token_type":   {tokenTypeIDToken},
		"audience":             {d.Server.Issuer},
		"resource":             {d.Resource},
	}
	idp := endpointClient{client: Client{ID: a.cfg.IDPClientID, Secret: a.cfg.IDPClientSecret, AuthMethod: AuthNone}}
	if a.cfg.IDPClientSecret != "" {
		idp.client.AuthMethod = AuthPost
	}
	tr, err := a.tokenRequest(ctx, a.cfg.IDPTokenEndpoint, idp, form)
	if err != nil {
		return "", fmt.Errorf("exchanging the ID token at the identity provider: %w", err)
	}
	if tr.IssuedTokenType != "" && tr.IssuedTokenType != tokenTypeIDJAG {
		return "", fmt.Errorf("%w: the identity provider issued %q, not an identity assertion grant", ErrToken, tr.IssuedTokenType)
	}
	return tr.AccessToken, nil
}
