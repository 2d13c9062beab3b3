import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveKey, seal, unseal } from './sealing.js';

describe('sealing', () => {
  const key = deriveKey('vxl_pat_' + randomBytes(32).toString('base64url'), 'test');

  it('opens with the same key and associated data', () => {
    const sealed = seal(key, '{"secret":"whsec_abc"}', 'row-1');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('whsec_abc');
    expect(unseal(key, sealed, 'row-1')).toBe('{"secret":"whsec_abc"}');
  });

  it('seals the same plaintext differently each time (random nonce)', () => {
    expect(seal(key, 'same', 'row')).not.toBe(seal(key, 'same', 'row'));
  });

  it('does not open with another key, other associated data, or an altered value', () => {
    const sealed = seal(key, 'plaintext', 'row-1');
    expect(() => unseal(deriveKey('another credential', 'test'), sealed, 'row-1')).toThrow();
    expect(() => unseal(key, sealed, 'row-2')).toThrow();
    const [version, nonce, ciphertext, tag] = sealed.split('.') as [string, string, string, string];
    const flipped = Buffer.from(ciphertext, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    const altered = [version, nonce, flipped.toString('base64url'), tag].join('.');
    expect(() => unseal(key, altered, 'row-1')).toThrow();
    expect(() => unseal(key, 'whsec_plain', 'row-1')).toThrow('not a sealed value');
  });

  it('derives unrelated keys for different purposes and secrets', () => {
    expect(deriveKey('secret', 'a')).toHaveLength(32);
    expect(deriveKey('secret', 'a').equals(deriveKey('secret', 'a'))).toBe(true);
    expect(deriveKey('secret', 'a').equals(deriveKey('secret', 'b'))).toBe(false);
    expect(deriveKey('secret', 'a').equals(deriveKey('secret2', 'a'))).toBe(false);
  });
});
