import { Ajv, type ValidateFunction } from 'ajv';
import addErrorsModule from 'ajv-errors';
import addFormatsModule from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';

// ajv-formats and ajv-errors are CommonJS with a default export; under NodeNext they arrive wrapped.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const addErrors = addErrorsModule as unknown as (ajv: Ajv) => Ajv;

const rfc3339 = (fullFormats['date-time'] as { validate: (text: string) => boolean }).validate;

/**
 * Bodies with more JSON values than this are validated up to their first error (design record
 * 035): reporting every error costs time in proportion to the errors, and a body of thousands
 * of invalid items provokes tens of thousands.
 */
const EVERY_ERROR_UP_TO_VALUES = 2000;

/** Whether `data` holds more than `limit` JSON values; stops counting there. */
function holdsMoreValues(data: unknown, limit: number): boolean {
  const pending = [data];
  let count = 0;
  for (let value = pending.pop(); count <= limit && value !== undefined; value = pending.pop()) {
    count += 1;
    if (value !== null && typeof value === 'object')
      for (const member of Array.isArray(value) ? value : Object.values(value))
        pending.push(member);
  }
  return count > limit;
}

function ajvWith(options: { allErrors: boolean; coerceTypes: boolean; useDefaults: boolean }): Ajv {
  const ajv = addFormats(new Ajv({ verbose: true, strict: false, ...options }));
  ajv.addFormat('date-time', (text) => rfc3339(text) && Number.isFinite(Date.parse(text)));
  // ajv-errors needs every error; the first-error validator describes a pattern plainly.
  return options.allErrors ? addErrors(ajv) : ajv;
}

/**
 * The one schema compiler of the service: ajv-formats, ajv-errors for `errorMessage`, errors
 * with their schemas (`verbose`) so http/validation-messages.ts can put them in words, and
 * every error reported — for bodies of at most {@link EVERY_ERROR_UP_TO_VALUES} values; larger
 * ones stop at their first error (the validator with `allErrors` off is compiled on first use).
 *
 * `date-time` is RFC 3339 that `Date` can represent (design record 035): a leap second
 * (`23:59:60`) is valid RFC 3339 but an invalid `Date`, so it is refused with 400 naming the
 * field instead of failing later in `toISOString()`.
 */
export function schemaCompiler(options: {
  coerceTypes: boolean;
  useDefaults: boolean;
}): (schema: object) => ValidateFunction {
  const every = ajvWith({ ...options, allErrors: true });
  const first = ajvWith({ ...options, allErrors: false });
  return (schema) => {
    const validateEvery = every.compile(schema);
    let validateFirst: ValidateFunction | undefined;
    const validate = (data: unknown) => {
      const chosen = holdsMoreValues(data, EVERY_ERROR_UP_TO_VALUES)
        ? (validateFirst ??= first.compile(schema))
        : validateEvery;
      const valid = chosen(data);
      validate.errors = chosen.errors;
      return valid;
    };
    validate.errors = null as ValidateFunction['errors'];
    return Object.assign(validate, { schema }) as unknown as ValidateFunction;
  };
}
