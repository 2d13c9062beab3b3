/**
 * Deterministic bucketing for percentage rollouts. The algorithm is part of the wire contract:
 * every SDK must reproduce it bit for bit, which is why it is plain MurmurHash3 over UTF-8 bytes.
 */
import murmurhash from 'murmurhash';

/** Number of buckets: weights are in thousandths of a percent, so 100 000 = 100%. */
export const BUCKET_COUNT = 100_000;

const utf8 = new TextEncoder();

// Salts and identities are nearly always short ASCII strings, whose UTF-8 bytes are their char
// codes. Writing those into a reused buffer avoids the string concatenation and the new
// Uint8Array that `TextEncoder.encode` costs on every rollout evaluation, which profiling showed
// to be the largest single cost of evaluating a rollout. The hash reads its input's `length`, so
// there is one buffer per input length, created on first use and bounded by ASCII_SCRATCH_LIMIT
// (at most ~33 KB in all). Longer or non-ASCII input takes the TextEncoder path.
const ASCII_SCRATCH_LIMIT = 256;
const asciiScratch: (Uint8Array | undefined)[] = [];

/** `salt + "." + value` as bytes when it is ASCII and short, else `undefined`. */
function asciiBytes(salt: string, value: string): Uint8Array | undefined {
  const length = salt.length + 1 + value.length;
  if (length > ASCII_SCRATCH_LIMIT) return undefined;
  let bytes = asciiScratch[length];
  if (bytes === undefined) {
    bytes = new Uint8Array(length);
    asciiScratch[length] = bytes;
  }
  for (let i = 0; i < salt.length; i++) {
    const code = salt.charCodeAt(i);
    if (code > 0x7f) return undefined;
    bytes[i] = code;
  }
  bytes[salt.length] = 0x2e; // "."
  const offset = salt.length + 1;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code > 0x7f) return undefined;
    bytes[offset + i] = code;
  }
  return bytes;
}

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
  const bytes = asciiBytes(salt, value) ?? utf8.encode(`${salt}.${value}`);
  return murmurhash.v3(bytes, 0) % BUCKET_COUNT;
}
