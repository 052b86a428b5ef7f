// The official MCP TypeScript SDK as an AI client of eds (tests/api/mcp_sdk.rs).
//
// Usage: node client.mjs MCP_URL CALLS_JSON [CLIENT_METADATA_URL]
// Given only the MCP URL, the SDK finds the authorization server, registers
// (or presents CLIENT_METADATA_URL as its client ID metadata document) and
// sends the person to sign in: the authorization URL is written to stdout as
// {"authorize": URL}, and the URL the browser came back to is read from stdin.
// Then it connects again with the token, lists the tools, calls each of
// CALLS_JSON ([[tool name, arguments], ...]) and writes {"result": ...}.
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [mcpUrl, callsJson, metadataUrl] = process.argv.slice(2);
const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const REDIRECT = 'https://client.example/callback';

/** Keeps what the SDK hands over in memory; the browser's part is the test's. */
class TestProvider {
  saved = {};
  clientMetadataUrl = metadataUrl;
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: 'MCP SDK test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(client) { this.saved.client = client; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
  async redirectToAuthorization(url) {
    say({ authorize: url.href });
    const { value } = await input.next();
    this.returnedTo = new URL(value);
  }
}

const provider = new TestProvider();
const transport = () => new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
const client = new Client({ name: 'eds-sdk-test', version: '1.0.0' });
try {
  await client.connect(transport());
  throw new Error('the server answered without a token');
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
}
const code = provider.returnedTo.searchParams.get('code');
if (!code) throw new Error(`no code in ${provider.returnedTo}`);
const authorized = transport();
await authorized.finishAuth(code);
await client.connect(authorized);

const tools = await client.listTools();
const calls = [];
for (const [name, args] of JSON.parse(callsJson)) {
  const result = await client.callTool({ name, arguments: args });
  const text = result.content.filter((part) => part.type === 'text').map((part) => part.text).join('');
  calls.push({ tool: name, isError: result.isError ?? false, answer: JSON.parse(text) });
}
say({
  result: {
    client_id: provider.saved.client.client_id,
    scope: provider.saved.tokens.scope ?? null,
    server: client.getServerVersion()?.name,
    tools: tools.tools.map((tool) => tool.name),
    calls,
  },
});
await client.close();
process.exit(0);
