import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../node/full-node.js';
import { openDatabase } from '../db/database.js';
import {
  call,
  createOrg,
  createPostgresDatabase,
  testDialects,
  testWebhookSettings,
  testConfig,
} from '../test-support/harness.js';
import { loggerOptions, redactUrl } from './logging.js';

/** Collects every log line the service writes. */
class CapturedLog extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

describe('redactUrl', () => {
  it('strips credentials from paths and credential-like query parameters', () => {
    expect(redactUrl('/v1/client/stream?context=e30&sdkKey=vxl_cli_abc-DEF_1')).toBe(
      '/v1/client/stream?context=e30&sdkKey=[redacted]',
    );
    expect(redactUrl('/v1/sdk/flags/vxl_srv_abc?api_token=x&limit=5')).toBe(
      '/v1/sdk/flags/vxl_srv_[redacted]?api_token=[redacted]&limit=5',
    );
    expect(redactUrl('/api/v1/orgs/acme/projects?limit=5')).toBe(
      '/api/v1/orgs/acme/projects?limit=5',
    );
  });
});

describe('log output', () => {
  const stdout = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
  afterAll(() => {
    if (stdout) Object.defineProperty(process.stdout, 'isTTY', stdout);
    else delete (process.stdout as { isTTY?: boolean }).isTTY;
  });
  const withTerminal = (isTTY: boolean) => {
    Object.defineProperty(process.stdout, 'isTTY', { value: isTTY, configurable: true });
    return loggerOptions('info') as { transport?: { target: string } };
  };

  it('is pretty-printed by pino-pretty on a terminal and JSON otherwise', () => {
    expect(withTerminal(true).transport?.target).toBe('pino-pretty');
    expect(withTerminal(false).transport).toBeUndefined();
    expect(loggerOptions('info', new CapturedLog())).not.toHaveProperty('transport');
  });

  it('pino-pretty is a runtime dependency, there after a production install', async () => {
    const manifestUrl = new URL('../../package.json', import.meta.url);
    const manifest = JSON.parse(await readFile(manifestUrl, 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies).toHaveProperty('pino-pretty');
    expect(createRequire(manifestUrl).resolve('pino-pretty')).toMatch(/pino-pretty/);
  });
});

describe.each(testDialects())('secrets never appear in logs on %s', (dialect) => {
  const log = new CapturedLog();
  let vexil: Vexil;
  let dropDatabase: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const postgres = dialect === 'postgres' ? await createPostgresDatabase() : undefined;
    dropDatabase = postgres?.drop;
    const databaseUrl = postgres?.url ?? ':memory:';
    const config = testConfig({
      databaseUrl,
      // The most verbose level: whatever any code path logs is captured.
      logLevel: 'trace',
      webhooks: testWebhookSettings({ retryScheduleMs: [1000] }),
    });
    vexil = await createVexil(config, {
      database: openDatabase(databaseUrl),
      logStream: log,
      startWorkers: false,
    });
  });
  afterAll(async () => {
    await vexil.close();
    await dropDatabase?.();
  });

  it('tokens, SDK keys and webhook secrets: created, used, and refused', async () => {
    const org = await createOrg(vexil);
    const secrets: string[] = [org.token];
    const remember = (value: unknown) => {
      expect(value).toEqual(expect.any(String));
      secrets.push(value as string);
      return value as string;
    };
    const base = '/api/v1/orgs/acme';
    const owner = { token: org.token };

    const personal = remember(
      (await call(vexil, 'POST', '/api/v1/me/tokens', { ...owner, body: { name: 'ci' } })).body
        .token,
    );
    const service = remember(
      (
        await call(vexil, 'POST', `${base}/service-tokens`, {
          ...owner,
          body: { name: 'bot', role: 'Member' },
        })
      ).body.token,
    );
    await call(vexil, 'POST', `${base}/projects`, { ...owner, body: { key: 'web', name: 'Web' } });
    const keys = `${base}/projects/web/environments/production/sdk-keys`;
    const serverKey = remember(
      (await call(vexil, 'POST', keys, { ...owner, body: { name: 's', type: 'ServerSide' } })).body
        .key,
    );
    const clientKey = remember(
      (await call(vexil, 'POST', keys, { ...owner, body: { name: 'c', type: 'ClientSide' } })).body
        .key,
    );
    const hook = await call(vexil, 'POST', `${base}/webhooks`, {
      ...owner,
      body: { name: 'Hook', url: 'http://127.0.0.1:9/hook' },
    });
    remember(hook.body.secret);
    remember(
      (await call(vexil, 'POST', `${base}/webhooks/${hook.body.id}/secrets`, owner)).body.secret,
    );

    // Credentials in use: accepted, on every API and in every place a credential may travel.
    expect((await call(vexil, 'GET', '/api/v1/me', { token: personal })).status).toBe(200);
    expect(
      (
        await call(vexil, 'GET', `${base}/projects`, {
          headers: { authorization: `Bearer ${service}` },
        })
      ).status,
    ).toBe(200);
    expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: serverKey })).status).toBe(200);
    expect(
      (
        await call(vexil, 'POST', '/ofrep/v1/evaluate/flags', {
          headers: { 'x-api-key': serverKey },
          body: { context: { targetingKey: 'u1' } },
        })
      ).status,
    ).toBe(200);
    // The key in the query string (as EventSource sends it); refused for the missing context.
    const streamed = await call(vexil, 'GET', `/v1/client/stream?sdkKey=${clientKey}`);
    expect(streamed.status).toBe(400);

    // Refused credentials, including near misses of real ones.
    const nearMisses = [personal, service, serverKey].map(
      (secret) => `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`,
    );
    secrets.push(...nearMisses);
    for (const wrong of nearMisses) {
      expect((await call(vexil, 'GET', '/api/v1/me', { token: wrong })).status).toBe(401);
      expect((await call(vexil, 'GET', '/v1/sdk/flags', { token: wrong })).status).toBe(401);
    }
    await call(vexil, 'DELETE', `/api/v1/me/tokens/${personal}`, owner);

    expect(log.text).toContain('request completed');
    // The token put in a path by mistake is logged redacted.
    expect(log.text).toContain('/api/v1/me/tokens/vxl_pat_[redacted]');
    for (const secret of secrets) {
      // The random part alone must not appear either (it is what makes the secret secret).
      const randomPart = secret.replace(/^(vxl_[a-z]+|whsec)_/, '');
      expect(log.text.includes(randomPart), `a secret (${secret.slice(0, 8)}…) was logged`).toBe(
        false,
      );
    }
    expect(log.text.toLowerCase()).not.toContain('bearer ');
  });
});
