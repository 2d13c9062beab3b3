import type { Kysely } from 'kysely';
import { deriveKey, seal, unseal } from '../auth/sealing.js';
import { ConfigError } from '../config.js';
import type { Schema } from '../db/schema.js';

/**
 * Webhook signing secrets at rest (design record 015). HMAC signing needs each secret itself, so
 * it cannot be hashed like a token: it is sealed with a key derived from the service's secrets
 * key and bound to its `webhook_secrets` row, so that a sealed value moved to another row does
 * not open.
 */
export class SigningSecretVault {
  private readonly key: Buffer;

  /** @param secretsKey the service's secrets key (auth/secrets-key.ts) */
  constructor(secretsKey: string) {
    this.key = deriveKey(secretsKey, 'webhook-signing-secrets');
  }

  /** The stored form of `secret`, the secret of row `secretId`. */
  seal(secretId: string, secret: string): string {
    return seal(this.key, secret, secretId);
  }

  /**
   * The `whsec_…` secret of row `secretId`.
   * @throws Error when the stored form was sealed with another key or for another row
   */
  open(secretId: string, stored: string): string {
    return unseal(this.key, stored, secretId);
  }

  /**
   * At start-up, before serving: checks that this vault's key opens the stored secrets, then
   * seals those stored in plain form before sealing existed. Each update names the plain value it
   * replaces, so nodes starting together seal a secret once.
   *
   * @returns how many secrets were sealed
   * @throws ConfigError when a stored secret does not open (the secrets key was changed)
   */
  async sealStoredSecrets(db: Kysely<Schema>): Promise<number> {
    const sealed = await db
      .selectFrom('webhook_secrets')
      .select(['id', 'secret'])
      .where('secret', 'not like', 'whsec_%')
      .limit(1)
      .executeTakeFirst();
    if (sealed) {
      try {
        this.open(sealed.id, sealed.secret);
      } catch {
        throw new ConfigError(
          'The secrets key does not open the stored webhook signing secrets: start with the ' +
            'VEXIL_SECRETS_KEY (or the generated key file) they were sealed with.',
        );
      }
    }
    const plain = await db
      .selectFrom('webhook_secrets')
      .select(['id', 'secret'])
      .where('secret', 'like', 'whsec_%')
      .execute();
    for (const row of plain) {
      await db
        .updateTable('webhook_secrets')
        .set({ secret: this.seal(row.id, row.secret) })
        .where('id', '=', row.id)
        .where('secret', '=', row.secret)
        .execute();
    }
    return plain.length;
  }
}
