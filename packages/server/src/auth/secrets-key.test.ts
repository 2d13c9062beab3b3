import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.js';
import { generatedKeyFile, secretsKey } from './secrets-key.js';

describe('the secrets key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-secrets-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is VEXIL_SECRETS_KEY when set, on either database', () => {
    const key = 'configured-key-0123456789abcdefghijkl';
    const config = loadConfig({ VEXIL_SECRETS_KEY: key, VEXIL_DATABASE_URL: join(dir, 'a.db') });
    expect(secretsKey(config, 'sqlite')).toBe(key);
    expect(secretsKey(config, 'postgres')).toBe(key);
  });

  it('is required on PostgreSQL', () => {
    const config = loadConfig({ VEXIL_DATABASE_URL: 'postgres://127.0.0.1/vexil' });
    expect(() => secretsKey(config, 'postgres')).toThrow(ConfigError);
    expect(() => secretsKey(config, 'postgres')).toThrow(/VEXIL_SECRETS_KEY is required/);
  });

  it('is generated once beside a SQLite file, readable by its owner only', () => {
    const databaseFile = join(dir, 'vexil.db');
    const config = loadConfig({ VEXIL_DATABASE_URL: databaseFile });
    const first = secretsKey(config, 'sqlite');
    expect(Buffer.from(first, 'base64')).toHaveLength(32);
    expect(statSync(generatedKeyFile(databaseFile)).mode & 0o777).toBe(0o600);
    expect(secretsKey(config, 'sqlite')).toBe(first);
    const other = loadConfig({ VEXIL_DATABASE_URL: join(dir, 'other.db') });
    expect(secretsKey(other, 'sqlite')).not.toBe(first);
  });

  it('is a fresh key per process for an in-memory database', () => {
    const config = loadConfig({ VEXIL_DATABASE_URL: ':memory:' });
    expect(secretsKey(config, 'sqlite')).not.toBe(secretsKey(config, 'sqlite'));
  });
});
