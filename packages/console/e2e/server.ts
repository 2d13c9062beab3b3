import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** The first Owner's password (`vexil bootstrap --password-stdin`), for password sign-in. */
const OWNER_PASSWORD = 'correct horse battery staple';

/**
 * A certificate for 127.0.0.1 made for this run, for the OpenID Connect provider that the OIDC
 * journey starts in the test process: Vexil requires an https issuer and trusts it through
 * NODE_EXTRA_CA_CERTS, as it would a company CA (design record 022).
 */
function identityProviderCertificate(directory: string): { keyPath: string; certPath: string } {
  const keyPath = join(directory, 'idp-key.pem');
  const certPath = join(directory, 'idp-cert.pem');
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=Vexil console test IdP',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  return { keyPath, certPath };
}

/**
 * Global setup: the real `vexil serve` on a fresh SQLite file and a free port, with the first
 * Owner (token and password) from `vexil bootstrap` and a project. Tests read VEXIL_E2E_URL,
 * VEXIL_E2E_DATABASE_URL, VEXIL_E2E_TOKEN, VEXIL_E2E_EMAIL, VEXIL_E2E_PASSWORD, and VEXIL_E2E_IDP_KEY/_CERT (the
 * certificate the server trusts for an identity provider on 127.0.0.1). Returns the teardown.
 */
export default async function startServer(): Promise<() => Promise<void>> {
  const directory = mkdtempSync(join(tmpdir(), 'vexil-console-'));
  const port = await freePort();
  const idp = identityProviderCertificate(directory);
  const env = {
    ...process.env,
    NODE_EXTRA_CA_CERTS: idp.certPath,
    VEXIL_DATABASE_URL: join(directory, 'vexil.db'),
    VEXIL_PORT: String(port),
    VEXIL_LOG_LEVEL: 'warn',
    // Short lifecycle periods, so that removal candidates appear within a test: a flag unchanged
    // for 3 s and evaluated within the last 60 s is `Dead`.
    VEXIL_USAGE_FLUSH_INTERVAL: '1s',
    VEXIL_STALE_FLAG_PERIOD: '60s',
    VEXIL_DEAD_FLAG_PERIOD: '3s',
  };
  const { token } = JSON.parse(
    execFileSync(
      process.execPath,
      [CLI, 'bootstrap', '--org', 'acme', '--email', 'e2e@example.com', '--password-stdin'],
      { env, input: `${OWNER_PASSWORD}\n` },
    ).toString(),
  ) as { token: string };
  const server = spawn(process.execPath, [CLI, 'serve'], { env, stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (attempt > 100) throw new Error('vexil serve did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const created = await fetch(`${url}/api/v1/orgs/acme/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: 'web', name: 'Web shop' }),
  });
  if (!created.ok) throw new Error(`project not created: ${await created.text()}`);
  process.env.VEXIL_E2E_URL = url;
  process.env.VEXIL_E2E_TOKEN = token;
  process.env.VEXIL_E2E_DATABASE_URL = env.VEXIL_DATABASE_URL;
  process.env.VEXIL_E2E_EMAIL = 'e2e@example.com';
  process.env.VEXIL_E2E_PASSWORD = OWNER_PASSWORD;
  process.env.VEXIL_E2E_IDP_KEY = idp.keyPath;
  process.env.VEXIL_E2E_IDP_CERT = idp.certPath;
  return async () => {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
    rmSync(directory, { recursive: true, force: true });
  };
}
