import type { Kysely } from 'kysely';
import { hashSecret } from '../auth/secrets.js';
import type { Schema } from '../db/schema.js';

/** What an SDK key grants: one environment, as a client or a server. */
export interface SdkKeyGrant {
  environmentId: string;
  type: 'ClientSide' | 'ServerSide';
}

/** How long a resolved key is trusted before it is looked up again (covers revocations on other nodes). */
const KEY_TTL_MS = 10_000;

/**
 * Resolves SDK keys to their environment, caching by hash so the hot path does no database
 * read. Revocations on this node are seen at once; on other nodes within {@link KEY_TTL_MS}.
 */
export class SdkKeyResolver {
  private readonly cache = new Map<string, { grant: SdkKeyGrant | null; expiresAt: number }>();

  constructor(private readonly db: Kysely<Schema>) {}

  async resolve(key: string, nowMs: number): Promise<SdkKeyGrant | null> {
    const hash = hashSecret(key);
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > nowMs) return cached.grant;
    const row = await this.db
      .selectFrom('sdk_keys')
      .select(['environment_id', 'type'])
      .where('key_hash', '=', hash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    const grant = row ? { environmentId: row.environment_id, type: row.type } : null;
    // Unknown keys are cached too, so a flood of bad keys does not become a flood of queries;
    // the map is bounded so that flood cannot exhaust memory either.
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(hash, { grant, expiresAt: nowMs + KEY_TTL_MS });
    return grant;
  }

  forget(keyHash: string): void {
    this.cache.delete(keyHash);
  }

  forgetAll(): void {
    this.cache.clear();
  }
}
