import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { v7 } from 'uuid';
import { createVexil, type Vexil } from '../node/full-node.js';
import { generateSecret, hashSecret } from '../auth/secrets.js';
import { issueToken } from '../auth/tokens.js';
import type { Clock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { openDatabase, type Dialect } from '../db/database.js';
import type { Plan } from '../db/schema.js';
import { bootstrap } from '../management/orgs/bootstrap.js';

/** Where the test PostgreSQL lives (trust auth, user postgres). */
export const POSTGRES_ADMIN_URL =
  process.env.VEXIL_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The secrets key of test services (PostgreSQL requires one; design record 015). */
export const TEST_SECRETS_KEY = 'test-secrets-key-0123456789abcdefghijklmnopqrstuvwxyz';

/** The configuration of test services: `env` read as the service reads it, then `overrides`. */
export function testConfig(overrides: Partial<Config> = {}, env: NodeJS.ProcessEnv = {}): Config {
  return { ...loadConfig({ VEXIL_SECRETS_KEY: TEST_SECRETS_KEY, ...env }), ...overrides };
}

/** Every storage test runs on both dialects. */
export function testDialects(): Dialect[] {
  return ['sqlite', 'postgres'];
}

/** A fresh, empty PostgreSQL database; dropped by the returned function. */
export async function createPostgresDatabase(): Promise<{
  url: string;
  drop: () => Promise<void>;
}> {
  const name = `vexil_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = POSTGRES_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  return {
    url,
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** A settable clock for tests that move time. */
export class TestClock implements Clock {
  constructor(private current = new Date('2026-06-01T12:00:00.000Z')) {}
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
  set(date: Date): void {
    this.current = new Date(date);
  }
}

export interface TestVexil extends Vexil {
  config: Config;
  /** The database URL, so a test can start a second process on the same data. */
  databaseUrl: string;
}

/**
 * A complete Vexil on a fresh database of the given dialect (SQLite in memory, or a new
 * PostgreSQL database that is dropped on close).
 */
export async function createTestVexil(
  dialect: Dialect,
  options: {
    clock?: Clock;
    config?: Partial<Config>;
    env?: NodeJS.ProcessEnv;
    startWorkers?: boolean;
  } = {},
): Promise<TestVexil> {
  const postgres = dialect === 'postgres' ? await createPostgresDatabase() : undefined;
  const databaseUrl = postgres?.url ?? ':memory:';
  const config = testConfig({ databaseUrl, ...options.config }, options.env);
  const database = openDatabase(databaseUrl);
  // Background workers stay off unless asked for: tests drive them (e.g. `webhookWorker.runOnce()`).
  const vexil = await createVexil(config, {
    clock: options.clock,
    database,
    logger: false,
    startWorkers: options.startWorkers ?? false,
  });
  return {
    ...vexil,
    config,
    databaseUrl,
    async close() {
      await vexil.close();
      await postgres?.drop();
    },
  };
}

/**
 * Webhook settings for tests: the defaults, with local receivers allowed, quick retries and a
 * short time-out; `overrides` replace single settings.
 */
export function testWebhookSettings(
  overrides: Partial<Config['webhooks']> = {},
): Config['webhooks'] {
  return {
    ...loadConfig({}).webhooks,
    retryScheduleMs: [10],
    timeoutMs: 1000,
    allowPrivateTargets: true,
    ...overrides,
  };
}

/** A response as tests read it. */
export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // Tests read arbitrary JSON; asserting on it is the point.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

/** Sends a request through the node without a socket (light-my-request; the lean lane included). */
export async function call(
  vexil: Vexil,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS',
  url: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<TestResponse> {
  const response = await vexil.inject({
    method,
    url,
    headers: {
      ...(options.token
        ? {
            authorization:
              options.token.startsWith('vxl_srv_') || options.token.startsWith('vxl_cli_')
                ? options.token
                : `Bearer ${options.token}`,
          }
        : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined
      ? { payload: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }
      : {}),
  });
  let body: unknown = undefined;
  try {
    body = response.body ? JSON.parse(response.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.statusCode, headers: response.headers, body, text: response.body };
}

/**
 * A set-up request: like {@link call}, but any status of 300 or more throws (naming the request),
 * and the parsed body is returned.
 */
export async function callOk(
  vexil: Vexil,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  token: string,
  body?: unknown,
  // Set-up code reads arbitrary JSON (ids, keys); the tests' assertions check it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<any> {
  const response = await call(vexil, method, url, {
    token,
    ...(body !== undefined ? { body } : {}),
  });
  if (response.status >= 300)
    throw new Error(`${method} ${url}: ${response.status} ${response.text}`);
  return response.body;
}

/** A flag's variation ids by variation key. */
export function variationIdsByKey(flag: {
  variations: { key: string; id: string }[];
}): Record<string, string> {
  return Object.fromEntries(flag.variations.map((variation) => [variation.key, variation.id]));
}

/** An organization with an Owner token, as `vexil bootstrap` makes it. */
export async function createOrg(
  vexil: Vexil,
  slug = 'acme',
  options: { email?: string; plan?: Plan } = {},
): Promise<{ token: string; orgId: string; userId: string; slug: string }> {
  const result = await bootstrap(vexil.services.db, {
    slug,
    email: options.email ?? `owner@${slug}.test`,
    plan: options.plan ?? 'Enterprise',
    token: true,
    now: vexil.services.clock.now(),
  });
  return { token: result.token ?? '', orgId: result.org.id, userId: result.user.id, slug };
}

/**
 * A user with `role` in the org and a personal token (created directly: membership management
 * is not part of the API yet).
 */
export async function createMember(
  vexil: Vexil,
  orgId: string,
  role: 'Viewer' | 'Member' | 'Admin' | 'Owner',
  email = `${role.toLowerCase()}-${randomBytes(3).toString('hex')}@example.test`,
): Promise<{ token: string; userId: string }> {
  const now = vexil.services.clock.now().toISOString();
  const userId = v7();
  await vexil.services.db
    .insertInto('users')
    .values({ id: userId, email, name: null, email_verified: 1, created_at: now })
    .execute();
  await vexil.services.db
    .insertInto('memberships')
    .values({ organization_id: orgId, user_id: userId, role, created_at: now })
    .execute();
  const { token } = await issueToken(vexil.services.db, {
    kind: 'personal',
    userId,
    name: 'test',
    expiresAt: null,
    now,
  });
  return { token, userId };
}

/** A project (with `development` and `production`), a flag in it, and a server SDK key for production. */
export async function createProjectWithFlag(
  vexil: Vexil,
  org: { token: string; slug: string },
  options: {
    project?: string;
    flag?: Record<string, unknown>;
    keyType?: 'ServerSide' | 'ClientSide';
  } = {},
): Promise<{ project: string; flag: string; sdkKey: string }> {
  const project = options.project ?? 'web';
  const base = `/api/v1/orgs/${org.slug}/projects`;
  const created = await call(vexil, 'POST', base, {
    token: org.token,
    body: { key: project, name: project },
  });
  if (created.status !== 201) throw new Error(`project create failed: ${created.text}`);
  const flagBody = { key: 'new-checkout', name: 'New checkout', ...options.flag };
  const flag = await call(vexil, 'POST', `${base}/${project}/flags`, {
    token: org.token,
    body: flagBody,
  });
  if (flag.status !== 201) throw new Error(`flag create failed: ${flag.text}`);
  const key = await call(vexil, 'POST', `${base}/${project}/environments/production/sdk-keys`, {
    token: org.token,
    body: { name: 'test', type: options.keyType ?? 'ServerSide' },
  });
  if (key.status !== 201) throw new Error(`sdk key create failed: ${key.text}`);
  return { project, flag: flagBody.key, sdkKey: key.body.key as string };
}

/**
 * A browser session for `userId`, inserted as a sign-in makes it; returns the headers a console
 * request sends with it (the cookie, and `Origin` for the CSRF check).
 */
export async function createSession(
  vexil: TestVexil,
  userId: string,
  ssoConnectionId: string | null = null,
): Promise<{ id: string; secret: string; headers: Record<string, string> }> {
  const secret = generateSecret('vxl_ses');
  const now = vexil.services.clock.now();
  const id = v7();
  await vexil.services.db
    .insertInto('sessions')
    .values({
      id,
      secret_hash: hashSecret(secret),
      user_id: userId,
      sso_connection_id: ssoConnectionId,
      user_agent: null,
      ip: null,
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: new Date(now.getTime() + vexil.config.signIn.sessionLifetimeMs).toISOString(),
      revoked_at: null,
    })
    .execute();
  return {
    id,
    secret,
    headers: {
      cookie: `vexil_session=${secret}`,
      origin: new URL(vexil.config.publicUrl).origin,
    },
  };
}
