import { duplicateKey } from '../errors.js';

/** Whether a database error is a unique-constraint violation (PostgreSQL or SQLite). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return (
    code === '23505' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/**
 * A `.catch` handler that turns a unique violation into a 409 `conflict` naming the field,
 * so that two racing creates of one key never produce a 500.
 */
export function conflictOn(field: string, value: string, scope: string) {
  return (error: unknown): never => {
    if (isUniqueViolation(error)) throw duplicateKey(field, value, scope);
    throw error;
  };
}
