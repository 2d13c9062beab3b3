import { parse } from '@babel/parser';
import type { Node } from '@babel/types';

/** Where and how a file reads a flag key (flag-cleanup contract, section 1). */
export interface FoundReference {
  key: string;
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units as editors count. */
  column: number;
  kind: 'call' | 'jsx' | 'property' | 'alias' | 'literal';
}

/** JavaScript and TypeScript files by extension; `.ts`-like ones are parsed as TypeScript. */
export const JAVASCRIPT_EXTENSIONS = new Set([
  '.js',
  '.jsx',
  '.mjs',
  '.cjs',
  '.ts',
  '.tsx',
  '.mts',
  '.cts',
]);

/**
 * Parses a JavaScript or TypeScript file with Babel (JSX on everywhere except `.ts`/`.mts`/`.cts`,
 * where `<T>x` is a cast). Exported for the cleanup, which rewrites the same tree.
 * @throws SyntaxError when the file does not parse
 */
export function parseSource(text: string, extension: string) {
  const typescript = ['.ts', '.tsx', '.mts', '.cts'].includes(extension);
  const jsx = extension !== '.ts' && extension !== '.mts' && extension !== '.cts';
  return parse(text, {
    sourceType: 'unambiguous',
    errorRecovery: false,
    plugins: [
      ...(typescript ? (['typescript'] as const) : []),
      ...(jsx ? (['jsx'] as const) : []),
      'decorators-legacy',
    ],
    tokens: true,
  });
}

/** The string a literal holds: a string literal, or a template literal without expressions. */
export function literalText(node: Node | null | undefined): string | null {
  if (!node) return null;
  if (node.type === 'StringLiteral') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0)
    return node.quasis[0]?.value.cooked ?? null;
  return null;
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as Node).type === 'string';
}

/** Every node with its parent, depth first, without recursion (a file's depth is not the stack's). */
function* walk(root: Node): Generator<{ node: Node; parent: Node | null; field: string }> {
  const pending: { node: Node; parent: Node | null; field: string }[] = [
    { node: root, parent: null, field: '' },
  ];
  for (let item = pending.pop(); item; item = pending.pop()) {
    yield item;
    const { node } = item;
    for (const [field, value] of Object.entries(node)) {
      if (field === 'loc' || field === 'leadingComments' || field === 'trailingComments') continue;
      if (Array.isArray(value)) {
        for (let index = value.length - 1; index >= 0; index -= 1) {
          const child: unknown = value[index];
          if (isNode(child)) pending.push({ node: child, parent: node, field });
        }
      } else if (isNode(value)) pending.push({ node: value, parent: node, field });
    }
  }
}

/** What a key literal is to its parent: the reference's kind, and the alias it initialises. */
function classify(
  parent: Node | null,
  field: string,
): { kind: FoundReference['kind']; alias?: string } {
  if (!parent) return { kind: 'literal' };
  switch (parent.type) {
    case 'CallExpression':
    case 'NewExpression':
    case 'OptionalCallExpression':
      return { kind: field === 'arguments' ? 'call' : 'literal' };
    case 'JSXAttribute':
    case 'JSXExpressionContainer':
      return { kind: 'jsx' };
    case 'ObjectProperty':
      return { kind: field === 'value' ? 'property' : 'literal' };
    case 'VariableDeclarator':
      return parent.id.type === 'Identifier'
        ? { kind: 'literal', alias: parent.id.name }
        : { kind: 'literal' };
    case 'TSEnumMember':
      return { kind: 'literal' };
    default:
      return { kind: 'literal' };
  }
}

/**
 * The references to `keys` in one parsed file: key literals in call arguments, JSX attributes,
 * object property values and const/enum initialisers, and each later use of a constant so
 * initialised (an alias), by name within the file. `imported` are aliases other files declare:
 * their uses count where this file imports them by that name (design record 054).
 * @returns the references, and the aliases this file declares (name → key)
 * @throws SyntaxError when the file does not parse
 */
export function javascriptReferences(
  text: string,
  extension: string,
  keys: ReadonlySet<string>,
  imported: ReadonlyMap<string, string> = new Map(),
): { references: FoundReference[]; aliases: Map<string, string> } {
  const ast = parseSource(text, extension);
  const found: FoundReference[] = [];
  const aliases = new Map<string, string>();
  const declared = new Map<string, string>();
  for (const statement of ast.program.body) {
    if (statement.type !== 'ImportDeclaration') continue;
    for (const specifier of statement.specifiers) {
      if (specifier.type !== 'ImportSpecifier') continue;
      const importedName =
        specifier.imported.type === 'Identifier'
          ? specifier.imported.name
          : specifier.imported.value;
      const key = imported.get(importedName);
      if (key !== undefined) aliases.set(specifier.local.name, key);
    }
  }
  const declarations = new Set<Node>();
  for (const { node, parent, field } of walk(ast.program)) {
    const value = literalText(node);
    if (value === null || !keys.has(value)) continue;
    // A JSX attribute's string sits in the attribute itself, or in `{…}` within it.
    const { kind, alias } = classify(parent, field);
    if (alias) {
      aliases.set(alias, value);
      declared.set(alias, value);
      if (parent) declarations.add(parent);
    }
    const start = node.loc?.start;
    if (start) found.push({ key: value, line: start.line, column: start.column + 1, kind });
  }
  if (aliases.size > 0) {
    for (const { node, parent, field } of walk(ast.program)) {
      if (node.type !== 'Identifier' && node.type !== 'JSXIdentifier') continue;
      const key = aliases.get(node.name);
      if (key === undefined) continue;
      // The declaration itself, property names (`x.NAME`, `{ NAME: … }` keys) and import names.
      if (parent && declarations.has(parent) && field === 'id') continue;
      if (parent?.type === 'MemberExpression' && field === 'property' && !parent.computed) continue;
      if (parent?.type === 'ObjectProperty' && field === 'key' && !parent.shorthand) continue;
      if (parent?.type === 'ImportSpecifier' || parent?.type === 'ExportSpecifier') continue;
      const start = node.loc?.start;
      if (start) found.push({ key, line: start.line, column: start.column + 1, kind: 'alias' });
    }
  }
  return {
    references: found.sort((a, b) => a.line - b.line || a.column - b.column),
    aliases: declared,
  };
}
