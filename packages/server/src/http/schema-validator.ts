import { Ajv } from 'ajv';
import addErrorsModule from 'ajv-errors';
import addFormatsModule, { type FormatsPluginOptions } from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';

// ajv-formats and ajv-errors are CommonJS with a default export; under NodeNext they arrive wrapped.
const addFormats = addFormatsModule as unknown as (ajv: Ajv, options?: FormatsPluginOptions) => Ajv;
const addErrors = addErrorsModule as unknown as (ajv: Ajv) => Ajv;

const rfc3339 = (fullFormats['date-time'] as { validate: (text: string) => boolean }).validate;

/**
 * The one Ajv setup every schema of the service is compiled with: all errors, with their
 * schemas (`verbose`), so http/validation-messages.ts can put them in words; ajv-formats;
 * ajv-errors for `errorMessage`.
 *
 * `date-time` is RFC 3339 that `Date` can represent (design record 035): a leap second
 * (`23:59:60`) is valid RFC 3339 but an invalid `Date`, so it is refused with 400 naming the
 * field instead of failing later in `toISOString()`.
 */
export function schemaValidator(options: { coerceTypes: boolean; useDefaults: boolean }): Ajv {
  const ajv = addErrors(
    addFormats(new Ajv({ allErrors: true, verbose: true, strict: false, ...options })),
  );
  ajv.addFormat('date-time', (text) => rfc3339(text) && Number.isFinite(Date.parse(text)));
  return ajv;
}
