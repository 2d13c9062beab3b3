import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { request } from 'undici';
import { v7 as uuid } from 'uuid';
// Seeding 5,000 flags through the API would take minutes: rows are copied with the server's
// own storage module instead.
import { openDatabase } from '@vexil/server/dist/db/database.js';
import type { Schema } from '@vexil/server/dist/db/schema.js';
import type { BenchDatabase } from './databases.js';
import { heapUsed } from './fan-out.js';
import { residentMemory, withCleanup } from './processes.js';
import { required } from './required.js';
import { forEachConcurrently, ManagementClient } from './seed.js';
import { bootstrap, startNode } from './service.js';

export const MEMORY_FLAGS = 10_000;
export const MEMORY_ENVIRONMENTS = 10;
const PROJECT = 'catalog';
/** Bound parameters per INSERT: below PostgreSQL's 65,535 and SQLite's 32,766. */
const PARAMETERS_PER_INSERT = 30_000;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** How long to wait at most for the heap to settle after a phase (seconds). */
const SETTLE_SECONDS = 60;
const SETTLE_POLL_MS = 2_000;

/** The service's memory after one phase of requests. */
export interface MemoryPhase {
  /** What the phase did, e.g. "one `GET /v1/sdk/flags` per environment". */
  name: string;
  /** Time the phase's requests took, in turn (seconds). */
  seconds: number;
  /** RSS right after the phase (bytes): includes garbage not yet collected. */
  rssBytes: number;
  /**
   * Lowest RSS within {@link SETTLE_SECONDS} s of idling after the phase (bytes): once V8's
   * memory reducer has collected the phase's garbage and returned the pages.
   */
  settledRssBytes: number;
  /** When the lowest RSS was seen, seconds after the phase. */
  settledAfterSeconds: number;
  /** V8 heap in use at that point, from `/metrics` (bytes); null when not exported. */
  heapUsedBytes: number | null;
}

/** RSS of one service holding every environment's snapshot (issue 8, Benchmark). */
export interface MemoryMeasurement {
  database: string;
  flags: number;
  environments: number;
  rulesPerFlagAndEnvironment: number;
  seedSeconds: number;
  /** After start-up and seeding, before any SDK request (bytes). */
  idleRssBytes: number;
  /** Every environment's configuration downloaded, then every flag also evaluated. */
  phases: MemoryPhase[];
  /** Highest RSS the process reached (VmHWM; bytes), e.g. while building snapshots. */
  peakRssBytes: number;
  /** Size of one environment's configuration document (bytes). */
  configurationBytes: number;
  /** The same document as downloaded gzip-compressed, as SDKs ask for it (bytes). */
  compressedConfigurationBytes: number;
}

/**
 * Runs `requests`, then watches the idle service for up to {@link SETTLE_SECONDS} s and keeps
 * its lowest RSS.
 */
export async function measurePhase(
  node: { baseUrl: string; pid: number },
  name: string,
  requests: () => Promise<void>,
): Promise<MemoryPhase> {
  const start = performance.now();
  await requests();
  const end = performance.now();
  const { rss } = await residentMemory(node.pid);
  let settled = { rss, at: 0, heap: await heapUsed(`${node.baseUrl}/metrics`) };
  while (performance.now() - end < SETTLE_SECONDS * 1_000) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    const now = (await residentMemory(node.pid)).rss;
    if (now < settled.rss) {
      settled = {
        rss: now,
        at: (performance.now() - end) / 1_000,
        heap: await heapUsed(`${node.baseUrl}/metrics`),
      };
    }
  }
  return {
    name,
    seconds: (end - start) / 1_000,
    rssBytes: rss,
    settledRssBytes: settled.rss,
    settledAfterSeconds: settled.at,
    heapUsedBytes: settled.heap,
  };
}

const rule = (variationId: string) => ({
  description: 'European pro users on the new app',
  variationId,
  rolloutPercentage: 50,
  userSegmentId: null,
  conditionGroups: [
    {
      operator: 'And',
      conditions: [
        { attribute: 'country', operator: 'In', values: ['DE', 'FR'], negate: false },
        { attribute: 'plan', operator: 'Equals', values: ['pro'], negate: false },
        {
          attribute: 'appVersion',
          operator: 'SemverGreaterThanOrEqual',
          values: ['2.0.0'],
          negate: false,
        },
      ],
    },
  ],
});

/**
 * Template flags created through the management API: a Boolean flag and a client-visible String
 * flag with three variations, each with one three-condition rule and switched on in every
 * environment.
 */
async function createTemplates(
  client: ManagementClient,
  environments: string[],
): Promise<string[]> {
  const base = `/projects/${PROJECT}/flags`;
  const bodies = [
    { key: 'flag-0', name: 'Flag 0' },
    {
      key: 'flag-1',
      name: 'Flag 1',
      type: 'String',
      clientSideVisible: true,
      variations: ['control', 'treatment-a', 'treatment-b'].map((key) => ({ key, value: key })),
      offVariationKey: 'treatment-b',
    },
  ];
  const ids: string[] = [];
  for (const body of bodies) {
    const flag = await client.create(base, body);
    ids.push(String(flag.id));
    const variations = flag.variations as { id: string }[];
    await forEachConcurrently(environments, 4, async (environment) => {
      const path = `${base}/${body.key}/environments/${environment}`;
      await client.create(
        `${path}/rules`,
        rule(required(variations.at(-1), `variation of ${body.key}`).id),
      );
      await client.create(`${path}/toggle`, { enabled: true }, 204);
    });
  }
  return ids;
}

/**
 * Copies the template flags' rows (flag, variations, per-environment configurations, rules)
 * until the project holds {@link MEMORY_FLAGS} flags: exactly the rows the API wrote, with fresh
 * ids, keys and bucketing salts. Inserting through the API would take minutes; the copy takes
 * seconds. (The copies have no `flag.created` audit events, which SDK snapshots never read.)
 * Bumps the environments' versions, as every API change does.
 */
export async function cloneTemplates(url: string, templateIds: string[]): Promise<void> {
  const database = openDatabase(url);
  try {
    await database.db.transaction().execute(async (trx) => {
      const flags = await trx
        .selectFrom('flags')
        .selectAll()
        .where('id', 'in', templateIds)
        .execute();
      const owned = <T extends 'variations' | 'flag_environments' | 'rules'>(table: T) =>
        trx
          .selectFrom(table as 'rules')
          .selectAll()
          .where('flag_id', 'in', templateIds)
          .execute() as unknown as Promise<Schema[T][]>;
      const variations = await owned('variations');
      const configurations = await owned('flag_environments');
      const rules = await owned('rules');
      type Rows = {
        flags: Schema['flags'][];
        variations: Schema['variations'][];
        flag_environments: Schema['flag_environments'][];
        rules: Schema['rules'][];
      };
      // Each template's rows as JSON text cut at every id the flag owns (its own, its
      // variations', rules' and conditions' ids; not the project's or environments'), so a copy
      // is the pieces joined around fresh ids and parsed once.
      const templates = flags.map((flag) => {
        const mine = <T extends { flag_id: string }>(rows: T[]) =>
          rows.filter((row) => row.flag_id === flag.id);
        const rows: Rows = {
          flags: [flag],
          variations: mine(variations),
          flag_environments: mine(configurations),
          rules: mine(rules),
        };
        const ownedText = [flag.id, ...rows.variations.map((row) => row.id)]
          .concat(rows.rules.map((row) => `${row.id} ${row.condition_groups}`))
          .join(' ');
        const ownedIds = [...new Set(ownedText.match(UUID))];
        const text = JSON.stringify(rows);
        const pieces: (string | number)[] = [];
        let at = 0;
        for (const match of text.matchAll(UUID)) {
          const owner = ownedIds.indexOf(match[0]);
          if (owner === -1) continue;
          pieces.push(text.slice(at, match.index), owner);
          at = match.index + match[0].length;
        }
        pieces.push(text.slice(at));
        return { pieces, idCount: ownedIds.length };
      });
      // uuid's own randomness per id is slow for ~250,000 ids; one pool of random bytes is not.
      const random = randomBytes(16 * MEMORY_FLAGS * Math.max(...templates.map((t) => t.idCount)));
      let randomAt = 0;
      const freshId = () => uuid({ random: random.subarray(randomAt, (randomAt += 16)) });
      const copies: Rows = { flags: [], variations: [], flag_environments: [], rules: [] };
      for (let index = templateIds.length; index < MEMORY_FLAGS; index++) {
        const template = required(templates[index % templates.length], 'template');
        const ids = Array.from({ length: template.idCount }, freshId);
        const copy = JSON.parse(
          template.pieces.map((piece) => (typeof piece === 'number' ? ids[piece] : piece)).join(''),
        ) as Rows;
        copies.flags.push({
          ...required(copy.flags[0], 'template flag'),
          key: `flag-${index}`,
          name: `Flag ${index}`,
          salt: randomBytes(8).toString('hex'),
        });
        copies.variations.push(...copy.variations);
        copies.flag_environments.push(...copy.flag_environments);
        copies.rules.push(...copy.rules);
      }
      for (const table of ['flags', 'variations', 'flag_environments', 'rules'] as const) {
        const rows = copies[table];
        const chunk = Math.floor(PARAMETERS_PER_INSERT / Object.keys(rows[0] ?? {}).length);
        for (let start = 0; start < rows.length; start += chunk) {
          await trx
            .insertInto(table)
            .values(rows.slice(start, start + chunk))
            .execute();
        }
      }
      const environmentIds = [...new Set(configurations.map((row) => row.environment_id))];
      await trx
        .updateTable('environments')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', 'in', environmentIds)
        .execute();
    });
  } finally {
    await database.close();
  }
}

/**
 * Creates project `catalog` with {@link MEMORY_ENVIRONMENTS} environments through the API at
 * `client`: the template flags and a server-side SDK key per environment. {@link cloneTemplates}
 * then copies the templates up to {@link MEMORY_FLAGS} flags.
 *
 * @returns the SDK keys (one per environment) and the template flags' ids
 */
export async function createCatalog(
  client: ManagementClient,
): Promise<{ keys: string[]; templateIds: string[] }> {
  const environments = Array.from({ length: MEMORY_ENVIRONMENTS }, (_, index) => `env-${index}`);
  await client.create('/projects', {
    key: PROJECT,
    name: 'Catalog',
    environments: environments.map((key) => ({ key })),
  });
  const templateIds = await createTemplates(client, environments);
  const keys: string[] = [];
  for (const environment of environments) {
    const key = await client.create(`/projects/${PROJECT}/environments/${environment}/sdk-keys`, {
      name: 'bench server',
      type: 'ServerSide',
    });
    keys.push(String(key.key));
  }
  return { keys, templateIds };
}

/**
 * Seeds {@link MEMORY_FLAGS} flags in {@link MEMORY_ENVIRONMENTS} environments into a fresh
 * database, starts one `vexil serve`, loads every environment's snapshot through
 * `GET /v1/sdk/flags`, and reads the process's RSS. The database is dropped afterwards.
 *
 * @param progress receives human-readable progress lines
 */
export function measureMemory(
  database: BenchDatabase,
  progress: (message: string) => void,
): Promise<MemoryMeasurement> {
  return withCleanup(database.drop, async () => {
    const token = await bootstrap(database);
    const node = await startNode(database);
    try {
      progress(`memory: seeding ${MEMORY_FLAGS} flags × ${MEMORY_ENVIRONMENTS} environments`);
      const seedStart = performance.now();
      const catalog = await createCatalog(new ManagementClient(node.baseUrl, token));
      await cloneTemplates(database.url, catalog.templateIds);
      const { keys } = catalog;
      const seedSeconds = (performance.now() - seedStart) / 1_000;
      const pid = required(node.service.child.pid, 'pid of vexil serve');
      const idle = await residentMemory(pid);
      let configurationBytes = 0;
      let compressedConfigurationBytes = 0;
      progress('memory: downloading every environment’s configuration');
      const downloads = await measurePhase(
        { baseUrl: node.baseUrl, pid },
        'one `GET /v1/sdk/flags` per environment',
        async () => {
          for (const key of keys) {
            // Plain HTTP rather than fetch, to see the compressed size: SDKs ask for gzip.
            const response = await request(`${node.baseUrl}/v1/sdk/flags`, {
              headers: { authorization: key, 'accept-encoding': 'gzip' },
            });
            const compressed = Buffer.from(await response.body.arrayBuffer());
            if (response.statusCode !== 200) {
              throw new Error(`GET /v1/sdk/flags answered ${response.statusCode}`);
            }
            const body = gunzipSync(compressed).toString();
            const flagCount = (JSON.parse(body) as { flags: unknown[] }).flags.length;
            if (flagCount !== MEMORY_FLAGS) {
              throw new Error(
                `expected ${MEMORY_FLAGS} flags in the configuration, got ${flagCount}`,
              );
            }
            configurationBytes = Buffer.byteLength(body);
            compressedConfigurationBytes = compressed.length;
          }
        },
      );
      progress('memory: evaluating every flag of every environment');
      const evaluations = await measurePhase(
        { baseUrl: node.baseUrl, pid },
        'then one OFREP bulk evaluation of every flag per environment',
        async () => {
          for (const key of keys) {
            const response = await fetch(`${node.baseUrl}/ofrep/v1/evaluate/flags`, {
              method: 'POST',
              headers: { authorization: key, 'content-type': 'application/json' },
              body: JSON.stringify({ context: { targetingKey: 'user-1', country: 'DE' } }),
            });
            const body = await response.text();
            const flagCount = (JSON.parse(body) as { flags?: unknown[] }).flags?.length;
            if (flagCount !== MEMORY_FLAGS) {
              throw new Error(
                `OFREP bulk evaluation answered ${response.status}: ${body.slice(0, 300)}`,
              );
            }
          }
        },
      );
      return {
        database: database.name,
        flags: MEMORY_FLAGS,
        environments: MEMORY_ENVIRONMENTS,
        rulesPerFlagAndEnvironment: 1,
        seedSeconds,
        idleRssBytes: idle.rss,
        phases: [downloads, evaluations],
        peakRssBytes: (await residentMemory(pid)).peak,
        configurationBytes,
        compressedConfigurationBytes,
      };
    } catch (error) {
      throw new Error(`memory: ${String(error)}\nservice output:\n${node.service.output()}`, {
        cause: error,
      });
    } finally {
      await node.service.stop();
    }
  });
}
