import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Values that must be stored but must not be readable from the database alone (design record
 * 015): AES-256-GCM with a random 96-bit nonce. The associated data names the row a value belongs
 * to, so a sealed value copied into another row does not open there.
 *
 * Sealed form: `v1.<nonce>.<ciphertext>.<tag>`, each part base64url.
 */
const VERSION = 'v1';
const ALGORITHM = 'aes-256-gcm';
const NONCE_BYTES = 12;

/**
 * A 32-byte key for `purpose`, derived with HKDF-SHA256 from a high-entropy secret (a bearer
 * credential, or the configured secrets key). Different purposes give unrelated keys.
 */
export function deriveKey(secret: string | Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `vexil/${purpose}`, 32));
}

/** `plaintext` sealed with `key` (32 bytes), bound to `associatedData`. */
export function seal(key: Buffer, plaintext: string, associatedData: string): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, nonce).setAAD(Buffer.from(associatedData));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, nonce, ciphertext, cipher.getAuthTag()]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/**
 * The plaintext of a value {@link seal} produced with the same key and associated data.
 * @throws Error when the key or associated data differ, or the value was altered
 */
export function unseal(key: Buffer, sealed: string, associatedData: string): string {
  const [version, nonce, ciphertext, tag] = sealed.split('.');
  if (version !== VERSION || nonce === undefined || ciphertext === undefined || tag === undefined)
    throw new Error('not a sealed value');
  const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(nonce, 'base64url'))
    .setAAD(Buffer.from(associatedData))
    .setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([
    decipher.update(Buffer.from(ciphertext, 'base64url')),
    decipher.final(),
  ]).toString('utf8');
}
