/**
 * An upper bound of how deep a YAML text nests, in one pass linear in its length (issue 38).
 * The `yaml` library recurses per level and lexes deep flow collections in quadratic time (a
 * 2 KB `[[[…]]]` takes a quarter of a second, 30,000 levels overflow the stack after seconds), so
 * a document is measured before the library reads it.
 *
 * Counted: block levels (a stack of indentations, plus compact `- ` entries on one line) and flow
 * levels (`[`, `{` outside quotes and comments, where a value or entry starts). Scalars are not
 * understood, so a block scalar indented ever deeper counts as nesting: the bound errs high.
 */
export function yamlNestingBound(text: string): number {
  const indents: number[] = [];
  let flow = 0;
  let quote: '"' | "'" | null = null;
  let deepest = 0;
  for (const line of text.split('\n')) {
    let at = 0;
    let block = indents.length;
    if (quote === null && flow === 0) {
      while (line[at] === ' ') at += 1;
      if (at === line.length || line[at] === '#') continue;
      while ((indents.at(-1) ?? -1) >= at) indents.pop();
      indents.push(at);
      block = indents.length;
      while (line[at] === '-' && (line[at + 1] === ' ' || at + 1 === line.length)) {
        block += 1;
        at += 1;
        while (line[at] === ' ') at += 1;
      }
    }
    let previous = ' ';
    for (; at < line.length; at += 1) {
      const character = line.charAt(at);
      if (quote !== null) {
        if (character === '\\' && quote === '"') at += 1;
        else if (character === quote) quote = null;
        continue;
      }
      if (character === '#' && (previous === ' ' || previous === '\t')) break;
      const starts = /[\s:,?[{-]/.test(previous);
      if ((character === '"' || character === "'") && starts) quote = character;
      else if ((character === '[' || character === '{') && (flow > 0 || starts)) flow += 1;
      else if ((character === ']' || character === '}') && flow > 0) flow -= 1;
      if (character !== ' ' && character !== '\t') previous = character;
      deepest = Math.max(deepest, block + flow);
    }
    deepest = Math.max(deepest, block + flow);
  }
  return deepest;
}
