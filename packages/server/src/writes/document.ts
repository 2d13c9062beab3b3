import { CONDITION_OPERATORS } from '@vexil/engine';
import { Type, type Static } from 'typebox';
import {
  ColorSchema,
  DescriptionSchema,
  KeySchema,
  NameSchema,
  Timestamp,
  WebLinkSchema,
} from '../api/fields.js';
import { FLAG_TYPES, FlagMetadataSchema, STRATEGIES } from '../management/flags/schemas.js';
import { LOGICAL_OPERATORS } from '../management/targeting/conditions.js';

/**
 * The flags-as-code document (design record 027): one project's environments, segments and
 * flags, referring to everything by key. This TypeBox schema is the one source of truth: the
 * apply route validates with it, and `vexil schema` prints it as the published JSON Schema
 * (`docs/schemas/vexil-project.schema.json`).
 *
 * Members left out of an item take their empty value (no tags, no rules, not archived …): an item
 * in the document is declared whole. Items left out of the document are left alone, unless the
 * apply prunes (flags archived, segments deleted).
 */

/**
 * The `$schema` of exported documents: the published schema's file name, a reference relative to
 * the document. It is the same on every instance, so identical state exports identically (an
 * instance's own URL would differ, and name a port that may not be the one running); editors
 * resolve it beside the document, where `vexil schema > vexil-project.schema.json` puts it.
 */
export const DOCUMENT_SCHEMA_FILE = 'vexil-project.schema.json';

/** Where the published schema is served, relative to the instance's public URL. */
export const DOCUMENT_SCHEMA_PATH = `/schemas/${DOCUMENT_SCHEMA_FILE}`;

/** The document format's version; a change that old readers would misread is a new version. */
export const DOCUMENT_VERSION = 1;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Optional(Type.Union([schema, Type.Null()]));

export const DocumentCondition = Type.Object(
  {
    attribute: Type.String({ minLength: 1, maxLength: 256 }),
    operator: Type.Enum(CONDITION_OPERATORS),
    values: Type.Array(Type.String({ maxLength: 1024 }), { minItems: 1, maxItems: 1000 }),
    negate: Type.Optional(Type.Boolean({ description: 'Default false.' })),
  },
  { additionalProperties: false },
);

const DocumentConditionGroup = Type.Object(
  {
    operator: Type.Optional(Type.Enum(LOGICAL_OPERATORS, { description: 'Default And.' })),
    conditions: Type.Array(DocumentCondition, { maxItems: 100 }),
  },
  { additionalProperties: false },
);

const DocumentRule = Type.Object(
  {
    description: Type.Optional(DescriptionSchema),
    variation: Type.String({ minLength: 1, description: 'Key of the variation the rule serves.' }),
    rolloutWeight: Nullable(
      Type.Integer({
        minimum: 0,
        maximum: 100000,
        description:
          'Share of matching contexts served, in thousandths of a percent (12500 is 12.5%); null serves all of them.',
      }),
    ),
    segment: Nullable(
      Type.String({ minLength: 1, description: 'Key of a segment the context must be in.' }),
    ),
    conditionGroups: Type.Optional(Type.Array(DocumentConditionGroup, { maxItems: 50 })),
  },
  { additionalProperties: false },
);

export const DocumentFlagEnvironment = Type.Object(
  {
    enabled: Type.Boolean(),
    defaultVariation: Type.String({
      minLength: 1,
      description: 'Key of the variation served when on and no rule matches.',
    }),
    offVariation: Type.String({
      minLength: 1,
      description: 'Key of the variation served while off.',
    }),
    strategy: Type.Optional(Type.Enum(STRATEGIES, { description: 'Default SingleVariation.' })),
    rollout: Type.Optional(
      Type.Array(
        Type.Object(
          {
            variation: Type.String({ minLength: 1 }),
            weight: Type.Integer({
              minimum: 0,
              maximum: 100000,
              description: 'Thousandths of a percent.',
            }),
          },
          { additionalProperties: false },
        ),
        { maxItems: 100 },
      ),
    ),
    prerequisites: Type.Optional(
      Type.Array(
        Type.Object(
          { flag: Type.String({ minLength: 1 }), variation: Type.String({ minLength: 1 }) },
          { additionalProperties: false },
        ),
        { maxItems: 50 },
      ),
    ),
    rules: Type.Optional(
      Type.Array(DocumentRule, { maxItems: 1000, description: 'In evaluation order.' }),
    ),
  },
  { additionalProperties: false },
);

export const DocumentVariation = Type.Object(
  {
    key: KeySchema,
    name: Nullable(Type.String({ maxLength: 200 })),
    value: Type.String({
      maxLength: 65536,
      description: 'The value as text: "true"/"false", a number, JSON, or the string itself.',
    }),
    description: Type.Optional(DescriptionSchema),
  },
  { additionalProperties: false },
);

export const DocumentFlag = Type.Object(
  {
    key: KeySchema,
    name: Nullable(NameSchema),
    description: Type.Optional(DescriptionSchema),
    type: Type.Enum(FLAG_TYPES),
    archived: Type.Optional(Type.Boolean()),
    clientSideVisible: Type.Optional(Type.Boolean()),
    permanent: Type.Optional(Type.Boolean()),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, uniqueItems: true }),
    ),
    metadata: Type.Optional(FlagMetadataSchema),
    expiresAtUtc: Nullable(Timestamp),
    removalPrUrl: Nullable(WebLinkSchema),
    salt: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'Bucketing salt: keeps percentage rollouts placing the same contexts alike on another instance. Chosen at random when a new flag has none.',
      }),
    ),
    variations: Type.Array(DocumentVariation, { minItems: 1, maxItems: 100 }),
    environments: Type.Optional(
      Type.Record(Type.String(), DocumentFlagEnvironment, {
        description: 'Configuration by environment key; environments left out keep what they have.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DocumentSegment = Type.Object(
  {
    key: KeySchema,
    name: Nullable(NameSchema),
    description: Type.Optional(DescriptionSchema),
    conditionLogic: Type.Optional(Type.Enum(LOGICAL_OPERATORS, { description: 'Default And.' })),
    conditions: Type.Optional(Type.Array(DocumentCondition, { maxItems: 100 })),
  },
  { additionalProperties: false },
);

/** An environment's change-request policy (design record 042), as `PATCH …/environments/{env}` sets it. */
export const DocumentChangeRequestPolicy = Type.Object(
  {
    required: Type.Boolean({
      description:
        'Direct writes to what this environment serves are refused: they go through change requests.',
    }),
    approvals: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 5,
        description: 'Approvals a request needs. Default 1.',
      }),
    ),
    emergencyOff: Type.Optional(
      Type.Boolean({
        description: 'A Member may turn a flag off here directly despite `required`. Default true.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'The change-request policy. Left out, an existing environment keeps its policy and a new one has none. Changing it takes an Admin.',
  },
);

const DocumentEnvironment = Type.Object(
  {
    key: KeySchema,
    name: Nullable(NameSchema),
    color: Type.Optional(ColorSchema),
    sortOrder: Type.Optional(Type.Integer({ minimum: -2147483648, maximum: 2147483647 })),
    critical: Type.Optional(
      Type.Boolean({
        description: 'Changes here ask for confirmation in the console. Default false.',
      }),
    ),
    changeRequests: Type.Optional(DocumentChangeRequestPolicy),
  },
  { additionalProperties: false },
);

export const ProjectDocumentSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(DOCUMENT_VERSION),
    project: Type.Object(
      {
        key: KeySchema,
        name: Type.Optional(NameSchema),
        description: Type.Optional(DescriptionSchema),
      },
      { additionalProperties: false },
    ),
    environments: Type.Array(DocumentEnvironment, { maxItems: 50 }),
    segments: Type.Optional(Type.Array(DocumentSegment, { maxItems: 10000 })),
    flags: Type.Optional(Type.Array(DocumentFlag, { maxItems: 10000 })),
  },
  {
    additionalProperties: false,
    title: 'Vexil project',
    description:
      'A Vexil project as code: environments, segments and flags by key (vexil export / vexil apply; design record 027).',
  },
);

export type ProjectDocument = Static<typeof ProjectDocumentSchema>;
export type DocumentFlag = Static<typeof DocumentFlag>;
export type DocumentFlagEnvironment = Static<typeof DocumentFlagEnvironment>;
export type DocumentRule = Static<typeof DocumentRule>;
export type DocumentSegment = Static<typeof DocumentSegment>;
export type DocumentVariation = Static<typeof DocumentVariation>;
export type DocumentEnvironment = Static<typeof DocumentEnvironment>;
export type DocumentChangeRequestPolicy = Static<typeof DocumentChangeRequestPolicy>;
export type DocumentCondition = Static<typeof DocumentCondition>;
export type DocumentConditionGroup = Static<typeof DocumentConditionGroup>;

/**
 * A variation's value as a person may write it: text as the API stores it, or, as the export
 * writes it, `true`/`false` on a Boolean flag, a number on a Number flag, any JSON value on a Json
 * flag. The apply reads these as text first (`variationValuesAsText`), then checks the text.
 */
const WrittenVariationValue = Type.Union(
  [
    DocumentVariation.properties.value,
    Type.Boolean(),
    Type.Number(),
    Type.Null(),
    Type.Array(Type.Unknown()),
    Type.Object({}, { additionalProperties: true }),
  ],
  {
    description:
      'Text ("true", "2.5", JSON text, or the string itself), or the value itself: true/false on a Boolean flag, a number on a Number flag, any JSON value on a Json flag (a JSON string stays JSON text, e.g. \'"blue"\').',
  },
);

/** The published JSON Schema (draft 2020-12), as committed in `docs/schemas/`. */
export function documentJsonSchema(): string {
  const written = JSON.parse(JSON.stringify(ProjectDocumentSchema)) as {
    properties: {
      flags: {
        items: { properties: { variations: { items: { properties: { value: unknown } } } } };
      };
    };
  };
  written.properties.flags.items.properties.variations.items.properties.value =
    WrittenVariationValue;
  return `${JSON.stringify(
    {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      ...written,
    },
    null,
    2,
  )}\n`;
}
