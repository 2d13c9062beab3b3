import { readFileSync } from 'node:fs';
import { GHERKIN_DIR } from './suites.js';

/** A flag of the suites' `test-flags.json` (flagd's flag format). */
interface TestFlag {
  variants: Record<string, unknown>;
  defaultVariant?: string | null;
  disabled?: boolean;
  contextEvaluator?: string;
  flagMetadata?: Record<string, string | number | boolean> | null;
}

interface Condition {
  attribute: string;
  operator: 'Equals' | 'GreaterThan';
  values: string[];
  negate: false;
}

/** One Vexil targeting rule: all `conditions` must hold to serve `variant`. */
interface Targeting {
  variant: string;
  conditions: Condition[];
}

const equals = (attribute: string, value: string): Condition => ({
  attribute,
  operator: 'Equals',
  values: [value],
  negate: false,
});
const greaterThan = (attribute: string, value: number): Condition => ({
  attribute,
  operator: 'GreaterThan',
  values: [String(value)],
  negate: false,
});

/**
 * The Vexil rule for each CEL `contextEvaluator` of `test-flags.json` (Vexil targets with rules,
 * not CEL; an expression `? 'variant' : ''` serves the default when it yields ''). A boolean
 * attribute equals "false" under Vexil's string comparison (docs/evaluation.md).
 */
const RULE_FOR_EXPRESSION: Record<string, Targeting> = {
  "email == 'ballmer@macrosoft.com' ? 'zero' : ''": {
    variant: 'zero',
    conditions: [equals('email', 'ballmer@macrosoft.com')],
  },
  "!customer && email == 'ballmer@macrosoft.com' && age > 10 ? 'internal' : ''": {
    variant: 'internal',
    conditions: [
      equals('customer', 'false'),
      equals('email', 'ballmer@macrosoft.com'),
      greaterThan('age', 10),
    ],
  },
};

/** A flag as it is created in Vexil. */
interface SeedFlag {
  key: string;
  variants: Record<string, unknown>;
  defaultVariant: string;
  disabled: boolean;
  targeting?: Targeting;
  metadata?: Record<string, string | number | boolean>;
}

/**
 * `evaluation.feature` (deprecated) also reads "context-aware", a flag of flagd's test bed that
 * `test-flags.json` does not carry: INTERNAL for the scenario's person, EXTERNAL for anyone else.
 */
const CONTEXT_AWARE: SeedFlag = {
  key: 'context-aware',
  variants: { internal: 'INTERNAL', external: 'EXTERNAL' },
  defaultVariant: 'external',
  disabled: false,
  targeting: {
    variant: 'internal',
    conditions: [
      equals('fn', 'Sulisław'),
      equals('ln', 'Świętopełk'),
      greaterThan('age', 10),
      equals('customer', 'false'),
    ],
  },
};

/**
 * The flags to create: every flag of `test-flags.json` that Vexil can hold, plus
 * {@link CONTEXT_AWARE}. Flags without a default variant are left out (a Vexil flag always has
 * one; no scenario of these suites reads them); `flagMetadata` becomes the flag's metadata.
 */
export function seedFlags(): SeedFlag[] {
  const testFlags = JSON.parse(
    readFileSync(new URL('test-flags.json', GHERKIN_DIR), 'utf8'),
  ) as Record<string, TestFlag>;
  const flags: SeedFlag[] = [];
  for (const [key, flag] of Object.entries(testFlags)) {
    if (typeof flag.defaultVariant !== 'string') continue;
    let targeting: Targeting | undefined;
    if (flag.contextEvaluator !== undefined) {
      targeting = RULE_FOR_EXPRESSION[flag.contextEvaluator];
      if (!targeting) throw new Error(`${key}: no Vexil rule for "${flag.contextEvaluator}"`);
    }
    flags.push({
      key,
      variants: flag.variants,
      defaultVariant: flag.defaultVariant,
      disabled: flag.disabled === true,
      ...(targeting ? { targeting } : {}),
      ...(flag.flagMetadata ? { metadata: flag.flagMetadata } : {}),
    });
  }
  return [...flags, CONTEXT_AWARE];
}

/** The Vexil flag type and stored variation value (a string on the wire) for a variant value. */
function vexilVariation(value: unknown): { type: string; value: string } {
  switch (typeof value) {
    case 'boolean':
      return { type: 'Boolean', value: String(value) };
    case 'number':
      return { type: 'Number', value: String(value) };
    case 'string':
      return { type: 'String', value };
    default:
      return { type: 'Json', value: JSON.stringify(value) };
  }
}

/** A management API client: a personal access token and the service's address. */
export type Manage = (method: 'POST' | 'PATCH', path: string, body: unknown) => Promise<unknown>;

/**
 * Creates a flag through the management API as a user would: the flag with its variations and
 * metadata (visible to client keys, for the web provider), its default variation and targeting rule in `env`, and
 * switched on unless the suite wants it disabled.
 */
export async function createFlag(
  manage: Manage,
  project: string,
  env: string,
  flag: SeedFlag,
): Promise<void> {
  const variants = Object.entries(flag.variants).map(([key, value]) => ({
    key,
    ...vexilVariation(value),
  }));
  const created = (await manage('POST', `${project}/flags`, {
    key: flag.key,
    type: variants[0]?.type,
    clientSideVisible: true,
    variations: variants.map(({ key, value }) => ({ key, value })),
    ...(flag.metadata ? { metadata: flag.metadata } : {}),
  })) as { variations: { id: string; key: string }[] };
  const variationId = (key: string) => {
    const variation = created.variations.find((candidate) => candidate.key === key);
    if (!variation) throw new Error(`${flag.key} has no variant "${key}"`);
    return variation.id;
  };
  const configuration = `${project}/flags/${flag.key}/environments/${env}`;
  await manage('PATCH', configuration, { defaultVariationId: variationId(flag.defaultVariant) });
  if (flag.targeting) {
    await manage('POST', `${configuration}/rules`, {
      variationId: variationId(flag.targeting.variant),
      conditionGroups: [{ operator: 'And', conditions: flag.targeting.conditions }],
    });
  }
  if (!flag.disabled) await manage('POST', `${configuration}/toggle`, { enabled: true });
}
