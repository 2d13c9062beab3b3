import { Type } from 'typebox';
import { ActionsSchema } from '../../api/actions.js';
import { NullableString, Timestamp, Uuid } from '../../api/fields.js';

export const FLAG_TYPES = ['Boolean', 'String', 'Number', 'Json'] as const;
export const FlagTypeSchema = Type.Enum(FLAG_TYPES);

/** Variation as nested in a flag (no `_actions`: nested resources carry none). */
export const VariationItem = Type.Object({
  id: Uuid,
  key: NullableString,
  name: NullableString,
  value: NullableString,
  description: NullableString,
});
export const VariationResponse = Type.Intersect([
  VariationItem,
  Type.Object({ _actions: ActionsSchema }),
]);

export const OwnerSchema = Type.Union([
  Type.Object({ id: Uuid, email: NullableString, name: NullableString }),
  Type.Null(),
]);

/** Most keys a flag's metadata may have. */
export const METADATA_MAX_KEYS = 32;

/**
 * Flag metadata: what a team records about a flag for its code (a version, an owner team, a
 * ticket), served to SDKs with the flag and returned by OFREP as OpenFeature flag metadata, so
 * values are OpenFeature's flag-metadata types: strings (at most 512 characters), finite numbers,
 * Booleans. At most {@link METADATA_MAX_KEYS} keys of 1–64 characters.
 */
export const FlagMetadataSchema = Type.Record(
  Type.String(),
  Type.Union([Type.String({ maxLength: 512 }), Type.Number(), Type.Boolean()]),
  {
    maxProperties: METADATA_MAX_KEYS,
    propertyNames: { minLength: 1, maxLength: 64 },
    description:
      'Flag metadata: keys of 1–64 characters (at most 32), values strings (at most 512 characters), finite numbers or Booleans.',
  },
);

/** Flag list item (not shown in the spec; design record 001). */
export const FlagListItem = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: NullableString,
  type: FlagTypeSchema,
  isArchived: Type.Boolean(),
  clientSideVisible: Type.Boolean(),
  tags: Type.Array(Type.String()),
  isPermanent: Type.Boolean(),
  expiresAtUtc: Type.Union([Timestamp, Type.Null()]),
  isExpired: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  /** On or off in each environment, in the project's order (the console's list columns). */
  environments: Type.Array(
    Type.Object({ environmentKey: Type.String(), isEnabled: Type.Boolean() }),
  ),
  /** References on the repositories' default branches; null: no repository scanned (flag-cleanup §2). */
  codeReferences: Type.Union([Type.Integer(), Type.Null()]),
});

/** Flag detail (spec: `PublicFlagResponse`). */
export const FlagResponse = Type.Object({
  id: Uuid,
  key: NullableString,
  name: NullableString,
  description: NullableString,
  type: FlagTypeSchema,
  isArchived: Type.Boolean(),
  clientSideVisible: Type.Boolean(),
  tags: Type.Array(Type.String()),
  metadata: FlagMetadataSchema,
  variations: Type.Array(VariationItem),
  variationsRevision: Type.Integer({
    description:
      'The revision of the variation set, +1 on every change to it: the `baseRevision` of a `variations` change request (design record 042).',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  expiresAtUtc: Type.Union([Timestamp, Type.Null()]),
  /** Derived: `expiresAtUtc` has passed (always false while flag expiration is switched off). */
  isExpired: Type.Boolean(),
  owner: OwnerSchema,
  removalPrUrl: NullableString,
  isPermanent: Type.Boolean(),
  _actions: ActionsSchema,
});

export const RolloutSchema = Type.Array(
  Type.Object(
    { variationId: Uuid, weight: Type.Integer({ minimum: 0, maximum: 100000 }) },
    { additionalProperties: false },
  ),
  { maxItems: 100 },
);

export const PrerequisitesSchema = Type.Array(
  Type.Object(
    {
      prerequisiteFlagKey: Type.String({ minLength: 1 }),
      expectedVariationKey: Type.String({ minLength: 1 }),
    },
    { additionalProperties: false },
  ),
  { maxItems: 50 },
);

export const STRATEGIES = ['SingleVariation', 'PercentageRollout', 'TargetedRollout'] as const;

/** Flag environment configuration (spec: `PublicFlagEnvironmentConfigResponse`, plus the off variation and rollout). */
export const FlagEnvironmentResponse = Type.Object({
  environmentId: Uuid,
  environmentKey: NullableString,
  isEnabled: Type.Boolean(),
  defaultVariationId: Uuid,
  offVariationId: Uuid,
  strategy: Type.Enum(STRATEGIES),
  rollout: RolloutSchema,
  prerequisites: PrerequisitesSchema,
  revision: Type.Integer({
    description:
      'The revision of this configuration and its rules, +1 on every change: the `baseRevision` of a `flag` change request (design record 042).',
  }),
  _actions: ActionsSchema,
});
