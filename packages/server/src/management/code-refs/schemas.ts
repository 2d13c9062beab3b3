import { Type, type Static } from 'typebox';

const Timestamp = Type.String({ format: 'date-time' });

/**
 * A link template: `http(s)://` with `{commit}`, `{path}`, `{line}` and `{branch}` placeholders
 * (braces are not URI characters, so the `uri` format would refuse it).
 */
const SourceUrlTemplate = Type.String({
  maxLength: 2000,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$',
  errorMessage: { pattern: 'must be an http:// or https:// URL template without spaces' },
});

/** The most references one upload may hold (flag-cleanup contract, section 2); 413 beyond. */
export const MAX_REFERENCES_PER_UPLOAD = 100_000;
/** The longest path of a reference, in characters. */
export const MAX_PATH_LENGTH = 1024;
/** The most context lines on either side of a reference, each at most this many characters. */
export const MAX_CONTEXT_LINES = 5;
export const MAX_CONTEXT_LINE_LENGTH = 300;
/**
 * An upload's body limit in bytes: 100,000 references with two lines of context either side
 * come to about 40 MiB of JSON.
 */
export const UPLOAD_BODY_LIMIT = 64 * 1024 * 1024;

export const REFERENCE_KINDS = ['call', 'jsx', 'property', 'alias', 'literal'] as const;
export type ReferenceKind = (typeof REFERENCE_KINDS)[number];

const ContextLine = Type.String({ maxLength: MAX_CONTEXT_LINE_LENGTH });

/** The lines around a reference: up to 5 before, the line itself, up to 5 after. */
export const ReferenceContext = Type.Object(
  {
    before: Type.Array(ContextLine, { maxItems: MAX_CONTEXT_LINES }),
    line: ContextLine,
    after: Type.Array(ContextLine, { maxItems: MAX_CONTEXT_LINES }),
  },
  { additionalProperties: false },
);
export type ReferenceContext = Static<typeof ReferenceContext>;

/** One place in code as the scan reports it (contract, section 1, "Each reference"). */
export const ReferenceInput = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: MAX_PATH_LENGTH }),
    line: Type.Integer({ minimum: 1 }),
    column: Type.Integer({ minimum: 1 }),
    kind: Type.Enum([...REFERENCE_KINDS]),
    key: Type.String({ minLength: 1, maxLength: 200 }),
    context: Type.Optional(ReferenceContext),
  },
  { additionalProperties: false },
);
export type ReferenceInput = Static<typeof ReferenceInput>;

/**
 * The scan's JSON (`vexil code-refs scan --format json`). `repository` and `branch`, when given,
 * must be the ones in the path; the path decides.
 */
export const UploadBody = Type.Object(
  {
    repository: Type.Optional(Type.String({ maxLength: 200 })),
    branch: Type.Optional(Type.String({ maxLength: 255 })),
    commit: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
    scannedAt: Timestamp,
    references: Type.Array(ReferenceInput),
    unparsed: Type.Optional(
      Type.Array(Type.String({ maxLength: MAX_PATH_LENGTH }), { maxItems: 10_000 }),
    ),
  },
  { additionalProperties: false },
);
export type UploadBody = Static<typeof UploadBody>;

export const RepositoryParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  repository: Type.String({ minLength: 1, maxLength: 200 }),
});
export const BranchParams = Type.Object({
  org: Type.String(),
  project: Type.String(),
  repository: Type.String({ minLength: 1, maxLength: 200 }),
  branch: Type.String({ minLength: 1, maxLength: 255 }),
});

export const BranchSummary = Type.Object({
  name: Type.String(),
  commit: Type.Union([Type.String(), Type.Null()]),
  scannedAt: Timestamp,
  referenceCount: Type.Integer(),
  unparsed: Type.Array(Type.String()),
});

export const RepositoryItem = Type.Object({
  name: Type.String(),
  defaultBranch: Type.Union([Type.String(), Type.Null()]),
  sourceUrlTemplate: Type.Union([Type.String(), Type.Null()]),
  branches: Type.Array(BranchSummary),
});

export const RepositoryPatch = Type.Object(
  {
    defaultBranch: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    sourceUrlTemplate: Type.Optional(Type.Union([SourceUrlTemplate, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const FlagReference = Type.Object({
  path: Type.String(),
  line: Type.Integer(),
  column: Type.Integer(),
  kind: Type.String(),
  context: ReferenceContext,
  url: Type.Union([Type.String(), Type.Null()]),
});

export const FlagReferencesResponse = Type.Object({
  flagKey: Type.String(),
  repositories: Type.Array(
    Type.Object({
      name: Type.String(),
      defaultBranch: Type.Union([Type.String(), Type.Null()]),
      branches: Type.Array(
        Type.Intersect([BranchSummary, Type.Object({ references: Type.Array(FlagReference) })]),
      ),
    }),
  ),
});
