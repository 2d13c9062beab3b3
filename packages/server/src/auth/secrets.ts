import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Bearer credentials and SDK keys: high-entropy random strings with a readable prefix.
 * Only their SHA-256 is stored; lookups go by hash (a slow KDF buys nothing for 256-bit
 * random secrets), and the final comparison is constant-time.
 */
export type SecretPrefix =
  | 'vxl_pat'
  | 'vxl_svc'
  | 'vxl_srv'
  | 'vxl_cli'
  /** A browser session (the cookie) and an invitation link (design record 022). */
  | 'vxl_ses'
  | 'vxl_inv'
  /** A password reset link (design record 034). */
  | 'vxl_pwr';

/** A fresh secret: `<prefix>_<43 chars of base64url>` (32 random bytes). */
export function generateSecret(prefix: SecretPrefix): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** The stored form of a secret: hex SHA-256. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Constant-time check that `secret` hashes to `storedHash`. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The reminder returned with every secret that is shown once. */
export const SHOWN_ONCE_WARNING =
  'Store this value now: it is shown only once and cannot be retrieved again.';
