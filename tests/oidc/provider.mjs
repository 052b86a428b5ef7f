// The OpenID Connect provider the sign-in tests run against: the certified
// `oidc-provider` package with its development login pages (any login name,
// any password). Clients: a Google-like one (client_secret_basic), an
// Apple-like one (its client secret is a JWT signed with an ES256 key made
// here, whose private half the app is given; answers by form_post), and an
// eID broker's.
//
// Environment: PORT (0: any), REDIRECT_BASE (the app's origin), APPLE_TEAM_ID.
// Prints one JSON line once it accepts requests: {"issuer", "apple_key"}
// (the Apple key, PKCS#8 PEM).
import { createServer } from 'node:net';
import { exportPKCS8, generateKeyPair, jwtVerify } from 'jose';
import Provider from 'oidc-provider';

const { REDIRECT_BASE, APPLE_TEAM_ID } = process.env;
const port = Number(process.env.PORT) || await new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
});
const issuer = `http://127.0.0.1:${port}`;
const callback = (provider) => `${REDIRECT_BASE}/api/auth/${provider}`;

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'eds-google', client_secret: 'google-secret', redirect_uris: [callback('google')] },
    {
      client_id: 'eds-apple',
      client_secret: 'checked-as-a-signed-jwt',
      token_endpoint_auth_method: 'client_secret_post',
      redirect_uris: [callback('apple')],
    },
    {
      client_id: 'eds-eid',
      client_secret: 'eid-secret',
      redirect_uris: ['smart-id', 'mobile-id', 'id-card'].map(callback),
    },
  ],
  // PKCE on every authorization, not only public clients'.
  pkce: { required: () => true },
  // email and name in the ID token itself, as Apple sends them.
  conformIdTokenClaims: false,
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  findAccount: async (ctx, id) => ({
    accountId: id,
    // `unverified-...` logins have an address the provider has not verified;
    // `unstated-...` logins one it says nothing of.
    claims: async () => ({
      sub: id,
      email: `${id}@example.com`,
      ...(id.startsWith('unstated') ? {} : { email_verified: !id.startsWith('unverified') }),
      name: `Person ${id}`,
    }),
  }),
});

const appleKey = await generateKeyPair('ES256', { extractable: true });
const applePublicKey = appleKey.publicKey;
const compareSecret = provider.Client.prototype.compareClientSecret;
provider.Client.prototype.compareClientSecret = async function compare(actual) {
  if (this.clientId !== 'eds-apple') {
    return compareSecret.call(this, actual);
  }
  // Apple's scheme: the secret is a JWT the client signs with its key.
  try {
    await jwtVerify(actual, applePublicKey, {
      algorithms: ['ES256'], issuer: APPLE_TEAM_ID, audience: issuer, subject: this.clientId,
    });
    return true;
  } catch {
    return false;
  }
};

const applePem = await exportPKCS8(appleKey.privateKey);
provider.listen(port, '127.0.0.1', () => {
  console.log(JSON.stringify({ issuer, apple_key: applePem }));
});
