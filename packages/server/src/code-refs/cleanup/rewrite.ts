import type { NodePath } from '@babel/traverse';
import { traverse } from './traverse.js';
import type * as t from '@babel/types';
import * as recast from 'recast';
import { literalText, parseSource } from '../javascript-references.js';
import { valueNode, type FlagValue } from './constants.js';
import { isAttached, landing, settle, type FoldTally } from './fold.js';
import { readAt, readTarget, typeMismatch, type Wrapper } from './reads.js';
import { referenceCounts, removeUnused } from './unused.js';

/** One flag to take out of a file, and what the rest of the repository says about it. */
export interface RewriteOptions {
  key: string;
  /** The value the flag's reads are replaced by. */
  value: FlagValue;
  /** The project's own read functions (`.vexil/code-refs.yaml`). */
  wrappers: readonly Wrapper[];
  /** Names of constants other files export holding the key (an import of one is an alias). */
  importedAliases?: ReadonlySet<string>;
  /** Exported constants of this file holding the key that no other file uses any more. */
  removableExports?: ReadonlySet<string>;
}

/** A place the rewriter leaves to a person; 1-based line and column. */
export interface Place {
  line: number;
  column: number;
  reason: string;
}

/** The outcome for one file: its new text (null: unchanged) and the tally for the summary. */
export interface FileRewrite {
  text: string | null;
  reads: number;
  branches: number;
  places: Place[];
  /** Exported constants this file declares holding the key. */
  exportedAliases: string[];
}

/** Why a key (not a read of it) cannot be taken out by the rewriter. */
function keyUse(site: NodePath): string {
  const parent = site.parentPath;
  if (parent?.isJSXAttribute()) {
    const element = parent.parentPath;
    const name = element.isJSXOpeningElement() ? recast.print(element.node.name).code : 'JSX';
    const attribute = parent.node.name;
    const prop =
      attribute.type === 'JSXIdentifier'
        ? attribute.name
        : `${attribute.namespace.name}:${attribute.name.name}`;
    return `the key is given to <${name}> as its ${prop} prop`;
  }
  if (parent?.isTSLiteralType()) return 'the key is part of a type';
  if (parent?.isTSEnumMember()) return 'the key is an enum member';
  const where = landing(site);
  if (where.kind === 'escape')
    return `the key is ${where.reason.replace(/^passed to (.*)\(\)$/, 'passed to $1(), which may read it by a dynamic key')}`;
  return 'the key is used without being read by a known function';
}

/** Babel counts `export const x` as a use of `x`; only names in code are uses here. */
function isName(path: NodePath): boolean {
  return path.isIdentifier() || path.isJSXIdentifier();
}

function position(node: t.Node): { line: number; column: number } {
  return { line: node.loc?.start.line ?? 0, column: (node.loc?.start.column ?? 0) + 1 };
}

/**
 * Replaces every read of `options.key` in one JavaScript or TypeScript file by `options.value`
 * and folds what follows (flag-cleanup contract, section 3; design record 054). The file is
 * printed with recast, so lines the rewrite does not touch keep their bytes. When any place
 * cannot be rewritten safely the file is left as it was (`text` null) and the places are listed.
 * @throws SyntaxError when the file does not parse
 */
export function rewriteFile(text: string, extension: string, options: RewriteOptions): FileRewrite {
  const ast = recast.parse(text, {
    parser: { parse: (source: string) => parseSource(source, extension) },
  }) as t.File;
  const before = referenceCounts(ast);
  const places: Place[] = [];
  const exportedAliases: string[] = [];
  const sites: NodePath[] = [];
  let singleQuotes = 0;
  let doubleQuotes = 0;
  const aliasNames = new Set<string>();
  const importedAliases = options.importedAliases ?? new Set<string>();
  traverse.cache.clear();
  traverse(ast, {
    'StringLiteral|TemplateLiteral'(path) {
      // The file's own quotes, for the strings the rewrite writes.
      const raw = (path.node.extra?.raw as string | undefined) ?? '';
      if (raw.startsWith("'")) singleQuotes += 1;
      else if (raw.startsWith('"')) doubleQuotes += 1;
      if (literalText(path.node) !== options.key) return;
      const parent = path.parentPath;
      if (
        parent?.isVariableDeclarator() &&
        path.key === 'init' &&
        parent.node.id.type === 'Identifier' &&
        (parent.parentPath.node as t.VariableDeclaration).kind === 'const'
      ) {
        // An alias: its uses are the sites; the declaration goes once none is left.
        aliasNames.add(parent.node.id.name);
        const binding = parent.scope.getBinding(parent.node.id.name);
        if (parent.parentPath.parentPath?.isExportNamedDeclaration())
          exportedAliases.push(parent.node.id.name);
        for (const use of binding?.referencePaths ?? []) if (isName(use)) sites.push(use);
        return;
      }
      sites.push(path);
    },
    ImportSpecifier(path) {
      const imported = path.node.imported;
      const name = imported.type === 'Identifier' ? imported.name : imported.value;
      if (!importedAliases.has(name)) return;
      const binding = path.scope.getBinding(path.node.local.name);
      for (const use of binding?.referencePaths ?? []) if (isName(use)) sites.push(use);
    },
  });
  const ordered = sites
    .map((site) => ({ site, at: position(site.node) }))
    .sort((a, b) => a.at.line - b.at.line || a.at.column - b.at.column);
  let reads = 0;
  const tally: FoldTally = { branches: 0, escapes: [] };
  for (const { site, at } of ordered) {
    if (!isAttached(site)) continue; // inside a branch an earlier fold removed
    const read = readAt(site, options.wrappers);
    if (!read) {
      places.push({ ...at, reason: keyUse(site) });
      continue;
    }
    const target = readTarget(read);
    const mismatch = typeMismatch(read, options.value);
    if ('refused' in target || mismatch) {
      places.push({ ...at, reason: mismatch ?? ('refused' in target ? target.refused : '') });
      continue;
    }
    reads += 1;
    const escapesBefore = tally.escapes.length;
    if ('replace' in target) {
      const [replaced] = target.replace.replaceWith(valueNode(options.value));
      settle(replaced, tally);
    } else {
      const { destructure } = target;
      const id = destructure.node.id as t.ObjectPattern;
      const property = id.properties[0] as t.ObjectProperty;
      // The identifier node is the binding's: keep it, so the scope stays right.
      destructure.node.id = property.value as t.Identifier;
      const [init] = destructure.get('init').replaceWith(valueNode(options.value));
      settle(init, tally);
    }
    for (const reason of tally.escapes.slice(escapesBefore))
      places.push({ ...at, reason: `the value is ${reason}` });
  }
  if (places.length > 0) return { text: null, reads: 0, branches: 0, places, exportedAliases };
  // Exported aliases no file imports any more go; unexported ones go as unused.
  let removedExports = 0;
  traverse.cache.clear();
  traverse(ast, {
    VariableDeclarator(path) {
      const id = path.node.id;
      if (id.type !== 'Identifier' || !options.removableExports?.has(id.name)) return;
      if (!aliasNames.has(id.name)) return;
      const uses = path.scope.getBinding(id.name)?.referencePaths ?? [];
      if (uses.some((use) => isName(use) && isAttached(use))) return;
      path.remove();
      removedExports += 1;
    },
  });
  if (reads === 0 && removedExports === 0)
    return { text: null, reads: 0, branches: 0, places, exportedAliases };
  removeUnused(ast, before);
  const lineTerminator = text.includes('\r\n') ? '\r\n' : '\n';
  const printed = recast.print(ast, {
    quote: singleQuotes >= doubleQuotes ? 'single' : 'double',
    lineTerminator,
  }).code;
  try {
    parseSource(printed, extension);
  } catch (error) {
    return {
      text: null,
      reads: 0,
      branches: 0,
      places: [{ line: 1, column: 1, reason: `the rewrite would not parse (${String(error)})` }],
      exportedAliases,
    };
  }
  return { text: printed, reads, branches: tally.branches, places, exportedAliases };
}
