import * as client from 'openid-client';
import { fetch as undiciFetch } from 'undici';
import type { SsoConnectionsTable } from '../db/schema.js';
import { createGuardedAgent, TargetRefusedError } from '../http/safe-target.js';

/**
 * OpenID Connect relying party with `openid-client` (people-and-sign-in.md, Sign-in; design
 * records 022 and 032): discovery, authorization code flow with PKCE (S256), `state` and
 * `nonce`. The issuer is reached with the process's ordinary TLS trust (system CAs plus
 * `NODE_EXTRA_CA_CERTS`) and, like webhook targets, through the connect-time SSRF guard: an
 * Owner could otherwise probe the server's network with issuer URLs.
 */

/**
 * The associated data sealing a connection's client secret to its row: the secret is sealed with
 * the secrets key like webhook signing secrets (design record 015).
 */
export function clientSecretBinding(connectionId: string): string {
  return `sso_connection:${connectionId}`;
}

/** How long connecting to an identity provider may take (ms). */
const CONNECT_TIMEOUT_MS = 10_000;

/** Appended to a guard's refusal (README: Configuration). */
const PRIVATE_ISSUER_HINT =
  '; an instance whose identity provider is on a private network can allow it with VEXIL_SSO_ALLOW_PRIVATE_ISSUERS=true';

/**
 * Every request to identity providers: discovery, token, UserInfo and key set, all through one
 * guarded agent, with the discovered configurations cached per connection version.
 */
export class IdentityProviders {
  private readonly agent;
  private readonly fetch: client.CustomFetch;
  private readonly discovered = new Map<string, Promise<client.Configuration>>();

  /**
   * @param allowPrivateIssuers `VEXIL_SSO_ALLOW_PRIVATE_ISSUERS`: reach issuers on loopback and
   *   private networks (still https only).
   */
  constructor(allowPrivateIssuers: boolean) {
    this.agent = createGuardedAgent({
      allowPrivateTargets: allowPrivateIssuers,
      timeoutMs: CONNECT_TIMEOUT_MS,
    });
    // openid-client sends every request without following redirects; they all go through here.
    this.fetch = (url, init) =>
      // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- undici's Response is the one Node's global fetch returns
      undiciFetch(url, { ...init, dispatcher: this.agent });
  }

  /**
   * The provider's configuration (cached per connection version; a failed discovery is retried).
   * @throws Error saying why when discovery fails (see {@link failureReason}).
   */
  configuration(
    connection: SsoConnectionsTable,
    clientSecret: string,
  ): Promise<client.Configuration> {
    const key = `${connection.id}@${connection.updated_at}`;
    let configuration = this.discovered.get(key);
    if (!configuration) {
      configuration = client.discovery(
        new URL(connection.issuer),
        connection.client_id,
        clientSecret,
        undefined,
        { [client.customFetch]: this.fetch },
      );
      configuration.catch(() => this.discovered.delete(key));
      this.discovered.set(key, configuration);
    }
    return configuration;
  }

  /** Checks that `issuer` answers OpenID Connect discovery; the error says why when not. */
  async check(issuer: string): Promise<void> {
    await client.discovery(new URL(issuer), 'vexil-discovery-check', undefined, undefined, {
      [client.customFetch]: this.fetch,
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/**
 * Why a request to an identity provider failed, in words: the library's reason with the cause
 * beneath it (which names a check or a claim, never a value), or the SSRF guard's refusal.
 */
export function failureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause)
    if (cause instanceof TargetRefusedError) return `${cause.message}${PRIVATE_ISSUER_HINT}`;
  const message = error.message.replace(/\.$/, '');
  return error.cause instanceof Error && error.cause.message !== error.message
    ? `${message}: ${error.cause.message}`
    : message;
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
  /** Only when the provider said so: a missing `email_verified` is not verified. */
  emailVerified: boolean;
  name: string | null;
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
      throw new Error(failureReason(error));
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
    // Verified only when the provider says so: `email_verified`, or Microsoft Entra ID's
    // `xms_edov` (the address's domain is verified by its owner), which Entra sends instead.
    emailVerified: claims.email_verified === true || claims.xms_edov === true,
    name: typeof claims.name === 'string' ? claims.name : null,
  };
}
