import { findPrerequisiteProblem, type PrerequisiteGraphFlag } from '@vexil/engine';
import { parse } from 'yaml';
import { ApiError } from '../errors.js';
import { checkJsonLimits, JSON_LIMITS } from '../http/request-limits.js';
import type { ValidateFunction } from 'ajv';
import { schemaCompiler } from '../http/schema-validator.js';
import { fieldProblems } from '../http/validation-messages.js';
import { checkVariationValue } from '../management/flags/configuration.js';
import { FieldProblems, normalizeConditions } from '../management/targeting/conditions.js';
import {
  ProjectDocumentSchema,
  type DocumentCondition,
  type DocumentFlag,
  type ProjectDocument,
} from './document.js';
import type { ProjectState } from './project-state.js';
import { variationValuesAsText } from './variation-values.js';
import { yamlNestingBound } from './yaml-nesting.js';

const validateShape = schemaCompiler({ coerceTypes: false, useDefaults: false })(
  ProjectDocumentSchema,
) as ValidateFunction<ProjectDocument>;

/**
 * The refusal of a whole document: 400 `validation_failed` with every problem in `fields`, by
 * path in the document (`flags[2].variations[0].value`).
 */
function refusal(problems: FieldProblems): ApiError {
  const entries = problems.entries();
  const list = entries.map(([path, messages]) => `${path}: ${messages.join('; ')}`);
  return new ApiError(
    'validation_failed',
    `The document was refused (${entries.length} problem${entries.length === 1 ? '' : 's'}): ${list.join(' | ')}`,
    { fields: problems.record() },
  );
}

/**
 * Reads a document's text, YAML or JSON (JSON is YAML).
 * @throws ApiError 400 `validation_failed` on `document` when it is not well-formed or nests
 *   deeper than JSON bodies may (JSON_LIMITS), on `body` when an array is longer than they may
 */
export function parseDocumentText(text: string): unknown {
  const problems = new FieldProblems();
  if (yamlNestingBound(text) > JSON_LIMITS.depth) {
    problems.add('document', `must not nest more than ${JSON_LIMITS.depth} levels deep`);
    throw refusal(problems);
  }
  let document: unknown;
  try {
    document = parse(text, { prettyErrors: true }) as unknown;
  } catch (error) {
    problems.add('document', error instanceof Error ? error.message : String(error));
    throw refusal(problems);
  }
  checkJsonLimits(document);
  return document;
}

/**
 * A dotted field name from the schema validator (`flags.2.environments.prod.rules.0`) as a path
 * into `document` (`flags[2].environments.prod.rules[0]`). Keys may hold dots, so each step takes
 * the longest run of segments that names a member of the value at hand.
 */
function documentPath(document: unknown, dotted: string): string {
  const segments = dotted.split('.');
  let path = '';
  let value: unknown = document;
  while (segments.length > 0) {
    if (Array.isArray(value)) {
      const index = segments.shift() ?? '';
      path += `[${index}]`;
      value = (value as unknown[])[Number(index)];
      continue;
    }
    let take = segments.length;
    const record = (value ?? {}) as Record<string, unknown>;
    while (take > 1 && !Object.hasOwn(record, segments.slice(0, take).join('.'))) take -= 1;
    const key = segments.splice(0, take).join('.');
    path += path === '' ? key : `.${key}`;
    value = Object.hasOwn(record, key) ? record[key] : undefined;
  }
  return path;
}

/**
 * Checks a document's shape against the published schema, and, when it is wrong, the rest of the
 * document against the project as far as it can be read (`state`: the project as stored, null
 * when the document would create it), so that one run lists every problem.
 * @throws ApiError 400 `validation_failed` listing every problem by path.
 */
export async function checkShape(
  input: unknown,
  state: () => Promise<ProjectState | null>,
  options: { prune: boolean },
): Promise<ProjectDocument> {
  input = variationValuesAsText(input);
  if (validateShape(input)) return input;
  const problems = new FieldProblems();
  for (const { field, message } of fieldProblems(validateShape.errors ?? [], 'body'))
    problems.add(field === '' ? 'document' : documentPath(input, field), message);
  // A document that is not an object (`null`, a list) has nothing more to check.
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw refusal(problems);
  const document = input as ProjectDocument;
  const stored = await state();
  // What a document that would create its project is checked against.
  const projectKey = stored?.project.key ?? (document as Partial<ProjectDocument>).project?.key;
  const empty = { project: { key: projectKey }, environments: [], segments: [], flags: [] };
  for (const [path, messages] of documentProblems(
    document,
    stored ?? (empty as unknown as ProjectState),
    { prune: options.prune, projectKey: String(projectKey), readable: false },
  ).entries())
    for (const message of messages) problems.add(path, message);
  throw refusal(problems);
}

/** The items of a list member, without entries that are not objects (the shape check names them). */
function objects<T extends object>(items: readonly T[] | undefined): T[] {
  const values: unknown = items;
  return Array.isArray(values)
    ? values.filter((value): value is T => typeof value === 'object' && value !== null)
    : [];
}

/**
 * The members of a record member, none when it is not an object: a string in its place (the
 * shape check names it) must not be read as one entry per character.
 */
function records<T>(value: Readonly<Record<string, T>> | undefined): [string, T][] {
  const member: unknown = value;
  return typeof member === 'object' && member !== null && !Array.isArray(member)
    ? Object.entries(member as Record<string, T>)
    : [];
}

/**
 * Runs one item's checks. In a document of the wrong shape an item may be too malformed to read
 * (`flags[0].variations` a string…): its checks are skipped, the shape's problems name it.
 */
function checkItem(readable: boolean, check: () => void): void {
  try {
    check();
  } catch (error) {
    if (readable || !(error instanceof TypeError)) throw error;
  }
}

/** Variation keys a flag will have once the document is applied. */
function variationKeys(flag: DocumentFlag): Set<string> {
  return new Set(flag.variations.map((v) => v.key));
}

/**
 * Checks what the schema cannot: keys unique, every reference (variation, segment, environment,
 * prerequisite flag) resolving in the document or, for segments and prerequisite flags, in the
 * project; variation values of the flag's type; conditions as the engine validates them (regular
 * expressions, semantic versions, dates, numbers); rollouts summing to 100%; prerequisite chains
 * without cycles; flag types unchanged; and no variation left out while an environment the
 * document does not configure still serves it.
 * @throws ApiError 400 `validation_failed` listing every problem by path; nothing is applied.
 */
export function checkDocument(
  document: ProjectDocument,
  state: ProjectState,
  options: { prune: boolean; projectKey: string },
): void {
  const found = documentProblems(document, state, { ...options, readable: true });
  if (found.entries().length > 0) throw refusal(found);
}

/**
 * The problems {@link checkDocument} refuses a document for.
 * @param options.readable false when the document's shape is wrong: items too malformed to read
 *   are skipped rather than failing the check
 */
function documentProblems(
  document: ProjectDocument,
  state: ProjectState,
  options: { prune: boolean; projectKey: string; readable: boolean },
): FieldProblems {
  const problems = new FieldProblems();
  const item = (check: () => void) => checkItem(options.readable, check);
  item(() => {
    if (document.project.key !== options.projectKey)
      problems.add(
        'project.key',
        `names project "${document.project.key}", but it is being applied to project "${options.projectKey}"`,
      );
  });
  const unique = (items: readonly { key: string }[], path: string) => {
    const seen = new Set<string>();
    items.forEach((entry, index) => {
      if (seen.has(entry.key))
        problems.add(`${path}[${index}].key`, `duplicate key "${entry.key}"`);
      seen.add(entry.key);
    });
  };
  const environments = objects(document.environments);
  const segments = objects(document.segments);
  const flags = objects(document.flags);
  item(() => {
    unique(environments, 'environments');
    unique(segments, 'segments');
    unique(flags, 'flags');
  });

  const environmentKeys = new Set(environments.map((e) => e.key));
  const segmentKeys = new Set(segments.map((s) => s.key));
  if (!options.prune) for (const segment of state.segments) segmentKeys.add(segment.key);
  const conditions = (list: readonly DocumentCondition[], path: string) => {
    // Not a list: the shape check names it, and a string is not read character by character.
    if (!Array.isArray(list)) return;
    const found = new FieldProblems();
    normalizeConditions(list, path, found);
    for (const [field, messages] of found.entries()) {
      // `{path}.{index}.{member}[.{value index}]` → `{path}[index].member[value index]`
      const suffix = field
        .slice(path.length)
        .replace(/^\.(\d+)/, '[$1]')
        .replace(/\.(\d+)$/, '[$1]');
      for (const message of messages) problems.add(`${path}${suffix}`, message);
    }
  };
  segments.forEach((segment, index) => {
    item(() => {
      conditions(segment.conditions ?? [], `segments[${index}].conditions`);
    });
  });

  const stored = new Map(state.flags.map((flag) => [flag.row.key, flag]));
  const documented = new Map(flags.map((flag) => [flag.key, flag]));
  flags.forEach((flag, index) =>
    item(() => {
      const path = `flags[${index}]`;
      const existing = stored.get(flag.key);
      if (existing && existing.row.type !== flag.type)
        problems.add(
          `${path}.type`,
          `cannot change from ${existing.row.type} to ${flag.type}; create a flag with another key instead`,
        );
      unique(flag.variations, `${path}.variations`);
      flag.variations.forEach((variation, v) => {
        try {
          checkVariationValue(flag.type, variation.value, `${path}.variations[${v}].value`);
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          for (const [field, messages] of Object.entries(error.detail.fields ?? {}))
            for (const message of messages) problems.add(field, message);
        }
      });
      for (const [key, value] of records(flag.metadata))
        if (typeof value === 'number' && !Number.isFinite(value))
          problems.add(`${path}.metadata.${key}`, 'must be a finite number');
      const variations = variationKeys(flag);
      const variation = (key: string, at: string) => {
        if (!variations.has(key))
          problems.add(
            at,
            `"${key}" is not a variation of flag "${flag.key}" (${[...variations].join(', ')})`,
          );
      };
      for (const [environmentKey, configuration] of records(flag.environments)) {
        const at = `${path}.environments.${environmentKey}`;
        if (!environmentKeys.has(environmentKey)) {
          problems.add(at, `environment "${environmentKey}" is not listed in environments`);
          continue;
        }
        variation(configuration.defaultVariation, `${at}.defaultVariation`);
        variation(configuration.offVariation, `${at}.offVariation`);
        const rollout = configuration.rollout ?? [];
        const listed = new Set<string>();
        rollout.forEach((weight, w) => {
          variation(weight.variation, `${at}.rollout[${w}].variation`);
          if (listed.has(weight.variation))
            problems.add(`${at}.rollout[${w}].variation`, `lists "${weight.variation}" twice`);
          listed.add(weight.variation);
        });
        if ((configuration.strategy ?? 'SingleVariation') === 'PercentageRollout') {
          const total = rollout.reduce((sum, weight) => sum + weight.weight, 0);
          if (total !== 100000)
            problems.add(
              `${at}.rollout`,
              `weights must sum to 100000 (100%); they sum to ${total}`,
            );
        }
        (configuration.prerequisites ?? []).forEach((prerequisite, p) => {
          const target = documented.get(prerequisite.flag);
          const targetVariations = target
            ? variationKeys(target)
            : options.prune
              ? undefined
              : stored.get(prerequisite.flag)?.variations.map((v) => v.key);
          if (!targetVariations)
            problems.add(
              `${at}.prerequisites[${p}].flag`,
              stored.has(prerequisite.flag)
                ? `flag "${prerequisite.flag}" is not in the document, and prune archives it`
                : `flag "${prerequisite.flag}" does not exist`,
            );
          else if (![...targetVariations].includes(prerequisite.variation))
            problems.add(
              `${at}.prerequisites[${p}].variation`,
              `"${prerequisite.variation}" is not a variation of flag "${prerequisite.flag}"`,
            );
        });
        (configuration.rules ?? []).forEach((rule, r) => {
          const ruleAt = `${at}.rules[${r}]`;
          variation(rule.variation, `${ruleAt}.variation`);
          if (rule.segment != null && !segmentKeys.has(rule.segment))
            problems.add(
              `${ruleAt}.segment`,
              state.segments.some((s) => s.key === rule.segment)
                ? `segment "${rule.segment}" is not in the document, and prune deletes it`
                : `segment "${rule.segment}" does not exist`,
            );
          (rule.conditionGroups ?? []).forEach((group, g) => {
            conditions(group.conditions, `${ruleAt}.conditionGroups[${g}].conditions`);
          });
        });
      }
      if (existing) checkVariationsStillServed(flag, path, existing, state, problems);
    }),
  );
  item(() => {
    checkPrerequisiteGraphs(document, state, problems);
  });
  return problems;
}

/** A variation left out of the document must not be served where the document says nothing. */
function checkVariationsStillServed(
  flag: DocumentFlag,
  path: string,
  existing: ProjectState['flags'][number],
  state: ProjectState,
  problems: FieldProblems,
): void {
  const kept = variationKeys(flag);
  const removed = new Map(
    existing.variations.filter((v) => !kept.has(v.key)).map((v) => [v.id, v.key]),
  );
  if (removed.size === 0) return;
  const configured = new Set(records(flag.environments).map(([key]) => key));
  for (const environment of state.environments) {
    if (configured.has(environment.key)) continue;
    const configuration = existing.configurations.get(environment.id);
    const served = new Set<string>();
    if (configuration) {
      served.add(configuration.default_variation_id);
      served.add(configuration.off_variation_id);
      for (const weight of JSON.parse(configuration.rollout) as { variationId: string }[])
        served.add(weight.variationId);
    }
    for (const rule of existing.rules.get(environment.id) ?? []) served.add(rule.variation_id);
    for (const [id, key] of removed)
      if (served.has(id))
        problems.add(
          `${path}.variations`,
          `variation "${key}" is left out but still served in environment "${environment.key}", which the document does not configure`,
        );
  }
}

/** Prerequisite chains of the project as it will be, environment by environment. */
function checkPrerequisiteGraphs(
  document: ProjectDocument,
  state: ProjectState,
  problems: FieldProblems,
): void {
  const flags = objects(document.flags);
  for (const environment of objects(document.environments)) {
    const stored = state.environments.find((e) => e.key === environment.key);
    const graph = new Map<string, PrerequisiteGraphFlag>();
    for (const flag of state.flags) {
      const configuration = stored ? flag.configurations.get(stored.id) : undefined;
      graph.set(flag.row.key, {
        key: flag.row.key,
        variations: flag.variations,
        prerequisites: configuration
          ? (JSON.parse(configuration.prerequisites) as PrerequisiteGraphFlag['prerequisites'])
          : [],
      });
    }
    for (const flag of flags) {
      const configuration = flag.environments?.[environment.key];
      const previous = graph.get(flag.key);
      graph.set(flag.key, {
        key: flag.key,
        variations: flag.variations,
        prerequisites: configuration
          ? (configuration.prerequisites ?? []).map((p) => ({
              prerequisiteFlagKey: p.flag,
              expectedVariationKey: p.variation,
            }))
          : (previous?.prerequisites ?? []),
      });
    }
    flags.forEach((flag, index) => {
      const configuration = flag.environments?.[environment.key];
      if (!configuration?.prerequisites?.length) return;
      const problem = findPrerequisiteProblem([...graph.values()], flag.key);
      // Missing flags and variations are reported on their own prerequisite above.
      if (!problem || problem.kind === 'missing' || problem.kind === 'unknown-variation') return;
      problems.add(
        `flags[${index}].environments.${environment.key}.prerequisites`,
        problem.message,
      );
    });
  }
}
