/**
 * Deterministic bucketing for percentage rollouts. The algorithm is part of the wire contract:
 * every SDK must reproduce it bit for bit, which is why it is plain MurmurHash3 over UTF-8 bytes.
 */
import murmurhash from 'murmurhash';

/** Number of buckets: weights are in thousandths of a percent, so 100 000 = 100%. */
export const BUCKET_COUNT = 100_000;

const utf8 = new TextEncoder();

/**
 * The bucket (0–99 999) a value falls in for a given salt:
 * `murmur3_x86_32(utf8(salt + "." + value), seed 0) % 100000`.
 *
 * Deterministic and sticky (the same salt and value always give the same bucket), independent
 * between salts (each flag uses its own salt, so being in one flag's first 10% says nothing about
 * another's), and the basis of monotone rollouts: a rollout serves buckets `[0, N)`, so growing N
 * only adds contexts.
 *
 * @param salt - the rollout's salt (the flag key when the configuration gives none)
 * @param value - the context's bucketing identity
 */
export function bucket(salt: string, value: string): number {
  // The murmurhash package would also UTF-8 encode a string, but with a new TextEncoder per call.
  return murmurhash.v3(utf8.encode(`${salt}.${value}`), 0) % BUCKET_COUNT;
}
