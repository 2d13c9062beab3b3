import { Field } from './Field';

/** A variation being written in "New flag": its key and value as the API takes them (text). */
export interface VariationDraft {
  key: string;
  value: string;
}

export type ValueType = 'String' | 'Number' | 'Json';

/** The fewest variations a non-Boolean flag is created with: one alone could not vary. */
export const MIN_VARIATIONS = 2;

/** What is wrong with `value` for a flag of `type`, checked as it is typed; undefined if nothing. */
export function valueProblem(type: ValueType, value: string): string | undefined {
  if (type === 'Number' && (value.trim() === '' || !Number.isFinite(Number(value))))
    return 'Must be a number, such as 10 or 2.5.';
  if (type === 'Json') {
    try {
      JSON.parse(value);
    } catch (error) {
      return `Not valid JSON: ${(error as Error).message}`;
    }
  }
  return undefined;
}

/**
 * The variations of a String, Number or Json flag being created: a key and a value each, the
 * value checked as it is typed (JSON parsed, numbers read), at least {@link MIN_VARIATIONS};
 * the API's messages (`variations.1.value`) appear at their fields.
 */
export function VariationsEditor(props: {
  type: ValueType;
  variations: VariationDraft[];
  onChange: (variations: VariationDraft[]) => void;
  problemAt: (field: string) => string | undefined;
}) {
  const { type, variations, onChange, problemAt } = props;
  const set = (index: number, draft: VariationDraft) =>
    onChange(variations.map((v, i) => (i === index ? draft : v)));
  return (
    <fieldset className="variations-editor">
      <legend>Variations</legend>
      {problemAt('variations') && !variations.some((_, i) => problemAt(`variations.${i}`)) && (
        <p className="field-error" role="alert">
          {problemAt('variations')}
        </p>
      )}
      {variations.map((variation, index) => {
        const number = index + 1;
        const typed = variation.value === '' ? undefined : valueProblem(type, variation.value);
        return (
          <div key={index} role="group" aria-label={`Variation ${number}`} className="condition">
            <Field
              label="Variation key"
              required
              autoComplete="off"
              value={variation.key}
              onChange={(event) => set(index, { ...variation, key: event.target.value })}
              error={problemAt(`variations.${index}.key`)}
            />
            <Field
              label="Variation value"
              required
              autoComplete="off"
              spellCheck={false}
              value={variation.value}
              placeholder={type === 'Json' ? '{"limit": 10}' : type === 'Number' ? '10' : 'blue'}
              onChange={(event) => set(index, { ...variation, value: event.target.value })}
              error={typed ?? problemAt(`variations.${index}.value`)}
            />
            <button
              type="button"
              className="quiet"
              disabled={variations.length <= MIN_VARIATIONS}
              aria-label={`Remove variation ${number}`}
              onClick={() => onChange(variations.filter((_, i) => i !== index))}
            >
              Remove
            </button>
          </div>
        );
      })}
      <button
        type="button"
        className="quiet"
        onClick={() => onChange([...variations, { key: '', value: '' }])}
      >
        Add variation
      </button>
    </fieldset>
  );
}
