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
