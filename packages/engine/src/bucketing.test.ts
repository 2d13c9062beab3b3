import fc from 'fast-check';
import murmurhash from 'murmurhash';
import { describe, expect, it } from 'vitest';
import { bucket, BUCKET_COUNT } from './bucketing.js';

describe('rollout: bucket is murmur3 x86_32 of the UTF-8 bytes of "salt.value", seed 0, mod 100000', () => {
  it('uses the reference MurmurHash3 x86_32', () => {
    // Published reference value for MurmurHash3_x86_32, seed 0.
    expect(murmurhash.v3('The quick brown fox jumps over the lazy dog', 0)).toBe(0x2e4ff723);
  });

  it('hashes salt, a dot, then the value', () => {
    const bytes = new TextEncoder().encode('my-flag.user-42');
    expect(bucket('my-flag', 'user-42')).toBe(murmurhash.v3(bytes, 0) % BUCKET_COUNT);
  });

  it('hashes non-ASCII text as UTF-8 bytes, so other languages can reproduce it', () => {
    const bytes = new TextEncoder().encode('flag.üser-é-用户-🚀');
    expect(bytes.length).toBeGreaterThan('flag.üser-é-用户-🚀'.length);
    expect(bucket('flag', 'üser-é-用户-🚀')).toBe(murmurhash.v3(bytes, 0) % BUCKET_COUNT);
  });
});

describe('rollout: bucketing is sticky', () => {
  it('gives the same bucket for the same salt and value', () => {
    expect(bucket('checkout', 'user-1')).toBe(bucket('checkout', 'user-1'));
  });
});

describe('rollout: buckets differ between salts', () => {
  it('places the same value differently under different salts', () => {
    const values = Array.from({ length: 50 }, (_, i) => `user-${i}`);
    const same = values.filter((v) => bucket('flag-a', v) === bucket('flag-b', v));
    expect(same.length).toBeLessThan(2);
  });
});

describe('rollout: bucket equals the reference for any text', () => {
  // ASCII input up to 256 bytes is hashed from a reused buffer; everything else via TextEncoder.
  const reference = (salt: string, value: string): number =>
    murmurhash.v3(new TextEncoder().encode(`${salt}.${value}`), 0) % BUCKET_COUNT;

  it('matches murmur3 over the TextEncoder bytes, short, long, ASCII or not', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ minLength: 240, maxLength: 300 }),
    );
    fc.assert(
      fc.property(text, text, (salt, value) => {
        expect(bucket(salt, value)).toBe(reference(salt, value));
      }),
      { seed: 20_240_601, numRuns: 500 },
    );
  });

  it('is not affected by a previous input of the same length', () => {
    expect(bucket('ab', 'cd')).toBe(reference('ab', 'cd'));
    expect(bucket('ab', 'cé')).toBe(reference('ab', 'cé'));
    expect(bucket('ab', 'ce')).toBe(reference('ab', 'ce'));
  });
});
