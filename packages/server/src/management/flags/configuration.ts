import type { FlagEnvironmentsTable, FlagsTable } from '../../db/schema.js';
import { ApiError, invalidField } from '../../errors.js';

/**
 * A flag's configuration in a new environment: disabled, serving `defaultVariationId` when on and
 * `offVariationId` when off (design record 021).
 */
export function initialConfiguration(
  flagId: string,
  environmentId: string,
  defaultVariationId: string,
  offVariationId: string,
  now: string,
): FlagEnvironmentsTable {
  return {
    flag_id: flagId,
    environment_id: environmentId,
    is_enabled: 0,
    default_variation_id: defaultVariationId,
    off_variation_id: offVariationId,
    strategy: 'SingleVariation',
    rollout: '[]',
    prerequisites: '[]',
    rollout_salt: null,
    revision: 1,
    version: 1,
    updated_at: now,
  };
}

/**
 * The variation a new flag serves while off when its create request names none (design record
 * 021): a Boolean flag's first `false` variation; otherwise the first variation. Undefined only
 * for an empty list.
 */
export function defaultOffVariation<V extends { value: string }>(
  type: FlagsTable['type'],
  variations: readonly V[],
): V | undefined {
  const boolFalse =
    type === 'Boolean' ? variations.find((variation) => variation.value === 'false') : undefined;
  return boolFalse ?? variations[0];
}

/**
 * Checks a variation value against the flag's type. Values are strings on the wire (spec:
 * Variation `value`); SDKs receive them typed.
 * @throws ApiError `validation_failed` on `field`.
 */
export function checkVariationValue(type: FlagsTable['type'], value: string, field: string): void {
  switch (type) {
    case 'Boolean':
      if (value !== 'true' && value !== 'false')
        throw invalidField(field, 'must be "true" or "false" for a Boolean flag');
      return;
    case 'Number':
      if (value.trim() === '' || !Number.isFinite(Number(value)))
        throw invalidField(field, 'must be a finite number for a Number flag');
      return;
    case 'Json':
      try {
        JSON.parse(value);
      } catch {
        throw invalidField(field, 'must be valid JSON for a Json flag');
      }
      return;
    case 'String':
      return;
  }
}

/**
 * Refuses to change the targeting of an archived flag: it is out of every SDK configuration.
 * @throws ApiError 400 `bad_request`.
 */
export function checkNotArchived(flag: Pick<FlagsTable, 'key' | 'is_archived'>): void {
  if (flag.is_archived)
    throw new ApiError('bad_request', `Flag "${flag.key}" is archived; restore it first.`);
}
