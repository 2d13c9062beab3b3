/**
 * The SQL dialects Vexil speaks (design record 002). Its own module, so that migrations can name
 * it without importing `database.ts`, which imports them.
 */
export type Dialect = 'sqlite' | 'postgres';
