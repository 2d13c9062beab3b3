import { Type } from 'typebox';
import { invalidField } from '../../errors.js';

export const TokenSummarySchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  lastFourCharacters: Type.String(),
  role: Type.Optional(Type.String()),
  projectScope: Type.Optional(Type.Array(Type.String())),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
});

/** A created token: the summary, the plaintext `token` (shown once) and a `warning`. */
export const TokenCreatedSchema = Type.Intersect([
  TokenSummarySchema,
  Type.Object({ token: Type.String(), warning: Type.String() }),
]);

/** Normalises an optional expiry; it must lie in the future. */
export function futureDate(value: string | null, now: Date): string | null {
  if (value === null) return null;
  const date = new Date(value);
  if (date <= now) throw invalidField('expiresAt', 'must be in the future');
  return date.toISOString();
}
