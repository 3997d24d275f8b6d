// An OAuth-protected MCP server built on the TypeScript SDK's auth support, for the promptgate tests.
//
// One process is both the authorization server (the SDK's `mcpAuthRouter`: metadata, /authorize,
// /token, /register, /revoke, and the RFC 9728 protected-resource metadata) and the resource server
// (`/mcp`, behind the SDK's `requireBearerAuth`, which answers 401 `invalid_token` and 403
// `insufficient_scope` with `WWW-Authenticate: Bearer ... resource_metadata=...`). The provider is
// written here because the SDK's demo one neither renews nor revokes tokens.
//
// Usage: node ts_auth_peer.mjs PORT [ACCESS_TOKEN_SECONDS] [--cimd] [--consent-page]
//   --cimd          the metadata says `client_id_metadata_document_supported`, and a client id that
//                   is an https (or loopback http) URL is read from the document found there
//   --consent-page  /authorize shows a page with an "Allow" button instead of consenting at once
//
// Scopes: `notes:read` lets a client list tools and call `whoami`; `add_note` asks for
// `notes:write` too (403 `insufficient_scope` without it), so a client has to step up.
//
// Test hooks (not part of any spec): POST /test/revoke-access-tokens forgets every access token
// issued so far; GET /test/stats counts codes, refreshes, registrations, revocations and client
// metadata documents fetched; POST /test/misbehave {"as": ...} makes the metadata wrong in one way a
// client must refuse: "no-s256" (no PKCE S256), "private-endpoints" (the token endpoint on a
// private address), "other-resource" (the protected-resource metadata names another resource), or
// "none" to behave again.

import { randomUUID } from 'node:crypto';
import express from 'express';
import { mcpAuthRouter, createOAuthMetadata } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTokenError, InvalidClientError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const args = process.argv.slice(2);
const PORT = Number(args[0]);
const ACCESS_SECONDS = Number(args.find((a, i) => i > 0 && /^\d+$/.test(a)) ?? 3600);
const CIMD = args.includes('--cimd');
const CONSENT_PAGE = args.includes('--consent-page');
const BASE = `http://127.0.0.1:${PORT}`;
const ISSUER = new URL(`${BASE}/`);
const RESOURCE = new URL(`${BASE}/mcp`);
const READ = 'notes:read';
const WRITE = 'notes:write';

const stats = { codes: 0, refreshes: 0, registrations: 0, revocations: 0, metadata_documents: 0 };
const clients = new Map();
const codes = new Map();
const access = new Map();
const refresh = new Map();
const consents = new Map();
let misbehaviour = 'none';

// A client id that is a URL names its own metadata document (CIMD): fetched, and its `client_id`
// must be that URL exactly.
async function documentClient(clientId) {
  let url;
  try {
    url = new URL(clientId);
  } catch {
    return undefined;
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) return undefined;
  const answer = await fetch(url, { headers: { accept: 'application/json' } });
  if (!answer.ok) return undefined;
  const document = await answer.json();
  stats.metadata_documents += 1;
  if (document.client_id !== clientId || !Array.isArray(document.redirect_uris)) return undefined;
  if (document.token_endpoint_auth_method !== 'none') return undefined;
  return { ...document, client_id: clientId };
}

const clientsStore = {
  async getClient(clientId) {
    if (clients.has(clientId)) return clients.get(clientId);
    return CIMD ? documentClient(clientId) : undefined;
  },
  async registerClient(client) {
    stats.registrations += 1;
    clients.set(client.client_id, client);
    return client;
  },
};

function issue(clientId, scopes, resource) {
  const token = randomUUID();
  const renewal = randomUUID();
  const expiresAt = Math.floor(Date.now() / 1000) + ACCESS_SECONDS;
  access.set(token, { token, clientId, scopes, expiresAt, resource });
  refresh.set(renewal, { clientId, scopes, resource });
  return {
    access_token: token,
    token_type: 'bearer',
    expires_in: ACCESS_SECONDS,
    scope: scopes.join(' '),
    refresh_token: renewal,
  };
}

// The authorization response: the code, `state`, and `iss` (RFC 9207, promised in the metadata).
function grant(pending) {
  const code = randomUUID();
  codes.set(code, pending);
  const target = new URL(pending.params.redirectUri);
  target.searchParams.set('code', code);
  if (pending.params.state !== undefined) target.searchParams.set('state', pending.params.state);
  target.searchParams.set('iss', ISSUER.href);
  return target.href;
}

const provider = {
  clientsStore,
  async authorize(client, params, res) {
    if (!client.redirect_uris.includes(params.redirectUri)) {
      throw new InvalidGrantError('unregistered redirect_uri');
    }
    const scopes = params.scopes?.length ? params.scopes : [READ];
    const pending = { clientId: client.client_id, params: { ...params, scopes } };
    if (!CONSENT_PAGE) {
      res.redirect(grant(pending));
      return;
    }
    const id = randomUUID();
    consents.set(id, pending);
    res.type('html').send(
      `<!doctype html><title>TS notes: consent</title><h1>Allow ${client.client_name ?? 'this app'}?</h1>` +
        `<p>It asks for: ${scopes.join(', ')}</p>` +
        `<form method="post" action="/consent"><input type="hidden" name="id" value="${id}">` +
        `<button type="submit">Allow</button></form>`,
    );
  },
  async challengeForAuthorizationCode(_client, code) {
    const pending = codes.get(code);
    if (!pending) throw new InvalidGrantError('unknown authorization code');
    return pending.params.codeChallenge;
  },
  async exchangeAuthorizationCode(client, code, _verifier, _redirectUri, resource) {
    const pending = codes.get(code);
    if (!pending || pending.clientId !== client.client_id) throw new InvalidGrantError('unknown authorization code');
    codes.delete(code);
    // RFC 8707: a token is only issued for this server, and the request must say so.
    const asked = resource?.href ?? pending.params.resource?.href;
    if (asked !== RESOURCE.href) throw new InvalidGrantError('tokens are only issued for this resource');
    stats.codes += 1;
    return issue(client.client_id, pending.params.scopes, RESOURCE.href);
  },
  async exchangeRefreshToken(client, token, scopes, resource) {
    const held = refresh.get(token);
    if (!held || held.clientId !== client.client_id) throw new InvalidGrantError('unknown refresh token');
    if (resource && resource.href !== RESOURCE.href) throw new InvalidGrantError('another resource');
    // Refresh tokens rotate, as the spec asks for public clients.
    refresh.delete(token);
    stats.refreshes += 1;
    return issue(client.client_id, scopes?.length ? scopes : held.scopes, held.resource);
  },
  async verifyAccessToken(token) {
    const held = access.get(token);
    if (!held) throw new InvalidTokenError('unknown or revoked token');
    return { token, clientId: held.clientId, scopes: held.scopes, expiresAt: held.expiresAt, resource: new URL(held.resource) };
  },
  async revokeToken(client, request) {
    stats.revocations += 1;
    const held = refresh.get(request.token) ?? access.get(request.token);
    if (held && held.clientId !== client.client_id) throw new InvalidClientError('not your token');
    refresh.delete(request.token);
    access.delete(request.token);
  },
};

function mcpServer() {
  const server = new McpServer({ name: 'promptgate-ts-auth-peer', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Say which server answered.' }, async () => ({
    content: [{ type: 'text', text: 'ts-auth-peer' }],
  }));
  server.registerTool('add_note', { description: 'Keep a note (needs notes:write).' }, async () => ({
    content: [{ type: 'text', text: 'note kept' }],
  }));
  return server;
}

const app = express();
const limitsOff = { rateLimit: false };
const router = {
  provider,
  issuerUrl: ISSUER,
  resourceServerUrl: RESOURCE,
  scopesSupported: [READ, WRITE],
  resourceName: 'TS notes',
  authorizationOptions: limitsOff,
  tokenOptions: limitsOff,
  clientRegistrationOptions: limitsOff,
  revocationOptions: limitsOff,
};
// The SDK's metadata, plus what this authorization server also does.
app.get('/.well-known/oauth-authorization-server', (_req, res) => {
  const metadata = createOAuthMetadata(router);
  metadata.authorization_response_iss_parameter_supported = true;
  metadata.revocation_endpoint_auth_methods_supported = ['client_secret_post', 'none'];
  if (CIMD) metadata.client_id_metadata_document_supported = true;
  if (misbehaviour === 'no-s256') delete metadata.code_challenge_methods_supported;
  if (misbehaviour === 'private-endpoints') metadata.token_endpoint = 'http://10.20.30.40/token';
  res.json(metadata);
});
app.get('/.well-known/oauth-protected-resource/mcp', (_req, res, next) => {
  if (misbehaviour !== 'other-resource') return next();
  res.json({ resource: `${BASE}/elsewhere`, authorization_servers: [ISSUER.href], scopes_supported: [READ, WRITE] });
});
app.use(mcpAuthRouter(router));
app.post('/consent', express.urlencoded({ extended: false }), (req, res) => {
  const pending = consents.get(req.body.id);
  consents.delete(req.body.id);
  if (!pending) return res.status(400).send('no such consent');
  res.redirect(grant(pending));
});

const metadataUrl = `${BASE}/.well-known/oauth-protected-resource/mcp`;
const readAuth = requireBearerAuth({ verifier: provider, requiredScopes: [READ], resourceMetadataUrl: metadataUrl, expectedResource: RESOURCE });
const writeAuth = requireBearerAuth({ verifier: provider, requiredScopes: [READ, WRITE], resourceMetadataUrl: metadataUrl, expectedResource: RESOURCE });
const writing = (body) => body?.method === 'tools/call' && body?.params?.name === 'add_note';

app.post(
  '/mcp',
  express.json(),
  readAuth,
  (req, res, next) => (writing(req.body) ? writeAuth(req, res, next) : next()),
  async (req, res) => {
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  },
);
app.all('/mcp', (_req, res) => res.status(405).set('allow', 'POST').end());

app.post('/test/revoke-access-tokens', (_req, res) => {
  access.clear();
  res.json({ revoked: true });
});
app.get('/test/stats', (_req, res) => res.json(stats));
app.post('/test/misbehave', express.json(), (req, res) => {
  misbehaviour = req.body.as;
  res.json({ misbehaviour });
});

app.listen(PORT, '127.0.0.1');
