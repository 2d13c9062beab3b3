import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evaluateFlag } from '@vexil/engine';
import type { FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../auth/secrets.js';
import { openDatabase, type Database } from '../db/database.js';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  type TestVexil,
} from '../test-support/harness.js';
import { eventually, freePort } from '../test-support/processes.js';
import { databaseSdkKeys, SdkKeyResolver } from './sdk-keys.js';
import { SnapshotCopies } from './snapshot-copies.js';
import { databaseSnapshots, SnapshotStore } from './snapshots.js';

/** Collects log lines: the reasons a copy was ignored are part of the contract. */
function recordingLog() {
  const lines: { level: string; reason?: string; message: string }[] = [];
  const record =
    (level: string) =>
    (fields: { reason?: string } | string, message?: string): void => {
      if (typeof fields === 'string') lines.push({ level, message: fields });
      else lines.push({ level, reason: fields.reason, message: message ?? '' });
    };
  const log = { error: record('error'), warn: record('warn'), info: record('info') };
  return { lines, log: log as unknown as FastifyBaseLogger };
}

/**
 * Snapshot copies on disk (design record 019): written after each build, served only when the
 * database cannot be reached, and never served when corrupt or made for another database.
 */
describe('snapshot copies', () => {
  let vexil: TestVexil;
  let directory: string;
  let environmentId: string;
  let sdkKey: string;
  let copyFile: string;
  /** A PostgreSQL URL where nothing listens: every query fails to connect. */
  let unreachable: Database;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'vexil-copies-'));
    vexil = await createTestVexil('sqlite', { config: { snapshotCacheDir: directory } });
    const org = await createOrg(vexil);
    ({ sdkKey } = await createProjectWithFlag(vexil, org, { flag: { key: 'beta' } }));
    await call(
      vexil,
      'POST',
      '/api/v1/orgs/acme/projects/web/flags/beta/environments/production/toggle',
      {
        token: org.token,
        body: { enabled: true },
      },
    );
    const environment = await call(
      vexil,
      'GET',
      '/api/v1/orgs/acme/projects/web/environments/production',
      {
        token: org.token,
      },
    );
    environmentId = environment.body.id;
    copyFile = join(directory, `${environmentId}.snapshot`);
    await vexil.snapshots.get(environmentId);
    expect(await eventually(async () => existsSync(copyFile), 5000)).toBe(true);
    unreachable = openDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
  });
  afterAll(async () => {
    await unreachable.close();
    await vexil.close();
    await rm(directory, { recursive: true, force: true });
  });

  const storeOverCopies = (databaseUrl: string) => {
    const { lines, log } = recordingLog();
    const copies = new SnapshotCopies(directory, databaseUrl, log);
    return {
      lines,
      copies,
      store: new SnapshotStore(databaseSnapshots(unreachable.db), { copies, log }),
    };
  };

  it('without its database, a store serves the copy: same document, same answers', async () => {
    const held = (await vexil.snapshots.get(environmentId))!;
    const { store } = storeOverCopies(vexil.databaseUrl);
    const restored = (await store.get(environmentId))!;
    expect(restored.version).toBe(held.version);
    expect(restored.document.etag).toBe(held.document.etag);
    expect(evaluateFlag(restored.compiled, 'beta', { userId: 'u' }).value).toBe(true);
    expect(store.restoredCount()).toBe(1);
  });

  it('a copy written before copies held key ids still grants its keys, with no id', async () => {
    const original = await readFile(copyFile);
    const newline = original.indexOf(10);
    const header = JSON.parse(original.subarray(0, newline).toString()) as {
      sdkKeys: { id?: string }[];
    };
    expect(header.sdkKeys[0]?.id).toEqual(expect.any(String));
    for (const key of header.sdkKeys) delete key.id;
    await writeFile(
      copyFile,
      Buffer.concat([Buffer.from(JSON.stringify(header)), original.subarray(newline)]),
    );
    try {
      const { copies, lines } = storeOverCopies(vexil.databaseUrl);
      expect(await copies.grant(hashSecret(sdkKey))).toEqual({
        environmentId,
        type: 'ServerSide',
        keyId: null,
      });
      expect(lines).toEqual([]);
    } finally {
      await writeFile(copyFile, original);
    }
  });

  it('without its database, a key is granted from the copy until it is revoked', async () => {
    const { copies } = storeOverCopies(vexil.databaseUrl);
    const resolver = new SdkKeyResolver(databaseSdkKeys(unreachable.db), copies);
    expect(await resolver.resolve(sdkKey, Date.now())).toEqual({
      environmentId,
      type: 'ServerSide',
      keyId: expect.any(String),
    });
    const other = new SdkKeyResolver(databaseSdkKeys(unreachable.db), copies);
    other.forget(hashSecret(sdkKey));
    await eventually(async () => !(await copies.grant(hashSecret(sdkKey))), 5000);
    await expect(other.resolve(sdkKey, Date.now())).rejects.toThrow();
  });

  it('a copy made for another database is ignored with a log line, never served', async () => {
    const { store, lines } = storeOverCopies('postgres://postgres@elsewhere:5432/other');
    await expect(store.get(environmentId)).rejects.toThrow();
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'error', reason: 'copied from another database' }),
    );
  });

  it('a corrupt copy is ignored with a log line, never served', async () => {
    const bytes = await readFile(copyFile);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 20) ^ 0xff, bytes.length - 20);
    await writeFile(copyFile, bytes);
    const { store, lines } = storeOverCopies(vexil.databaseUrl);
    await expect(store.get(environmentId)).rejects.toThrow();
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'error', reason: 'checksum mismatch' }),
    );
  });
});
