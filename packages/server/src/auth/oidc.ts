import * as client from 'openid-client';
import type { SsoConnectionsTable } from '../db/schema.js';

/**
 * OpenID Connect relying party with `openid-client` (people-and-sign-in.md, Sign-in; design
 * record 022): discovery, authorization code flow with PKCE (S256), `state` and `nonce`. The
 * issuer is reached with the process's ordinary TLS trust (system CAs plus
 * `NODE_EXTRA_CA_CERTS`); identity providers often live on private networks, so the webhook
 * SSRF guard does not apply.
 */

/**
 * The associated data sealing a connection's client secret to its row: the secret is sealed with
 * the secrets key like webhook signing secrets (design record 015).
 */
export function clientSecretBinding(connectionId: string): string {
  return `sso_connection:${connectionId}`;
}

/** What the start of a sign-in keeps for its callback. */
export interface PendingSignIn {
  state: string;
  nonce: string;
  codeVerifier: string;
  authorizationUrl: URL;
}

/** The identity the provider asserted. */
export interface AssertedIdentity {
  subject: string;
  email: string;
  emailVerified: boolean | undefined;
  name: string | null;
}

const discovered = new Map<string, Promise<client.Configuration>>();

/**
 * The provider's configuration (cached per connection version; a failed discovery is retried).
 * @throws Error when discovery fails.
 */
export function providerConfiguration(
  connection: SsoConnectionsTable,
  clientSecret: string,
): Promise<client.Configuration> {
  const key = `${connection.id}@${connection.updated_at}`;
  let configuration = discovered.get(key);
  if (!configuration) {
    configuration = client.discovery(
      new URL(connection.issuer),
      connection.client_id,
      clientSecret,
    );
    configuration.catch(() => discovered.delete(key));
    discovered.set(key, configuration);
  }
  return configuration;
}

/** Checks that `issuer` answers OpenID Connect discovery; the error says why when not. */
export async function discoverIssuer(issuer: string): Promise<void> {
  await client.discovery(new URL(issuer), 'vexil-discovery-check');
}

/** Starts a sign-in: fresh `state`, `nonce` and PKCE verifier, and the provider's address. */
export async function beginSignIn(
  configuration: client.Configuration,
  redirectUri: string,
): Promise<PendingSignIn> {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const authorizationUrl = client.buildAuthorizationUrl(configuration, {
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    response_type: 'code',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { state, nonce, codeVerifier, authorizationUrl };
}

/**
 * Finishes a sign-in: exchanges the code (checking `state`, `nonce` and PKCE), validates the ID
 * token, and reads the e-mail from it or, when absent, from the UserInfo endpoint.
 * @throws Error with the library's reason when any check fails.
 */
export async function finishSignIn(
  configuration: client.Configuration,
  callbackUrl: URL,
  pending: { state: string; nonce: string; codeVerifier: string },
): Promise<AssertedIdentity> {
  const tokens = await client
    .authorizationCodeGrant(configuration, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    })
    .catch((error: unknown) => {
      throw new Error(describeFailure(error));
    });
  const idTokenClaims = tokens.claims();
  // `idTokenExpected` makes openid-client refuse a response without an ID token.
  if (!idTokenClaims) throw new Error('the identity provider returned no ID token');
  let claims: Record<string, unknown> = { ...idTokenClaims };
  if (typeof claims.email !== 'string')
    claims = {
      ...claims,
      ...(await client.fetchUserInfo(configuration, tokens.access_token, String(claims.sub))),
    };
  if (typeof claims.email !== 'string')
    throw new Error('the identity provider did not share an e-mail address (scope "email")');
  return {
    subject: String(claims.sub),
    email: claims.email.toLowerCase(),
    emailVerified: typeof claims.email_verified === 'boolean' ? claims.email_verified : undefined,
    name: typeof claims.name === 'string' ? claims.name : null,
  };
}

/** The library's reason, with the underlying check that failed (which names a claim, not its value). */
function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const message = error.message.replace(/\.$/, '');
  return error.cause instanceof Error && error.cause.message !== error.message
    ? `${message}: ${error.cause.message}`
    : message;
}
