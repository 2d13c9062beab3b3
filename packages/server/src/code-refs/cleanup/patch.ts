import { formatPatch, structuredPatch } from 'diff';

/**
 * A unified diff of the changed files that `git apply` takes (flag-cleanup contract, section 3):
 * one `diff --git a/… b/…` section per file, paths relative to the directory cleaned, three
 * lines of context. Empty when nothing changed.
 */
export function unifiedDiff(
  changed: readonly { path: string; before: string; after: string }[],
): string {
  return changed
    .map(({ path, before, after }) =>
      formatPatch({
        ...structuredPatch(`a/${path}`, `b/${path}`, before, after, undefined, undefined, {
          context: 3,
        }),
        isGit: true,
      }),
    )
    .join('');
}
