// A real OpenID provider for the OAuth tests: the certified `oidc-provider` package on a loopback port.
//
// usage: node idp.mjs NODE_MODULES PORT KEYS.json [--opaque]
// Two users (alice in "engineering", bob in "support"; password "<user>-password"), a confidential client
// ("team-service", client credentials and code), a public one ("team-cli", code with PKCE), the gateway's own
// client for introspection ("mcp-gateway"), and dynamic registration (for the official MCP client's flow).
// Access tokens are JWTs for whatever resource (RFC 8707) is asked, with the user's groups as a claim; with
// --opaque they are opaque (RFC 7662 introspection). A token whose request asked for the scope "mcp:short" lives
// 1 second. The login and consent screens are two POST endpoints the tests drive:
//   GET  /interaction/:uid          -> {"prompt": "login" | "consent", ...}
//   POST /interaction/:uid/login    (username, password)
//   POST /interaction/:uid/confirm  (grants what was asked)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, port, keysFile, ...rest] = process.argv.slice(2);
// Installed into a cache folder by the tests (oauth/idptest.py), not next to this script.
const { default: Provider } = await import(pathToFileURL(join(modules, 'oidc-provider', 'lib', 'index.js')).href);
const opaque = rest.includes('--opaque');
const issuer = `http://127.0.0.1:${port}`;
const keys = JSON.parse(readFileSync(keysFile, 'utf8'));

const USERS = {
  alice: { password: 'alice-password', groups: ['engineering'], email: 'alice@example.com' },
  bob: { password: 'bob-password', groups: ['support'], email: 'bob@example.com' },
};
const RESOURCE_SCOPES = 'mcp:tools mcp:admin mcp:short';
const REDIRECT = 'http://127.0.0.1:9/callback';

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'team-service',
      client_secret: 'team-service-secret-0123456789',
      grant_types: ['client_credentials', 'authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: `openid offline_access ${RESOURCE_SCOPES}`,
    },
    {
      client_id: 'team-cli',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      scope: `openid offline_access ${RESOURCE_SCOPES}`,
    },
    {
      client_id: 'mcp-gateway',
      client_secret: 'mcp-gateway-secret-0123456789',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: keys,
  cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:admin', 'mcp:short'],
  claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => ({
        scope: RESOURCE_SCOPES,
        audience: resourceIndicator,
        accessTokenTTL: `${ctx.oidc.params?.scope ?? ''}`.split(' ').includes('mcp:short') ? 1 : 600,
        accessTokenFormat: opaque ? 'opaque' : 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  async findAccount(ctx, id) {
    const user = USERS[id];
    if (!user) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, email: user.email, groups: user.groups }) };
  },
  async extraTokenClaims(ctx, token) {
    const user = token.accountId ? USERS[token.accountId] : undefined;
    return user ? { groups: user.groups } : undefined;
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
  },
});
provider.proxy = false;

async function form(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

provider.use(async (ctx, next) => {
  const match = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(ctx.path);
  if (!match) return next();
  const [, , step] = match;
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (ctx.method === 'GET' && !step) {
    ctx.body = { uid: details.uid, prompt: details.prompt.name, client_id: details.params.client_id };
    return undefined;
  }
  if (ctx.method !== 'POST') return next();
  let result;
  if (step === 'login') {
    const body = await form(ctx.req);
    const user = USERS[body.get('username')];
    if (!user || user.password !== body.get('password')) {
      ctx.status = 401;
      ctx.body = { error: 'wrong user name or password' };
      return undefined;
    }
    result = { login: { accountId: body.get('username') } };
  } else {
    const { prompt: { details: missing }, params, session } = details;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    if (missing.missingResourceScopes) {
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
    }
    result = { consent: { grantId: await grant.save() } };
  }
  const redirectTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
  ctx.status = 303;
  ctx.redirect(redirectTo);
  return undefined;
});

provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(`listening ${issuer}\n`);
});
