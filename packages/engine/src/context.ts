/**
 * Reading attributes from an evaluation context. Contexts arrive as free-form JSON, so every read
 * is defensive: own properties only (a context attribute named `constructor` must not find
 * `Object.prototype.constructor`), and any shape is accepted without throwing.
 */
import type { EvaluationContext } from './types.js';

const hasOwn = Object.hasOwn;

function ownValue(record: object, name: string): unknown {
  return hasOwn(record, name) ? (record as Record<string, unknown>)[name] : undefined;
}

/**
 * Looks up an attribute: `context[name]` first, then `context.attributes[name]` (the server-SDK
 * evaluate body is `{ userId, attributes: {...} }`). `null` counts as absent, so a top-level
 * `null` falls through to `attributes`. Names are literal: `a.b` is not a path.
 */
export function lookupAttribute(context: EvaluationContext, name: string): unknown {
  const top = ownValue(context, name);
  if (top !== undefined && top !== null) return top;
  const nested = ownValue(context, 'attributes');
  if (typeof nested !== 'object' || nested === null || Array.isArray(nested)) return undefined;
  const value = ownValue(nested, name);
  return value === null ? undefined : value;
}

/** Identity attributes tried, in order, when a rollout has no `bucketBy`. */
export const DEFAULT_IDENTITY_ATTRIBUTES = ['userId', 'key', 'targetingKey'] as const;

function identityString(value: unknown): string | undefined {
  if (typeof value === 'string') return value.length > 0 ? value : undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * The value a rollout hashes: the `bucketBy` attribute when the rollout names one (no fallback:
 * silently bucketing by another attribute would reshuffle who gets what), else the first of
 * `userId`, `key`, `targetingKey`. Only non-empty strings and finite numbers qualify.
 *
 * @returns the identity, or `undefined` when the context has none.
 */
export function bucketingIdentity(
  context: EvaluationContext,
  bucketBy: string | null,
): string | undefined {
  if (bucketBy !== null) return identityString(lookupAttribute(context, bucketBy));
  for (const name of DEFAULT_IDENTITY_ATTRIBUTES) {
    const identity = identityString(lookupAttribute(context, name));
    if (identity !== undefined) return identity;
  }
  return undefined;
}
