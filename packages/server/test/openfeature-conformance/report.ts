import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import type { Scenario } from './suites.js';

export type Provider = 'server' | 'web';
export type Outcome = 'passed' | 'failed' | 'not run';

/** The outcome of one scenario (one example row) through one provider. */
export interface Result {
  scenario: Scenario;
  provider: Provider;
  outcome: Outcome;
  /** Why the scenario was not run, or why it is expected to fail. */
  note?: string;
}

const SDKS_DOC = fileURLToPath(new URL('../../../../docs/sdks.md', import.meta.url));
const BEGIN = '<!-- openfeature-conformance:begin (written by the conformance test) -->';
const END = '<!-- openfeature-conformance:end -->';

/** "passed", "failed" or "not run" for one scenario's example rows, with counts for several. */
function summarize(results: readonly Result[]): string {
  const ran = results.filter((result) => result.outcome !== 'not run');
  if (ran.length === 0) return 'not run';
  const passed = ran.filter((result) => result.outcome === 'passed').length;
  const word = passed === ran.length ? 'passed' : passed === 0 ? 'failed' : 'partly passed';
  return results.length === 1 ? word : `${word} (${passed}/${ran.length})`;
}

/** How many example rows had each outcome through `provider`. */
function totals(results: readonly Result[], provider: Provider): string {
  const mine = results.filter((result) => result.provider === provider);
  const count = (outcome: Outcome) => mine.filter((result) => result.outcome === outcome).length;
  return `${count('passed')} passed, ${count('failed')} failed, ${count('not run')} not run`;
}

/**
 * The conformance section: totals per provider (counting each example row of an outline), then
 * one table row per scenario (outline), then the notes the rows refer to.
 */
export function conformanceTable(results: readonly Result[]): string {
  const rows = new Map<string, Result[]>();
  for (const result of results) {
    const id = `${result.scenario.file}#${result.scenario.outlineId}`;
    rows.set(id, [...(rows.get(id) ?? []), result]);
  }
  const notes: string[] = [];
  const noteNumber = (note: string) => {
    if (!notes.includes(note)) notes.push(note);
    return notes.indexOf(note) + 1;
  };
  const lines = [
    `Scenarios (example rows): server provider ${totals(results, 'server')}; web provider ${totals(results, 'web')}.`,
    '',
    '| Suite | Scenario | Server provider | Web provider | Note |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const group of rows.values()) {
    const { file, name } = group[0]!.scenario;
    const groupNotes = [...new Set(group.flatMap((result) => (result.note ? [result.note] : [])))];
    const cells = [
      file,
      name,
      summarize(group.filter((result) => result.provider === 'server')),
      summarize(group.filter((result) => result.provider === 'web')),
      groupNotes.map(noteNumber).join(', '),
    ];
    lines.push(`| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`);
  }
  lines.push('', ...notes.map((note, index) => `${index + 1}. ${note}`));
  return lines.join('\n');
}

/**
 * Puts `table` between the conformance markers of docs/sdks.md, formatted as Prettier would.
 * Writes the file only when `update` is true.
 *
 * @returns `current` when the document already showed this table, else `updated` or `stale`
 */
export async function syncSdksDoc(
  table: string,
  update: boolean,
): Promise<'current' | 'updated' | 'stale'> {
  const current = readFileSync(SDKS_DOC, 'utf8');
  const begin = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/sdks.md lacks the markers ${BEGIN} … ${END}`);
  const replaced = `${current.slice(0, begin + BEGIN.length)}\n\n${table}\n\n${current.slice(end)}`;
  const formatted = await format(replaced, {
    ...(await resolveConfig(SDKS_DOC)),
    filepath: SDKS_DOC,
  });
  if (formatted === current) return 'current';
  if (!update) return 'stale';
  writeFileSync(SDKS_DOC, formatted);
  return 'updated';
}
