// A strict OAuth 2.1 client (oauth4webapi) through eds's authorization server
// (tests/api/mcp_sdk.rs).
//
// Usage: node strict_oauth.mjs ISSUER CLIENT_ID RESOURCE REDIRECT_URI
// Discovery (RFC 8414), PKCE S256, the authorization URL written to stdout as
// {"authorize": URL}, the URL the browser came back to read from stdin and
// checked as RFC 9207 says (`iss` must be there and equal the issuer), the code
// exchanged; writes {"result": ...}.
import readline from 'node:readline';
import * as oauth from 'oauth4webapi';

const [issuerUrl, clientId, resource, redirectUri] = process.argv.slice(2);
const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
// the test server speaks plain http on 127.0.0.1
const insecure = { [oauth.allowInsecureRequests]: true };

const issuer = new URL(issuerUrl);
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
const client = { client_id: clientId };
const verifier = oauth.generateRandomCodeVerifier();
const state = oauth.generateRandomState();
const authorize = new URL(as.authorization_endpoint);
for (const [name, value] of Object.entries({
  client_id: clientId,
  redirect_uri: redirectUri,
  response_type: 'code',
  code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  state,
  resource,
})) authorize.searchParams.set(name, value);
say({ authorize: authorize.href });
const returnedTo = new URL((await input.next()).value);

// the same answer without `iss` must be refused: the server advertised it
const withoutIss = new URL(returnedTo);
withoutIss.searchParams.delete('iss');
let refusedWithoutIss = false;
try {
  oauth.validateAuthResponse(as, client, withoutIss, state);
} catch {
  refusedWithoutIss = true;
}
const params = oauth.validateAuthResponse(as, client, returnedTo, state);
const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, {
  additionalParameters: { resource },
  ...insecure,
});
const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
say({
  result: {
    iss_supported: as.authorization_response_iss_parameter_supported ?? false,
    refused_without_iss: refusedWithoutIss,
    token_type: tokens.token_type,
    access_token: tokens.access_token,
    scope: tokens.scope ?? null,
  },
});
