import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { SdkFlag, SdkSegment } from '@vexil/engine';
import type { FastifyBaseLogger } from 'fastify';
import type { SdkKeyGrant } from './sdk-key-grant.js';

const gunzipAsync = promisify(gunzip);

/** Written into every copy; a copy of another format is ignored. */
const FORMAT = 'vexil-snapshot-copy/1';
const SUFFIX = '.snapshot';

/** An active SDK key of the copied environment, by its stored hash. */
export interface CopiedKey {
  /** The key's id; absent in copies written before Vexil recorded SDK keys' last use. */
  id?: string;
  hash: string;
  type: SdkKeyGrant['type'];
}

/** What a copy says about its environment besides the configuration document. */
interface CopyHeader {
  format: string;
  /** {@link databaseFingerprint} of the database the copy was read from. */
  database: string;
  environmentId: string;
  organizationId: string;
  projectId: string;
  version: number;
  clientSideKeys: string[];
  sdkKeys: CopiedKey[];
  /** SHA-256 (hex) of the gzipped document that follows the header. */
  documentSha256: string;
}

/** An environment's configuration as copied to disk, parsed and checked. */
export interface CopiedConfiguration {
  environmentId: string;
  organizationId: string;
  projectId: string;
  clientSideKeys: string[];
  /** The `GET /v1/sdk/flags` document as it was served. */
  configuration: { environment: string; version: number; flags: SdkFlag[]; segments: SdkSegment[] };
}

/** What is copied: a snapshot's identity and its gzipped `GET /v1/sdk/flags` document. */
export interface SnapshotToCopy {
  environmentId: string;
  organizationId: string;
  projectId: string;
  version: number;
  clientSideKeys: ReadonlySet<string>;
  document: { gzipped(): Promise<Buffer> };
}

/**
 * Names the database a copy was read from, without its password: a copy made for another
 * database (a directory shared by mistake, a changed `VEXIL_DATABASE_URL`) is foreign. Also the
 * upstream identity a full node announces to the relays that follow it (design record 045). A
 * relay names its upstream instead (`relay:<upstream URL>`, design record 044).
 */
export function databaseFingerprint(databaseUrl: string): string {
  let name = databaseUrl;
  try {
    const url = new URL(databaseUrl);
    url.password = '';
    name = url.toString();
  } catch {
    // A SQLite path: the path itself names the database.
  }
  return createHash('sha256').update(name).digest('hex');
}

/**
 * The last-known-good copies of the configurations a node serves, one file per environment in
 * `VEXIL_SNAPSHOT_CACHE_DIR` (design record 019). A copy is written, atomically (temporary file,
 * fsync, rename), each time a snapshot is built from the database, and read only when the
 * database cannot be reached: a node started during an outage serves from them. A file is a
 * JSON header line (format, database fingerprint, environment, active SDK key hashes, the
 * document's SHA-256) followed by the gzipped document; a copy that fails any check is ignored
 * with a log line, never served.
 */
export class SnapshotCopies {
  private readonly database: string;
  /** SDK key hash → grant, over every valid copy; read from disk when first needed. */
  private grants: Promise<Map<string, SdkKeyGrant>> | undefined;
  /** Writes of each environment's copy, in order: the newest snapshot's copy lands last. */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(
    private readonly directory: string,
    databaseUrl: string,
    private readonly log: Pick<FastifyBaseLogger, 'warn' | 'error'>,
  ) {
    this.database = databaseFingerprint(databaseUrl);
  }

  /** Writes the snapshot's copy, with the environment's active SDK keys; failures are logged. */
  save(snapshot: SnapshotToCopy, sdkKeys: CopiedKey[]): Promise<void> {
    this.grants = undefined;
    return this.queue(snapshot.environmentId, async () => {
      const gzipped = await snapshot.document.gzipped();
      const header: CopyHeader = {
        format: FORMAT,
        database: this.database,
        environmentId: snapshot.environmentId,
        organizationId: snapshot.organizationId,
        projectId: snapshot.projectId,
        version: snapshot.version,
        clientSideKeys: [...snapshot.clientSideKeys],
        sdkKeys,
        documentSha256: createHash('sha256').update(gzipped).digest('hex'),
      };
      await this.write(header, gzipped);
    });
  }

  /** Removes the copy of an environment that no longer exists. */
  remove(environmentId: string): Promise<void> {
    this.grants = undefined;
    return this.queue(environmentId, () => rm(this.path(environmentId), { force: true }));
  }

  /** Rewrites the copy holding a revoked SDK key without it. */
  async keyRevoked(keyHash: string): Promise<void> {
    const grant = (await this.grantsByHash()).get(keyHash);
    if (!grant) return;
    this.grants = undefined;
    await this.queue(grant.environmentId, async () => {
      const file = await this.readFile(grant.environmentId);
      if (!file) return;
      const sdkKeys = file.header.sdkKeys.filter((key) => key.hash !== keyHash);
      await this.write({ ...file.header, sdkKeys }, file.gzipped);
    });
  }

  /** The environment's copy, or undefined when there is none or it fails a check (logged). */
  async read(environmentId: string): Promise<CopiedConfiguration | undefined> {
    const file = await this.readFile(environmentId);
    return file && this.parse(environmentId, file);
  }

  /**
   * Every good copy with its environment's active SDK keys: what a relay starts from while its
   * upstream cannot be reached (design record 044). Copies that fail a check are left out (logged).
   */
  async readAll(): Promise<{ copy: CopiedConfiguration; sdkKeys: CopiedKey[] }[]> {
    const copies: { copy: CopiedConfiguration; sdkKeys: CopiedKey[] }[] = [];
    for (const environmentId of await this.environmentIds()) {
      const file = await this.readFile(environmentId);
      const copy = file && (await this.parse(environmentId, file));
      if (file && copy) copies.push({ copy, sdkKeys: file.header.sdkKeys });
    }
    return copies;
  }

  private async parse(
    environmentId: string,
    file: { header: CopyHeader; gzipped: Buffer },
  ): Promise<CopiedConfiguration | undefined> {
    try {
      const configuration = JSON.parse(
        (await gunzipAsync(file.gzipped)).toString(),
      ) as CopiedConfiguration['configuration'];
      if (configuration.version !== file.header.version || !Array.isArray(configuration.flags))
        throw new Error('the document does not match its header');
      const { organizationId, projectId, clientSideKeys } = file.header;
      return { environmentId, organizationId, projectId, clientSideKeys, configuration };
    } catch (error) {
      this.ignore(environmentId, `unreadable document: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** The grant of an SDK key (by hash) in the copies, if one holds it. */
  async grant(keyHash: string): Promise<SdkKeyGrant | undefined> {
    return (await this.grantsByHash()).get(keyHash);
  }

  /** Whether any copy is on disk (checked, like every copy, only when read). */
  async any(): Promise<boolean> {
    return (await this.environmentIds()).length > 0;
  }

  private grantsByHash(): Promise<Map<string, SdkKeyGrant>> {
    this.grants ??= (async () => {
      const grants = new Map<string, SdkKeyGrant>();
      for (const environmentId of await this.environmentIds()) {
        const file = await this.readFile(environmentId);
        for (const key of file?.header.sdkKeys ?? [])
          grants.set(key.hash, { environmentId, type: key.type, keyId: key.id ?? null });
      }
      return grants;
    })();
    return this.grants;
  }

  private async environmentIds(): Promise<string[]> {
    const names = await readdir(this.directory).catch(() => []);
    return names
      .filter((name) => name.endsWith(SUFFIX))
      .map((name) => name.slice(0, -SUFFIX.length));
  }

  /** Reads and checks a copy's header and document checksum. */
  private async readFile(
    environmentId: string,
  ): Promise<{ header: CopyHeader; gzipped: Buffer } | undefined> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.path(environmentId));
    } catch {
      return undefined;
    }
    const newline = bytes.indexOf(10);
    let header: CopyHeader;
    try {
      header = JSON.parse(bytes.subarray(0, newline).toString()) as CopyHeader;
    } catch {
      this.ignore(environmentId, 'unreadable header');
      return undefined;
    }
    if (header.format !== FORMAT) {
      this.ignore(environmentId, `format ${JSON.stringify(header.format)}, not ${FORMAT}`);
      return undefined;
    }
    if (header.database !== this.database || header.environmentId !== environmentId) {
      this.ignore(environmentId, 'copied from another database');
      return undefined;
    }
    const gzipped = bytes.subarray(newline + 1);
    if (createHash('sha256').update(gzipped).digest('hex') !== header.documentSha256) {
      this.ignore(environmentId, 'checksum mismatch');
      return undefined;
    }
    return { header, gzipped };
  }

  private ignore(environmentId: string, reason: string): void {
    this.log.error(
      { environmentId, file: this.path(environmentId), reason },
      'snapshot copy ignored: never served',
    );
  }

  private async write(header: CopyHeader, gzipped: Buffer): Promise<void> {
    await mkdir(this.directory, { recursive: true });
    const target = this.path(header.environmentId);
    const temporary = `${target}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), gzipped]));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  }

  private queue(environmentId: string, task: () => Promise<void>): Promise<void> {
    const previous = this.writes.get(environmentId) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((error: unknown) =>
        this.log.warn({ err: error, environmentId }, 'snapshot copy not written'),
      );
    this.writes.set(environmentId, next);
    void next.then(() => {
      if (this.writes.get(environmentId) === next) this.writes.delete(environmentId);
    });
    return next;
  }

  private path(environmentId: string): string {
    return join(this.directory, `${environmentId}${SUFFIX}`);
  }
}
