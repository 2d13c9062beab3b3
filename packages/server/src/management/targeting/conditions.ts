import { normalizeOperator, validateCondition } from '@vexil/engine';
import { Type, type Static } from 'typebox';
import { v7 as uuid } from 'uuid';
import type { StoredCondition, StoredConditionGroup } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { Uuid } from '../../api/fields.js';

/**
 * The condition shape shared by targeting rules and segments (spec: Condition), and its
 * write-time validation. Shapes are deliberately loose here (every member may be missing or
 * null) so that the engine's {@link validateCondition} reports each problem with its field path,
 * instead of a generic schema message; types that can never be right are still refused by schema.
 */
export const ConditionInputSchema = Type.Object(
  {
    /** Kept when it names a condition of the resource being updated (so GET-then-PUT round-trips). */
    id: Type.Optional(Uuid),
    attribute: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
    operator: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    values: Type.Optional(
      Type.Union([Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 1000 }), Type.Null()]),
    ),
    negate: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  },
  { additionalProperties: false },
);
export type ConditionInput = Static<typeof ConditionInputSchema>;

export const LOGICAL_OPERATORS = ['And', 'Or'] as const;
export type LogicalOperator = (typeof LOGICAL_OPERATORS)[number];

export const ConditionResponse = Type.Object({
  id: Uuid,
  attribute: Type.String(),
  operator: Type.String(),
  values: Type.Array(Type.String()),
  negate: Type.Boolean(),
});

/** Collects per-field problems so that one response reports every invalid condition at once. */
export class FieldProblems {
  // A Map: field names hold user-chosen keys, such as `toString` (issue 38).
  private readonly fields = new Map<string, string[]>();

  add(field: string, problem: string): void {
    const problems = this.fields.get(field);
    if (problems) problems.push(problem);
    else this.fields.set(field, [problem]);
  }

  /** Every problem so far, by field, in the order the fields were first reported. */
  entries(): [string, string[]][] {
    return [...this.fields];
  }

  /** The problems as the envelope's `fields` (own members only, `__proto__` included). */
  record(): Record<string, string[]> {
    return Object.fromEntries(this.fields);
  }

  /** @throws ApiError 400 `validation_failed` listing every problem, when there is any. */
  throwIfAny(): void {
    const [first] = this.fields;
    if (!first) return;
    const [field, problems] = first;
    const more = this.fields.size > 1 ? ` (and ${this.fields.size - 1} more)` : '';
    throw new ApiError('validation_failed', `${field}: ${problems[0]}${more}`, {
      fields: this.record(),
    });
  }
}

// The engine prefixes each problem with the member it is about: `attribute …`, `values[2] …`.
const PROBLEM = /^(attribute|operator|values)(?:\[(\d+)\])? (.*)$/s;

/**
 * Validates conditions with the engine and normalises them for storage: operators matched
 * case-insensitively and stored in canonical casing (spec: Condition operators), `negate`
 * defaulting to false, ids kept when listed in `keepIds` and assigned otherwise.
 *
 * Problems are added to `problems` under `{path}.{index}.{member}` (e.g.
 * `conditionGroups.0.conditions.1.operator`); an unknown operator is a problem, never dropped
 * or defaulted. The returned list is only meaningful when no problem was added.
 */
export function normalizeConditions(
  inputs: readonly ConditionInput[],
  path: string,
  problems: FieldProblems,
  keepIds: ReadonlySet<string> = new Set(),
): StoredCondition[] {
  const seen = new Set<string>();
  return inputs.map((input, index) => {
    for (const problem of validateCondition(input)) {
      const match = PROBLEM.exec(problem);
      const member = match ? `${match[1]}${match[2] !== undefined ? `.${match[2]}` : ''}` : '';
      problems.add(
        member ? `${path}.${index}.${member}` : `${path}.${index}`,
        match?.[3] ?? problem,
      );
    }
    const id =
      input.id !== undefined && keepIds.has(input.id) && !seen.has(input.id) ? input.id : uuid();
    seen.add(id);
    return {
      id,
      attribute: input.attribute ?? '',
      // Only read when validation passed, so the operator is then known.
      operator: normalizeOperator(input.operator ?? '') ?? 'Equals',
      values: input.values ?? [],
      negate: input.negate === true,
    };
  });
}

/** A rule's condition group as clients send it (spec: Targeting rule). */
export const ConditionGroupInputSchema = Type.Object(
  {
    id: Type.Optional(Uuid),
    /** `And` or `Or`, matched case-insensitively; omitted or null means `And` (design record 007). */
    operator: Type.Optional(Type.Union([Type.String({ maxLength: 16 }), Type.Null()])),
    conditions: Type.Array(ConditionInputSchema, { maxItems: 100 }),
  },
  { additionalProperties: false },
);
export type ConditionGroupInput = Static<typeof ConditionGroupInputSchema>;

export const ConditionGroupResponse = Type.Object({
  id: Uuid,
  operator: Type.Enum(['And', 'Or']),
  conditions: Type.Array(ConditionResponse),
});

function normalizeGroupOperator(
  operator: string | null | undefined,
  field: string,
  problems: FieldProblems,
): LogicalOperator {
  if (operator === undefined || operator === null) return 'And';
  const lower = operator.toLowerCase();
  if (lower === 'and') return 'And';
  if (lower === 'or') return 'Or';
  problems.add(field, `"${operator}" is not a group operator; expected And or Or`);
  return 'And';
}

/** Group and condition ids of a stored rule, so an update that sends them back keeps them. */
export function storedIds(groups: readonly StoredConditionGroup[]): Set<string> {
  const ids = new Set<string>();
  for (const group of groups) {
    ids.add(group.id);
    for (const condition of group.conditions) ids.add(condition.id);
  }
  return ids;
}

/**
 * Validates condition groups and assigns the ids the server owns (spec: endpoint rule 5).
 * @throws ApiError 400 `validation_failed` naming every invalid member by path.
 */
export function normalizeGroups(
  groups: readonly ConditionGroupInput[],
  keepIds: ReadonlySet<string>,
): StoredConditionGroup[] {
  const problems = new FieldProblems();
  const seen = new Set<string>();
  const normalized = groups.map((group, index) => {
    const path = `conditionGroups.${index}`;
    const id =
      group.id !== undefined && keepIds.has(group.id) && !seen.has(group.id) ? group.id : uuid();
    seen.add(id);
    return {
      id,
      operator: normalizeGroupOperator(group.operator, `${path}.operator`, problems),
      conditions: normalizeConditions(group.conditions, `${path}.conditions`, problems, keepIds),
    };
  });
  problems.throwIfAny();
  return normalized;
}
