import type { Kysely } from 'kysely';
import { hashSecret } from '../auth/secrets.js';
import type { Schema } from '../db/schema.js';
import type { SdkKeyGrant } from './sdk-key-grant.js';
import type { CopiedKey, SnapshotCopies } from './snapshot-copies.js';

/** How long a resolved key is trusted before it is looked up again (covers revocations on other nodes). */
const KEY_TTL_MS = 10_000;

/** Cached keys (known and unknown) before the cache is emptied, so a flood of bad keys is bounded. */
const CACHE_LIMIT = 100_000;

/**
 * Keys up to this length are cached by the key itself (real SDK keys are 51 characters); longer
 * strings, which cannot be keys, are cached by their hash so that the cache's memory stays bounded
 * whatever the Authorization header holds.
 */
const MAX_RAW_KEY_LENGTH = 128;

/**
 * Finds the grant of an active SDK key by its stored hash (null for none): in the database
 * ({@link databaseSdkKeys}), or in the key hashes a relay follows (design record 044).
 * @throws when the keys cannot be read (the database is unavailable)
 */
export type SdkKeyLookup = (keyHash: string) => Promise<SdkKeyGrant | null>;

/** The {@link SdkKeyLookup} of a node with a database. */
export function databaseSdkKeys(db: Kysely<Schema>): SdkKeyLookup {
  return async (keyHash) => {
    const row = await db
      .selectFrom('sdk_keys')
      .select(['id', 'environment_id', 'type'])
      .where('key_hash', '=', keyHash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return row ? { environmentId: row.environment_id, type: row.type, keyId: row.id } : null;
  };
}

interface CachedGrant {
  grant: SdkKeyGrant | null;
  expiresAt: number;
  /** The key's stored form, for removal by hash. */
  hash: string;
}

/**
 * Resolves SDK keys to their environment, caching by the key string so the hot path does neither
 * a database read nor a SHA-256 (profiling showed the hash at 2–4% of a server evaluation).
 * Revocations arrive by key hash: on this node they are seen at once; on other nodes within
 * {@link KEY_TTL_MS}.
 */
export class SdkKeyResolver {
  private readonly cache = new Map<string, CachedGrant>();
  /** Key hash → cache key, so that {@link forget} finds a key it only knows by hash. */
  private readonly cacheKeyByHash = new Map<string, string>();

  /**
   * @param copies where a grant comes from when the database is unreachable and the key was not
   *   cached: the snapshot copies on disk (design record 019); revocations reach them too
   */
  constructor(
    private readonly lookup: SdkKeyLookup,
    private readonly copies?: Pick<SnapshotCopies, 'grant' | 'keyRevoked'>,
  ) {}

  /**
   * The cached grant of `key` at `nowMs` (Unix milliseconds), without waiting: null for a key
   * known to be unknown or revoked, undefined when the cache cannot say (then {@link resolve}).
   */
  cached(key: string, nowMs: number): SdkKeyGrant | null | undefined {
    const cached = this.cache.get(key.length <= MAX_RAW_KEY_LENGTH ? key : hashSecret(key));
    return cached && cached.expiresAt > nowMs ? cached.grant : undefined;
  }

  /**
   * The grant of `key` at `nowMs` (Unix milliseconds), or null for an unknown or revoked key.
   * While the database cannot be reached, the key's last known grant (cached, or from the
   * snapshot copies on disk) is trusted for another {@link KEY_TTL_MS} (design record 019).
   * @throws the database error when the key has no last known grant
   */
  async resolve(key: string, nowMs: number): Promise<SdkKeyGrant | null> {
    const cached = this.cached(key, nowMs);
    if (cached !== undefined) return cached;
    const short = key.length <= MAX_RAW_KEY_LENGTH;
    const hash = hashSecret(key);
    const cacheKey = short ? key : hash;
    let grant: SdkKeyGrant | null;
    try {
      grant = await this.lookup(hash);
    } catch (error) {
      const lastKnown = this.cache.get(cacheKey)?.grant ?? (await this.copies?.grant(hash));
      if (!lastKnown) throw error;
      grant = lastKnown;
    }
    // Unknown keys are cached too, so a flood of bad keys does not become a flood of queries.
    if (this.cache.size >= CACHE_LIMIT) this.forgetAll();
    this.cache.set(cacheKey, { grant, expiresAt: nowMs + KEY_TTL_MS, hash });
    this.cacheKeyByHash.set(hash, cacheKey);
    return grant;
  }

  /** Drops the cached grant of the key with this hash (it was revoked), here and in the copies. */
  forget(keyHash: string): void {
    void this.copies?.keyRevoked(keyHash);
    const cacheKey = this.cacheKeyByHash.get(keyHash);
    if (cacheKey === undefined) return;
    this.cacheKeyByHash.delete(keyHash);
    this.cache.delete(cacheKey);
  }

  /** Drops every cached grant (revocation notices may have been missed). */
  forgetAll(): void {
    this.cache.clear();
    this.cacheKeyByHash.clear();
  }
}

/** The environment's SDK keys not revoked, by stored hash (for its snapshot copy on disk). */
export async function activeKeyHashes(
  db: Kysely<Schema>,
  environmentId: string,
): Promise<CopiedKey[]> {
  const rows = await db
    .selectFrom('sdk_keys')
    .select(['id', 'key_hash', 'type'])
    .where('environment_id', '=', environmentId)
    .where('revoked_at', 'is', null)
    .execute();
  return rows.map((row) => ({ id: row.id, hash: row.key_hash, type: row.type }));
}
