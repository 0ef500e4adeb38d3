// The authorization server of the sign-in test bed: panva's oidc-provider
// (a certified OpenID Provider) with dynamic registration, PKCE, resource
// indicators issuing JWT access tokens for the MCP server's resource,
// rotating refresh tokens, revocation, and DPoP as its defaults have it.
// offline_access is granted only with prompt=consent (OIDC Core §11): the
// provider's own rule, left as it is.
//
// The interaction (login and consent) approves at once, as a person who
// always says yes would: the browser is sent straight back to the
// provider. With OIDC_DEVICE, it offers sign-in with a code too: its own
// pages at /device take the user code (a form with an xsrf field) and ask
// to confirm it, then the same interaction approves, then a success page.
// Started by internal/peers.OIDCBed; environment:
//   PEERS_NODE_MODULES  the cache's node_modules (absolute)
//   OIDC_PORT           the port to listen on (127.0.0.1)
//   OIDC_ISSUER         the issuer, http://localhost:OIDC_PORT
//   OIDC_RESOURCE       the MCP server's resource (its URL)
//   OIDC_ACCESS_TTL     access token lifetime, seconds
//   OIDC_REFRESH_TTL    refresh token lifetime, seconds
//   OIDC_NO_REFRESH     1: issue no refresh token at all
//   OIDC_DEVICE         1: offer the device authorization grant (RFC 8628)
import http from 'node:http';
import crypto from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`provider.mjs: ${name} not set`);
  return v;
};
const nodeModules = env('PEERS_NODE_MODULES');
const port = Number(env('OIDC_PORT'));
const issuer = env('OIDC_ISSUER');
const resource = env('OIDC_RESOURCE');
const accessTTL = Number(env('OIDC_ACCESS_TTL'));
const refreshTTL = Number(env('OIDC_REFRESH_TTL'));
const noRefresh = process.env.OIDC_NO_REFRESH === '1';
const device = process.env.OIDC_DEVICE === '1';

const { default: Provider } = await import(pathToFileURL(path.join(nodeModules, 'oidc-provider', 'lib', 'index.js')).href);

const signingKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

const provider = new Provider(issuer, {
  jwks: { keys: [{ ...signingKey, kid: 'bed', use: 'sig', alg: 'RS256' }] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  scopes: ['openid', 'offline_access'],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    // The provider's own user code pages (input, confirm, success), as
    // they come.
    deviceFlow: { enabled: device },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
        return {
          scope: 'mcp:tools',
          audience: resource,
          accessTokenTTL: accessTTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  clientDefaults: {
    grant_types: ['authorization_code', 'refresh_token', ...(device ? ['urn:ietf:params:oauth:grant-type:device_code'] : [])],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  },
  rotateRefreshToken: true,
  // The provider's own rule (offline_access granted, which needs
  // prompt=consent), unless told to issue none.
  issueRefreshToken: (ctx, client, code) =>
    !noRefresh && client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
  ttl: {
    AccessToken: accessTTL,
    RefreshToken: refreshTTL,
    Grant: refreshTTL,
    Session: refreshTTL,
    Interaction: 600,
    AuthorizationCode: 60,
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
});

// approve answers an interaction as a person who always agrees: signed in
// as "bed-user", and every scope, claim and resource scope asked for
// granted.
async function approve(req, res) {
  const { prompt, params, session, grantId } = await provider.interactionDetails(req, res);
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'bed-user' } };
  } else {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

// The provider's own account of each token request, for tests to read:
// "grant success refresh_token"; "grant revoked GRANT" then "grant error
// invalid_grant grant request is invalid (refresh token already used)"
// when a spent refresh token is presented again, which revokes the whole
// grant.
provider.on('grant.success', (ctx) => console.log('grant success', ctx.oidc.params.grant_type));
provider.on('grant.error', (ctx, err) => console.log('grant error', err.error, err.error_description, err.error_detail ? `(${err.error_detail})` : ''));
provider.on('grant.revoked', (ctx, grantId) => console.log('grant revoked', grantId));

const handle = provider.callback();
http.createServer((req, res) => {
  console.log(req.method, req.url.split('?')[0]);
  if (req.url.startsWith('/interaction/')) {
    approve(req, res).catch((err) => {
      console.error('interaction:', err);
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  handle(req, res);
}).listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
