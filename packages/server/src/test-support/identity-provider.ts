import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';
import { fetch, type Agent } from 'undici';

/**
 * A real OpenID Connect provider (`oidc-provider`) over HTTPS for SSO tests, and a browser that
 * drives the round trip over HTTP (start → provider → callback → session → API).
 */

/** The claims an account of the test provider asserts (besides `sub`, its key). */
export interface AccountClaims {
  email: string;
  /** Left out: the provider says nothing about verification. */
  email_verified?: boolean;
  name: string;
}

/** The test provider's client secret (long enough for HS256). */
export const CLIENT_SECRET = 'a-client-secret-that-is-long-enough-for-hs256';

/** A certificate for 127.0.0.1, its own CA, made for this run. */
export function throwAwayCertificate(folder: string): {
  key: string;
  cert: string;
  certPath: string;
} {
  const keyPath = join(folder, 'key.pem');
  const certPath = join(folder, 'cert.pem');
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=Vexil test CA',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8'), certPath };
}

/**
 * The provider: `accounts` by `sub`; the test says which one signs in next (its login page, in
 * effect).
 */
export class TestProvider {
  next: string;
  provider!: Provider;
  readonly server: Server;

  constructor(
    tls: { key: string; cert: string },
    readonly accounts: Record<string, AccountClaims>,
  ) {
    this.next = Object.keys(accounts)[0]!;
    this.server = createServer(tls, (req, res) => {
      if (req.url?.startsWith('/interaction/')) {
        void this.provider.interactionFinished(
          req,
          res,
          { login: { accountId: this.next } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      void this.provider.callback()(req, res);
    });
  }

  get issuer(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server.close(resolve));
  }

  configure(redirectUri: string): void {
    this.provider = new Provider(this.issuer, {
      clients: [
        {
          client_id: 'vexil',
          client_secret: CLIENT_SECRET,
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: 'client_secret_post',
        },
      ],
      pkce: { required: () => true },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      findAccount: (_ctx: KoaContextWithOIDC, sub: string) =>
        this.accounts[sub]
          ? { accountId: sub, claims: () => ({ sub, ...this.accounts[sub] }) }
          : undefined,
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      features: { devInteractions: { enabled: false } },
      // Consent is implied: every sign-in is granted the scopes asked for.
      loadExistingGrant: async (ctx) => {
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client!.clientId,
          accountId: ctx.oidc.session!.accountId!,
        });
        grant.addOIDCScope('openid email profile');
        await grant.save();
        return grant;
      },
      cookies: { keys: ['test-cookie-key'] },
    });
  }
}

/** What Chromium sends when it follows a link or a redirect. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** An answer as a test reads it. */
export interface BrowserResponse {
  status: number;
  location: string | null;
  text: string;
}

/**
 * A browser: follows the provider's redirects by hand, keeping its cookies (one jar for every
 * host, which is enough here); `accept` makes it an API client asking for JSON instead.
 */
export class Browser {
  private readonly cookies = new Map<string, string>();
  constructor(private readonly dispatcher: Agent) {}

  async get(url: string, accept = BROWSER_ACCEPT): Promise<BrowserResponse> {
    return this.send('GET', url, accept);
  }

  /** A JSON POST as the console sends it (its own Origin). */
  async post(url: string, body: unknown): Promise<BrowserResponse> {
    return this.send('POST', url, 'application/json', body);
  }

  private async send(
    method: string,
    url: string,
    accept: string,
    body?: unknown,
  ): Promise<BrowserResponse> {
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      dispatcher: this.dispatcher,
      headers: {
        accept,
        cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(body !== undefined
          ? { 'content-type': 'application/json', origin: new URL(url).origin }
          : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(';');
      const [name, value] = pair!.split('=');
      if (value) this.cookies.set(name!, value);
      else this.cookies.delete(name!);
    }
    const location = response.headers.get('location');
    return {
      status: response.status,
      location: location ? new URL(location, url).href : null,
      text: await response.text(),
    };
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** Sets a cookie as a page on the same site could (or the test, to replay a callback). */
  setCookie(name: string, value: string): void {
    this.cookies.set(name, value);
  }
}

/**
 * Starts a sign-in at `startUrl` in `browser` and follows the provider's redirects until the
 * browser is sent back to `vexilUrl` (the callback address, returned unvisited).
 */
export async function throughProvider(
  browser: Browser,
  startUrl: string,
  vexilUrl: string,
): Promise<string> {
  const start = await browser.get(startUrl);
  if (start.status !== 302 || !start.location)
    throw new Error(`start refused: ${start.status} ${start.text}`);
  let next = start.location;
  while (!next.startsWith(vexilUrl)) {
    const step = await browser.get(next);
    if (!step.location) throw new Error(`provider stopped at ${next}: ${step.status} ${step.text}`);
    next = step.location;
  }
  return next;
}
