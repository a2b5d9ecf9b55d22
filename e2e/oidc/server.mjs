// A real OpenID Connect provider (the npm package oidc-provider) on loopback,
// for sparkgate's end-to-end tests. Not for production: development
// interactions (any password), development signing keys, in-memory storage.
//
// Usage: node server.mjs [port]
// Environment:
//   OIDC_PORT                       port when not given as argv (default 9400)
//   OIDC_CLIENT_SECRET              secret of the web client "sparkgate" (required)
//   OIDC_REDIRECT_URIS              comma-separated redirect URIs of "sparkgate"
//   OIDC_POST_LOGOUT_REDIRECT_URIS  comma-separated post-logout redirect URIs
//   OIDC_API_CLIENT_SECRET          secret of the client_credentials client
//                                   "api-client" (default: OIDC_CLIENT_SECRET)
//   OIDC_AUDIENCE                   audience of JWT access tokens (default sparkgate);
//                                   the resource indicator is urn:<audience>
//
// Test users (login = user name, any password): alice (analysts), bob (eng),
// carol (spark-admins), dave (no groups). Tokens for api-client carry the
// identity svc-reporter in group analysts; tokens for api-client-eng (same
// secret) carry svc-builder in group eng.
import http from 'node:http';
import Provider from 'oidc-provider';

const port = Number(process.argv[2] || process.env.OIDC_PORT || 9400);
const issuer = `http://127.0.0.1:${port}`;
const secret = process.env.OIDC_CLIENT_SECRET;
if (!secret) {
  console.error('OIDC_CLIENT_SECRET is required');
  process.exit(2);
}
const list = (v) => (v || '').split(',').map((s) => s.trim()).filter(Boolean);
const audience = process.env.OIDC_AUDIENCE || 'sparkgate';
// Resource indicators must be absolute URIs (RFC 8707); the token's aud is
// the plain audience name.
const resource = `urn:${audience}`;

const users = {
  alice: ['analysts'],
  bob: ['eng'],
  carol: ['spark-admins'],
  dave: [],
};

function account(id) {
  return {
    accountId: id,
    async claims() {
      return {
        sub: id,
        name: id,
        preferred_username: id,
        email: `${id}@example.test`,
        email_verified: true,
        groups: users[id] || [],
      };
    },
  };
}

const configuration = {
  clients: [
    {
      client_id: 'sparkgate',
      client_secret: secret,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: list(process.env.OIDC_REDIRECT_URIS),
      post_logout_redirect_uris: list(process.env.OIDC_POST_LOGOUT_REDIRECT_URIS),
    },
    ...['api-client', 'api-client-eng'].map((id) => ({
      client_id: id,
      client_secret: process.env.OIDC_API_CLIENT_SECRET || secret,
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    })),
  ],
  pkce: { methods: ['S256'], required: () => true },
  scopes: ['openid', 'offline_access', 'profile', 'email', 'groups'],
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username'],
    email: ['email', 'email_verified'],
    groups: ['groups'],
  },
  // Puts profile, email and groups into the ID token, not only into /me.
  conformIdTokenClaims: false,
  findAccount: async (ctx, id) => account(id),
  // Issue a refresh token whenever the client may use the grant; by default
  // oidc-provider drops offline_access unless the login asked for consent.
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  // OIDC_ROTATE_REFRESH_TOKEN=1: every refresh spends the refresh token and
  // issues a new one; using a spent one is refused (and ends the grant).
  ...(process.env.OIDC_ROTATE_REFRESH_TOKEN === '1' ? { rotateRefreshToken: true } : {}),
  extraTokenClaims: async (ctx, token) => {
    if (token.kind === 'ClientCredentials') {
      if (token.clientId === 'api-client-eng') {
        return { preferred_username: 'svc-builder', groups: ['eng'] };
      }
      return { preferred_username: 'svc-reporter', groups: ['analysts'] };
    }
    return undefined;
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // Only the API client gets JWT access tokens by default; browser logins
      // keep opaque tokens so /me (userinfo) keeps working for them.
      defaultResource: (ctx, client) => (client && client.clientId.startsWith('api-client') ? resource : undefined),
      useGrantedResource: () => false,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) {
          throw new Error(`unknown resource ${indicator}`);
        }
        return { audience, scope: 'openid', accessTokenFormat: 'jwt', accessTokenTTL: 600 };
      },
    },
  },
  cookies: { keys: ['sparkgate-e2e-cookie-key-not-secret'] },
  ttl: {
    AccessToken: 600,
    ClientCredentials: 600,
    // OIDC_ID_TOKEN_TTL (seconds) sets how long ID tokens live: e2e tests
    // shorten it to see sessions renewed with the refresh token; make bench
    // lengthens it so that no session is renewed during its runs.
    IdToken: Number(process.env.OIDC_ID_TOKEN_TTL || 600),
    RefreshToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
};

const provider = new Provider(issuer, configuration);
provider.on('server_error', (ctx, err) => console.error('server_error', err));
const server = http.createServer(provider.callback());
server.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
