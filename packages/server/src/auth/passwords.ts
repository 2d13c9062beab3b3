import { hash, verify } from '@node-rs/argon2';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';
import type { Config } from '../config.js';
import { ApiError, invalidField } from '../errors.js';

/**
 * Passwords (design record 022): Argon2id with the OWASP-recommended parameters (19 MiB, two
 * passes), stored as PHC strings, so parameters can be raised later without a migration.
 */
export const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;

// The library's default algorithm is Argon2id.
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/**
 * zxcvbn's score (0–4) a new password needs: 3 is "safely unguessable" (about 10^8 guesses and
 * more), which every common password, word-plus-digits and keyboard pattern falls short of.
 */
const MIN_STRENGTH = 3;

// The dictionaries (about 2 MB) are loaded on the first password set, not at start.
let strength: Promise<ZxcvbnFactory> | undefined;

function loadStrength(): Promise<ZxcvbnFactory> {
  strength ??= Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common')]).then(
    ([{ ZxcvbnFactory }, common]) =>
      new ZxcvbnFactory({ dictionary: common.dictionary, graphs: common.adjacencyGraphs }),
  );
  return strength;
}

/**
 * The stored form of a new password. It must be long enough, and not be a commonly used or
 * easily guessed one (NIST SP 800-63B 3.1.1.2), judged by zxcvbn against its list of common
 * passwords and `context` (the person's e-mail address and name, which must not make it up).
 * @throws ApiError `validation_failed` on `field` when it is too short, too long or too weak.
 */
export async function hashPassword(
  password: string,
  field = 'password',
  context: (string | null | undefined)[] = [],
): Promise<string> {
  if (password.length < MIN_PASSWORD_LENGTH)
    throw invalidField(field, `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH)
    throw invalidField(field, `must be at most ${MAX_PASSWORD_LENGTH} characters`);
  const words = context.filter((word): word is string => Boolean(word));
  if ((await loadStrength()).check(password, words).score < MIN_STRENGTH)
    throw invalidField(
      field,
      'is too easy to guess: a common password, or one close to it (a word with digits, a keyboard pattern, your name or address); a few unrelated words make a strong one',
    );
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

/**
 * Checks that passwords are in use on this instance (`VEXIL_PASSWORD_SIGN_IN`).
 * @throws ApiError `sign_in_disabled` (403) when they are switched off.
 */
export function checkPasswordsEnabled(config: Config): void {
  if (!config.signIn.passwordEnabled)
    throw new ApiError('sign_in_disabled', 'Password sign-in is switched off on this instance.');
}
