import type { FlagsTable } from './schema.js';

/** The typed value SDKs receive for a stored variation value. */
export function typedValue(type: FlagsTable['type'], value: string): unknown {
  switch (type) {
    case 'Boolean':
      return value === 'true';
    case 'Number':
      return Number(value);
    case 'Json':
      return JSON.parse(value) as unknown;
    case 'String':
      return value;
  }
}
