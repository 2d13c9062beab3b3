/**
 * The key the API would take for a name, for forms that fill a key in as the name is typed:
 * "Café déjà vu!" → `cafe-deja-vu`. Accents are dropped, each run of other characters becomes one
 * dash, and the key starts with a letter or digit (the API's key rule).
 */
export function keyFromName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '')
    .slice(0, 100);
}
