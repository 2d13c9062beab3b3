import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const CLI = fileURLToPath(new URL('../../server/dist/cli.js', import.meta.url));
/** The PostgreSQL server the Postgres run creates its database in (as the server's own tests). */
const POSTGRES_ADMIN_URL =
  process.env.VEXIL_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

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

async function onPostgres(query: string): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(query);
  } finally {
    await admin.end();
  }
}

/** A fresh database: a SQLite file in a temporary directory, or a new PostgreSQL database. */
async function freshDatabase(
  kind: 'sqlite' | 'postgres',
): Promise<{ env: NodeJS.ProcessEnv; drop: () => Promise<void> }> {
  const directory = mkdtempSync(join(tmpdir(), 'vexil-console-'));
  const removeDirectory = () => rmSync(directory, { recursive: true, force: true });
  if (kind === 'sqlite')
    return {
      env: { VEXIL_DATABASE_URL: join(directory, 'vexil.db') },
      drop: () => {
        removeDirectory();
        return Promise.resolve();
      },
    };
  const name = `vexil_e2e_${randomBytes(6).toString('hex')}`;
  await onPostgres(`CREATE DATABASE ${name}`);
  return {
    env: {
      VEXIL_DATABASE_URL: POSTGRES_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`),
      // Required on PostgreSQL (design record 015); a throw-away key for a throw-away database.
      VEXIL_SECRETS_KEY: randomBytes(32).toString('base64'),
    },
    drop: async () => {
      await onPostgres(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      removeDirectory();
    },
  };
}

/**
 * The real `vexil serve` on a fresh database and a free port, trusting the test identity
 * provider's certificate, with the first Owner (token and password) from `vexil bootstrap` and
 * a project `web`. Returns its URL, the token, the database URL and the teardown.
 */
async function startVexil(
  kind: 'sqlite' | 'postgres',
  idp: { certPath: string },
): Promise<{ url: string; token: string; databaseUrl: string; stop: () => Promise<void> }> {
  const database = await freshDatabase(kind);
  const port = await freePort();
  const env = {
    ...process.env,
    ...database.env,
    NODE_EXTRA_CA_CERTS: idp.certPath,
    VEXIL_PORT: String(port),
    VEXIL_LOG_LEVEL: 'warn',
    // Every journey calls the API with the same Owner token, and each open page holds an event
    // stream and reads what it shows: the default quota is sized for one person, not a suite.
    VEXIL_RATE_LIMIT: '100000',
    // Short lifecycle periods, so that removal candidates appear within a test: a flag unchanged
    // for 3 s and evaluated within the last 60 s is `Dead`.
    VEXIL_USAGE_FLUSH_INTERVAL: '1s',
    VEXIL_STALE_FLAG_PERIOD: '60s',
    VEXIL_DEAD_FLAG_PERIOD: '3s',
    // Webhooks to a receiver on 127.0.0.1 inside the test, retried within seconds: three
    // attempts one second apart, then dead-lettered.
    VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    VEXIL_WEBHOOK_RETRY_SCHEDULE: '1s,1s',
    VEXIL_WEBHOOK_TIMEOUT: '5s',
  };
  const { token } = JSON.parse(
    execFileSync(
      process.execPath,
      [CLI, 'bootstrap', '--org', 'acme', '--email', 'e2e@example.com', '--password-stdin'],
      { env, input: `${OWNER_PASSWORD}\n` },
    ).toString(),
  ) as { token: string };
  const server: ChildProcess = spawn(process.execPath, [CLI, 'serve'], { env, stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    // A minute: on a machine busy with other builds, starting takes over 20 s.
    if (attempt > 300) throw new Error(`vexil serve on ${kind} did not become ready`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const created = await fetch(`${url}/api/v1/orgs/acme/projects`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key: 'web', name: 'Web shop' }),
  });
  if (!created.ok) throw new Error(`project not created: ${await created.text()}`);
  return {
    url,
    token,
    databaseUrl: database.env.VEXIL_DATABASE_URL!,
    stop: async () => {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
      await database.drop();
    },
  };
}

/**
 * Global setup: one server on SQLite for every project, and one on PostgreSQL for the
 * `postgres` project (playwright.config.ts). Tests read them through `server` in fixtures.ts:
 * VEXIL_E2E_URL/_TOKEN (and _POSTGRES_ ones), VEXIL_E2E_DATABASE_URL (SQLite),
 * VEXIL_E2E_EMAIL/_PASSWORD (the Owner's), VEXIL_E2E_IDP_KEY/_CERT (the certificate the servers
 * trust for an identity provider on 127.0.0.1). Returns the teardown.
 */
export default async function startServers(): Promise<() => Promise<void>> {
  const directory = mkdtempSync(join(tmpdir(), 'vexil-idp-'));
  const idp = identityProviderCertificate(directory);
  const sqlite = await startVexil('sqlite', idp);
  const postgres = await startVexil('postgres', idp);
  process.env.VEXIL_E2E_URL = sqlite.url;
  process.env.VEXIL_E2E_TOKEN = sqlite.token;
  process.env.VEXIL_E2E_POSTGRES_URL = postgres.url;
  process.env.VEXIL_E2E_POSTGRES_TOKEN = postgres.token;
  process.env.VEXIL_E2E_DATABASE_URL = sqlite.databaseUrl;
  process.env.VEXIL_E2E_EMAIL = 'e2e@example.com';
  process.env.VEXIL_E2E_PASSWORD = OWNER_PASSWORD;
  process.env.VEXIL_E2E_IDP_KEY = idp.keyPath;
  process.env.VEXIL_E2E_IDP_CERT = idp.certPath;
  return async () => {
    await Promise.all([sqlite.stop(), postgres.stop()]);
    rmSync(directory, { recursive: true, force: true });
  };
}
