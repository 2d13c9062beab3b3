/**
 * Sections of docs/benchmarks.md written by benchmarks other than `npm run bench` (the console's
 * `npm run bench:console`): each is replaced by its own benchmark and kept when `npm run bench`
 * rewrites the rest of the report.
 */
export const CONSOLE_SECTION = '## Console: the flag list’s Largest Contentful Paint';

/** The section under `heading` (up to the next `## ` heading or the end), or null. */
export function sectionOf(markdown: string, heading: string): string | null {
  const start = markdown.indexOf(`${heading}\n`);
  if (start < 0) return null;
  const next = markdown.indexOf('\n## ', start + heading.length);
  return markdown.slice(start, next < 0 ? undefined : next + 1).trimEnd() + '\n';
}

/** `markdown` with the section under `section`'s heading replaced by it, or appended. */
export function withSection(markdown: string, section: string): string {
  const heading = section.slice(0, section.indexOf('\n'));
  const old = sectionOf(markdown, heading);
  return old === null ? `${markdown.trimEnd()}\n\n${section}` : markdown.replace(old, section);
}
