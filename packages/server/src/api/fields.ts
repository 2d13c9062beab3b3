import { Type } from 'typebox';

/**
 * Field schemas shared by several management resources.
 *
 * Keys start with a letter or digit and hold letters, digits, `.`, `_` and `-` (at most 100).
 * A key may not look like a uuid: path segments accept a key or an id, and must stay unambiguous.
 */
export const KeySchema = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern:
    '^(?![0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)[A-Za-z0-9][A-Za-z0-9._-]*$',
  // What a person reads instead of the pattern (ajv-errors; http/validation-messages.ts).
  errorMessage: {
    pattern:
      "must start with a letter or digit, contain only letters, digits, '.', '_' and '-', and not be a UUID",
  },
});

/**
 * A link a person opens from the console (e.g. a flag's removal pull request): `http:` or
 * `https:` only, so that no `javascript:` or `data:` link is ever stored.
 */
export const WebLinkSchema = Type.String({
  format: 'uri',
  maxLength: 2000,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
  errorMessage: { pattern: 'must be an http:// or https:// URL' },
});

export const NameSchema = Type.String({ minLength: 1, maxLength: 200 });
export const DescriptionSchema = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);
export const NullableString = Type.Union([Type.String(), Type.Null()]);
export const Uuid = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time' });
export const ColorSchema = Type.Union([
  Type.String({
    pattern: '^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$',
    errorMessage: { pattern: 'must be a hex color such as #1f6feb or #abc' },
  }),
  Type.Null(),
]);
