import { resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type { Schema } from '../db/schema.js';
import { openFirstRunSetup } from '../sign-in/first-run.js';
import { isPostgresUrl, postgresTarget } from './backup.js';

/** What a starting node tells the person who started it. */
export interface StartUp {
  version: string;
  /** Where the node listens, e.g. `http://127.0.0.1:8080`. */
  listening: string;
  /** The web console's address; null on a node that does not serve it. */
  console: string | null;
  /** The database, by path or host, never with its password ({@link describeDatabase}). */
  database: string;
  roles: readonly string[];
  /** What to do next, one sentence each ({@link nextSteps}). */
  next: readonly string[];
}

/** The database as a start-up message names it: a SQLite file's path, or PostgreSQL's user, host and database. */
export function describeDatabase(url: string): string {
  if (!isPostgresUrl(url)) return `SQLite ${url === ':memory:' ? url : resolve(url)}`;
  const { username, host, port, database } = postgresTarget(url);
  return `PostgreSQL ${username}@${host}:${port}/${database}`;
}

/**
 * What a person starting the service does next: while there is no organization, set it up in
 * the console with a one-time setup code stored now (design record 040), else sign in. Nothing
 * when the node serves no console, or the database cannot be read yet.
 */
export async function nextSteps(
  db: Kysely<Schema>,
  consoleUrl: string | null,
  now: Date,
): Promise<string[]> {
  if (consoleUrl === null) return [];
  const code = await openFirstRunSetup(db, now).catch(() => null);
  if (code === null) return [];
  return code === undefined
    ? [`sign in at ${consoleUrl}`]
    : [
        `no organization yet: open ${consoleUrl} and enter the setup code ${code}`,
        '(or script it: npx vexil bootstrap --org <slug> --email <your e-mail>)',
      ];
}

/** The start-up banner for a terminal: the version, then one aligned line per fact. */
export function bannerText(startUp: StartUp): string {
  const rows: [string, string][] = [
    ['listening', startUp.listening],
    ...(startUp.console === null ? [] : ([['console', startUp.console]] as [string, string][])),
    ['database', startUp.database],
    ['roles', startUp.roles.join(', ')],
    ...startUp.next.map((step, index): [string, string] => [index === 0 ? 'next' : '', step]),
  ];
  return [
    `Vexil ${startUp.version}`,
    ...rows.map(([label, value]) => `  ${label.padEnd(10)} ${value}`),
    '',
  ].join('\n');
}
