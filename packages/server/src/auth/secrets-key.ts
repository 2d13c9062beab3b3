import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { ConfigError, type Config } from '../config.js';
import type { Dialect } from '../db/database.js';

/**
 * Where a SQLite database keeps the secrets key generated for it: beside the database file, so
 * that the two are backed up and moved together, and a copy of the database alone opens nothing.
 */
export function generatedKeyFile(databaseFile: string): string {
  return `${databaseFile}.key`;
}

/**
 * The service's secrets key (design record 015): `VEXIL_SECRETS_KEY` when set. Otherwise, with
 * SQLite, the key generated for the database file on its first start (32 random bytes, base64, in
 * a file only its owner can read), or a fresh key per process for an in-memory database.
 *
 * @throws ConfigError on PostgreSQL without `VEXIL_SECRETS_KEY`: every node must hold the same
 *   key, and only the operator can give it to them all
 */
export function secretsKey(config: Config, dialect: Dialect): string {
  if (config.secretsKey !== null) return config.secretsKey;
  if (dialect === 'postgres') {
    throw new ConfigError(
      'VEXIL_SECRETS_KEY is required with PostgreSQL: set the same key on every node ' +
        '(generate one with: openssl rand -base64 32).',
    );
  }
  if (config.databaseUrl === ':memory:') return randomBytes(32).toString('base64');
  const file = generatedKeyFile(config.databaseUrl);
  try {
    // `wx`: of two processes starting on one new database, one writes and both read its key.
    writeFileSync(file, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(file, 'utf8').trim();
}
