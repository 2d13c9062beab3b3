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
  | 'vxl_pwr'
  /** A relay key (design record 045): `vxr_…`, as the relay contract names it. */
  | 'vxr';

/** What each kind of secret is called, by its prefix, in errors that name a misplaced one. */
const SECRET_KINDS: Record<SecretPrefix, string> = {
  vxl_pat: 'a personal access token',
  vxl_svc: 'a service token',
  vxl_srv: 'a server-side SDK key',
  vxl_cli: 'a client-side SDK key',
  vxl_ses: 'a session cookie',
  vxl_inv: 'an invitation token',
  vxl_pwr: 'a password reset token',
  vxr: 'a relay key',
};

/** What {@link secretKind} calls a relay key. */
export const RELAY_KEY_KIND = SECRET_KINDS.vxr;

/** What `secret` is by its prefix ("a personal access token"…), or null when it has none of ours. */
export function secretKind(secret: string): string | null {
  const prefix = /^(vxl_[a-z]{3}|vxr)_/.exec(secret)?.[1];
  return prefix !== undefined && Object.hasOwn(SECRET_KINDS, prefix)
    ? SECRET_KINDS[prefix as SecretPrefix]
    : null;
}

/** Whether `secret` has the prefix of an SDK key (which is not a bearer token of the management API). */
export function isSdkKey(secret: string): boolean {
  return secret.startsWith('vxl_srv_') || secret.startsWith('vxl_cli_');
}

/** Whether `secret` has the prefix of a relay key (taken only by the relay routes, `/v1/relay/…`). */
export function isRelayKey(secret: string): boolean {
  return secret.startsWith('vxr_');
}

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
