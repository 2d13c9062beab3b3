import { createHash } from 'node:crypto';

/**
 * The stored form of a user's identity: base64url of the first 12 bytes of its SHA-256, 16
 * characters whatever the identity's length (a collision among a million users has a chance
 * near 10⁻¹⁷).
 */
export function userHash(identity: string): string {
  return createHash('sha256').update(identity).digest().subarray(0, 12).toString('base64url');
}
