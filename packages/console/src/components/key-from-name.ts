/**
 * The key the API would take for a name, for forms that fill a key in as the name is typed:
 * lower case, each run of other characters one dash, starting with a letter or digit.
 */
export function keyFromName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '')
    .slice(0, 100);
}
