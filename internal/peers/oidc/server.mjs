// The MCP server of the sign-in test bed, built on the official TypeScript
// SDK (@modelcontextprotocol/sdk): Streamable HTTP, stateless, behind the
// SDK's bearer-auth middleware. It accepts only `Authorization: Bearer`
// (requireBearerAuth refuses any other scheme, DPoP included), verifies
// the JWT access token against the provider's JWKS (issuer, audience =
// this resource, expiry), and publishes its RFC 9728 protected-resource
// metadata naming the provider (the SDK's mcpAuthMetadataRouter).
// Started by internal/peers.OIDCBed; environment:
//   PEERS_NODE_MODULES  the cache's node_modules (absolute)
//   MCP_PORT            the port to listen on (127.0.0.1)
//   MCP_RESOURCE        this server's resource, http://localhost:MCP_PORT/mcp
//   OIDC_ISSUER         the provider's issuer
//
// Tools: whoami, which answers with the token's subject and scopes.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`server.mjs: ${name} not set`);
  return v;
};
const nodeModules = env('PEERS_NODE_MODULES');
const port = Number(env('MCP_PORT'));
const resource = env('MCP_RESOURCE');
const issuer = env('OIDC_ISSUER');

const load = (...p) => import(pathToFileURL(path.join(nodeModules, ...p)).href);
const sdk = (p) => load('@modelcontextprotocol', 'sdk', 'dist', 'esm', p);
const { default: express } = await load('express', 'index.js');
const jose = await load('jose', 'dist', 'webapi', 'index.js');
const { McpServer } = await sdk('server/mcp.js');
const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
const { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } = await sdk('server/auth/router.js');
const { requireBearerAuth } = await sdk('server/auth/middleware/bearerAuth.js');
const { InvalidTokenError } = await sdk('server/auth/errors.js');

const asMetadata = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
const jwks = jose.createRemoteJWKSet(new URL(asMetadata.jwks_uri));

const verifier = {
  async verifyAccessToken(token) {
    let payload;
    try {
      ({ payload } = await jose.jwtVerify(token, jwks, { issuer, audience: resource, typ: 'at+jwt' }));
    } catch (err) {
      throw new InvalidTokenError(`token refused: ${err.code || err.message}`);
    }
    return {
      token,
      clientId: payload.client_id,
      scopes: (payload.scope || '').split(' ').filter(Boolean),
      expiresAt: payload.exp,
      resource: new URL(resource),
      extra: { sub: payload.sub },
    };
  },
};

const app = express();
app.use(express.json());
app.use(mcpAuthMetadataRouter({
  oauthMetadata: asMetadata,
  resourceServerUrl: new URL(resource),
  scopesSupported: ['mcp:tools'],
  resourceName: 'mcpvisor sign-in test bed',
}));
const auth = requireBearerAuth({
  verifier,
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(resource)),
});

app.post('/mcp', auth, async (req, res) => {
  console.log('POST /mcp', req.body?.method);
  const server = new McpServer({ name: 'oidc-bed', version: '1.0.0' });
  server.registerTool('whoami', { description: 'The token\'s subject and scopes' }, async (extra) => ({
    content: [{ type: 'text', text: JSON.stringify({ sub: extra.authInfo?.extra?.sub, scopes: extra.authInfo?.scopes }) }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
for (const method of ['get', 'delete']) {
  app[method]('/mcp', auth, (req, res) => res.status(405).set('Allow', 'POST').end());
}

app.listen(port, '127.0.0.1', () => console.log(`MCP server listening on ${resource}`));
