import type { Kysely } from 'kysely';
import { clientSecretBinding } from '../auth/oidc.js';
import { deriveKey, seal, unseal } from '../auth/sealing.js';
import { ConfigError } from '../config.js';
import type { Schema } from '../db/schema.js';

const PURPOSE = 'webhook-signing-secrets';

/** The secret of row `secretId` when `key` opens its stored form, else undefined. */
function openWith(key: Buffer, secretId: string, stored: string): string | undefined {
  try {
    return unseal(key, stored, secretId);
  } catch {
    return undefined;
  }
}

/**
 * Webhook signing secrets at rest (design record 015). HMAC signing needs each secret itself, so
 * it cannot be hashed like a token: it is sealed with a key derived from the service's secrets
 * key and bound to its `webhook_secrets` row, so that a sealed value moved to another row does
 * not open.
 */
export class SigningSecretVault {
  private readonly key: Buffer;
  private readonly previousKey: Buffer | null;

  /**
   * @param secretsKey the service's secrets key (auth/secrets-key.ts)
   * @param previousSecretsKey the secrets key before a rotation, if one is under way
   */
  constructor(secretsKey: string, previousSecretsKey: string | null = null) {
    this.key = deriveKey(secretsKey, PURPOSE);
    this.previousKey = previousSecretsKey === null ? null : deriveKey(previousSecretsKey, PURPOSE);
  }

  /** The stored form of `secret`, the secret of row `secretId`. */
  seal(secretId: string, secret: string): string {
    return seal(this.key, secret, secretId);
  }

  /**
   * The `whsec_…` secret of row `secretId`. During a rotation the previous key opens it too: a
   * node still on the old key may have added it after this node's start-up pass.
   * @throws Error when the stored form was sealed with another key or for another row
   */
  open(secretId: string, stored: string): string {
    const secret =
      openWith(this.key, secretId, stored) ??
      (this.previousKey === null ? undefined : openWith(this.previousKey, secretId, stored));
    if (secret === undefined) throw new Error(`stored secret ${secretId} does not open`);
    return secret;
  }

  /**
   * At start-up, before serving, brings every stored secret under the current key: secrets
   * stored plain (before sealing existed) are sealed, and secrets the previous key opens are
   * sealed again. Each update names the value it replaces, so nodes starting together rewrite a
   * secret once.
   *
   * @returns how many secrets were rewritten
   * @throws ConfigError when a stored secret opens with neither key (the secrets key was changed
   *   without `VEXIL_SECRETS_KEY_PREVIOUS`)
   */
  async sealStoredSecrets(db: Kysely<Schema>): Promise<number> {
    const rows = await db.selectFrom('webhook_secrets').select(['id', 'secret']).execute();
    // SSO client secrets are sealed with the same key (design record 022), bound to their row.
    const connections = await db
      .selectFrom('sso_connections')
      .select(['id', 'client_secret'])
      .execute();
    // Every row is checked before any is written: a key that opens nothing changes nothing.
    const rewrites = rows.flatMap((row) => {
      const secret = this.secretToRewrite(row.id, row.secret);
      return secret === undefined ? [] : [{ ...row, secret, stored: row.secret }];
    });
    const connectionRewrites = connections.flatMap((row) => {
      const binding = clientSecretBinding(row.id);
      const secret = this.secretToRewrite(binding, row.client_secret);
      return secret === undefined
        ? []
        : [{ id: row.id, binding, secret, stored: row.client_secret }];
    });
    for (const { id, secret, stored } of rewrites) {
      await db
        .updateTable('webhook_secrets')
        .set({ secret: this.seal(id, secret) })
        .where('id', '=', id)
        .where('secret', '=', stored)
        .execute();
    }
    for (const { id, binding, secret, stored } of connectionRewrites) {
      await db
        .updateTable('sso_connections')
        .set({ client_secret: this.seal(binding, secret) })
        .where('id', '=', id)
        .where('client_secret', '=', stored)
        .execute();
    }
    return rewrites.length + connectionRewrites.length;
  }

  /** The secret of a stored row that must be rewritten, or undefined when the current key opens it. */
  private secretToRewrite(secretId: string, stored: string): string | undefined {
    if (stored.startsWith('whsec_')) return stored;
    if (openWith(this.key, secretId, stored) !== undefined) return undefined;
    const previous =
      this.previousKey === null ? undefined : openWith(this.previousKey, secretId, stored);
    if (previous !== undefined) return previous;
    throw new ConfigError(
      'The secrets key does not open the stored webhook signing secrets or SSO client secrets: start with the ' +
        'VEXIL_SECRETS_KEY (or the generated key file) they were sealed with, or, to rotate, ' +
        'with the new key and the old one as VEXIL_SECRETS_KEY_PREVIOUS.',
    );
  }
}
