import { hash, verify } from '@node-rs/argon2';
import { invalidField } from '../http/errors.js';

/**
 * Passwords (design record 022): Argon2id with the OWASP-recommended parameters (19 MiB, two
 * passes), stored as PHC strings, so parameters can be raised later without a migration.
 */
export const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;

// The library's default algorithm is Argon2id.
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/**
 * The stored form of a new password.
 * @throws ApiError `validation_failed` on `field` when it is shorter than {@link MIN_PASSWORD_LENGTH}.
 */
export async function hashPassword(password: string, field = 'password'): Promise<string> {
  if (password.length < MIN_PASSWORD_LENGTH)
    throw invalidField(field, `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH)
    throw invalidField(field, `must be at most ${MAX_PASSWORD_LENGTH} characters`);
  return hash(password, OPTIONS);
}

// Hashed once, so that an unknown address costs as much as a wrong password.
let decoy: Promise<string> | undefined;

/**
 * Whether `password` matches `storedHash`. With no stored hash (unknown address, or a user who
 * signs in only through SSO) a decoy hash is checked, so that the time taken does not tell.
 */
export async function passwordMatches(
  password: string,
  storedHash: string | null,
): Promise<boolean> {
  decoy ??= hash('decoy password, never matches', OPTIONS);
  const target = storedHash ?? (await decoy);
  const matches = await verify(target, password.slice(0, MAX_PASSWORD_LENGTH)).catch(() => false);
  return matches && storedHash !== null;
}
