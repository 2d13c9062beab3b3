import { isDeepStrictEqual } from 'node:util';
import type { ProjectDocument } from './document.js';
import type { ProjectState } from './project-state.js';

/**
 * A document's variation values as the text the API stores (issue 43): `value: true` on a Boolean
 * variation, `value: 2.5` on a Number one, read as `"true"` and `"2.5"`, as a person writing YAML
 * expects; on a Json flag any JSON value (object, array, `null` …) as its JSON text, as the export
 * writes it. Strings stay as they are (a Json flag's string is its JSON text, as before); anything
 * else is left for the shape check to name.
 * @returns `input` itself when nothing needed reading, else a copy with those values as text
 */
export function variationValuesAsText(input: unknown): unknown {
  if (!isRecord(input) || !Array.isArray(input.flags)) return input;
  const given: unknown[] = input.flags;
  const flags = given.map((flag) => {
    if (!isRecord(flag) || !Array.isArray(flag.variations)) return flag;
    const before: unknown[] = flag.variations;
    const json = flag.type === 'Json';
    const variations = before.map((variation) => asText(variation, json));
    return variations.some((variation, index) => variation !== before[index])
      ? { ...flag, variations }
      : flag;
  });
  return flags.some((flag, index) => flag !== given[index]) ? { ...input, flags } : input;
}

function asText(variation: unknown, json: boolean): unknown {
  if (!isRecord(variation) || !('value' in variation)) return variation;
  const { value } = variation;
  if (typeof value === 'string') return variation;
  if (json) return { ...variation, value: JSON.stringify(value) };
  return typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))
    ? { ...variation, value: String(value) }
    : variation;
}

/**
 * A Json variation's value as the document writes it: the parsed JSON value, unless it is a
 * string, which stays the JSON text (`'"blue"'`) so that reading it back is not ambiguous.
 */
export function documentVariationValue(type: string, value: string): unknown {
  if (type !== 'Json') return value;
  const parsed = parseJson(value);
  return parsed === undefined || typeof parsed === 'string' ? value : parsed;
}

/**
 * `document` with each Json variation value that means what the stored one means written as the
 * stored text, so that `{"a": 1}` stored and `{a: 1}` in the document plan no change.
 */
export function keepStoredJsonText(
  document: ProjectDocument,
  state: ProjectState,
): ProjectDocument {
  const stored = new Map(
    state.flags
      .filter((flag) => flag.row.type === 'Json')
      .map((flag) => [flag.row.key, new Map(flag.variations.map((v) => [v.key, v.value]))]),
  );
  if (stored.size === 0 || !document.flags) return document;
  return {
    ...document,
    flags: document.flags.map((flag) => {
      const values = flag.type === 'Json' ? stored.get(flag.key) : undefined;
      if (!values) return flag;
      return {
        ...flag,
        variations: flag.variations.map((variation) => {
          const text = values.get(variation.key);
          return text !== undefined &&
            parseJson(text) !== undefined &&
            text !== variation.value &&
            isDeepStrictEqual(parseJson(text), parseJson(variation.value))
            ? { ...variation, value: text }
            : variation;
        }),
      };
    }),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
