import type { Binding, NodePath } from '@babel/traverse';
import { traverse } from './traverse.js';
import * as t from '@babel/types';
import { isPure } from './constants.js';

/** Every binding of the file (all scopes), by its declaring identifier. */
function bindings(ast: t.File): Map<t.Node, Binding> {
  traverse.cache.clear();
  const found = new Map<t.Node, Binding>();
  traverse(ast, {
    Scopable(path) {
      for (const binding of Object.values(path.scope.bindings))
        found.set(binding.identifier, binding);
    },
  });
  return found;
}

/** How many references each binding has (babel counts values, not uses in types). */
export function referenceCounts(ast: t.File): Map<t.Node, number> {
  return new Map([...bindings(ast)].map(([node, binding]) => [node, binding.references]));
}

/** How often each name appears as an identifier other than a property name. */
function nameUses(ast: t.File): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  traverse(ast, {
    Identifier(path) {
      const parent = path.parent;
      if (
        (parent.type === 'MemberExpression' || parent.type === 'OptionalMemberExpression') &&
        path.key === 'property' &&
        !parent.computed
      )
        return;
      if (
        (parent.type === 'ObjectProperty' || parent.type === 'ObjectMethod') &&
        path.key === 'key' &&
        !parent.computed
      )
        return;
      if (parent.type === 'ImportSpecifier' && path.key === 'imported') return;
      add(path.node.name);
    },
    JSXIdentifier(path) {
      if (path.parent.type === 'JSXAttribute') return;
      add(path.node.name);
    },
  });
  return counts;
}

const SDK_MODULES = /^(@openfeature\/|@vexil\/)/;

/** Whether the call or `new` is made on something imported from a flag SDK (`OpenFeature.getClient()`). */
function isSdkConstruction(path: NodePath, node: t.Node): boolean {
  if (node.type !== 'CallExpression' && node.type !== 'NewExpression') return false;
  let root: t.Node = node.callee;
  while (root.type === 'MemberExpression') root = root.object;
  if (root.type !== 'Identifier') return false;
  const binding = path.scope.getBinding(root.name);
  const declaration = binding?.path.parentPath;
  return (
    binding?.kind === 'module' &&
    !!declaration?.isImportDeclaration() &&
    SDK_MODULES.test(declaration.node.source.value)
  );
}

function removableInit(path: NodePath, init: t.Node | null | undefined): boolean {
  if (!init) return true;
  return (
    isPure(init) ||
    t.isFunction(init) ||
    t.isClassExpression(init) ||
    t.isJSXElement(init) ||
    t.isJSXFragment(init) ||
    t.isObjectExpression(init) ||
    t.isArrayExpression(init) ||
    isSdkConstruction(path, init)
  );
}

/** `export const x`, `export function f`: the declaration itself is exported (not an enclosing one). */
function isExported(path: NodePath): boolean {
  const holder = path.isVariableDeclarator() ? path.parentPath.parentPath : path.parentPath;
  return !!holder?.isExportDeclaration();
}

/** Removes the declaration of `binding` when that is safe; true when it did. */
function removeBinding(binding: Binding): boolean {
  const path = binding.path;
  if (
    path.isImportSpecifier() ||
    path.isImportDefaultSpecifier() ||
    path.isImportNamespaceSpecifier()
  ) {
    const declaration = path.parentPath as NodePath<t.ImportDeclaration>;
    path.remove();
    if (declaration.node.specifiers.length === 0) declaration.remove();
    return true;
  }
  if (isExported(path)) return false;
  if (path.isVariableDeclarator() && path.node.id.type === 'Identifier') {
    if (!removableInit(path, path.node.init)) return false;
    path.remove();
    return true;
  }
  if (
    path.isFunctionDeclaration() ||
    (path.isClassDeclaration() && !path.node.decorators?.length)
  ) {
    path.remove();
    return true;
  }
  return false;
}

/**
 * Removes what the rewrite left unused (flag-cleanup contract, section 3): imports, `const`s
 * and functions that were used before (`before`, from {@link referenceCounts}) and are not now,
 * as long as nothing in the file names them any more (babel does not count uses in types).
 * Exported declarations stay. Runs until nothing more becomes unused.
 * @returns the number of declarations removed
 */
export function removeUnused(ast: t.File, before: ReadonlyMap<t.Node, number>): number {
  let removed = 0;
  for (let round = 0; round < 50; round += 1) {
    const now = bindings(ast);
    const names = nameUses(ast);
    let changed = false;
    for (const [identifier, binding] of now) {
      if ((before.get(identifier) ?? 0) === 0 || binding.references > 0) continue;
      // Only the declaration names it (1), or a second binding of the same name somewhere.
      if ((names.get(binding.identifier.name) ?? 0) > 1) continue;
      if (removeBinding(binding)) {
        removed += 1;
        changed = true;
        break; // paths of this round are stale once one is removed
      }
    }
    if (!changed) break;
  }
  return removed;
}
