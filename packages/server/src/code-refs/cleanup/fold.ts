import type { NodePath } from '@babel/traverse';
import * as t from '@babel/types';
import { compare, isPure, knownValue, truthy, type Known } from './constants.js';

/**
 * What folding one constant did, and why it could not go on: the rewriter's tally for the
 * summary, and the places where the flag's value leaves what the rewriter can follow.
 */
export interface FoldTally {
  /** `if`/`else`, ternaries and JSX conditionals decided (one branch kept). */
  branches: number;
  /** Why the value could not be folded away, each a place for a person. */
  escapes: string[];
}

/**
 * `flag`: the constant is the flag's value or follows from it alone (`!flag`, `flag === 'b'`): it
 * must not leave the code the rewriter sees. `derived`: a branch the flag chose (`flag ? 'a' :
 * 'b'`): an ordinary constant of the program, folded where it decides something, kept elsewhere.
 */
type Origin = 'flag' | 'derived';

/** Where a constant ends up (see {@link landing}). */
type Landing =
  { kind: 'fold' } | { kind: 'data' } | { kind: 'const' } | { kind: 'escape'; reason: string };

/** Expressions a constant passes through unchanged: casts, `await`, parentheses. */
function isPassThrough(path: NodePath): boolean {
  return (
    path.isTSAsExpression() ||
    path.isTSSatisfiesExpression() ||
    path.isTSNonNullExpression() ||
    path.isTypeCastExpression() ||
    path.isParenthesizedExpression() ||
    path.isAwaitExpression()
  );
}

/** Whether only the truthiness of the expression at `path` matters (an `if`'s test…). */
function inTestContext(path: NodePath): boolean {
  const parent = path.parentPath;
  if (!parent) return false;
  if (isPassThrough(parent)) return inTestContext(parent);
  if (path.key === 'test')
    return (
      parent.isIfStatement() ||
      parent.isConditionalExpression() ||
      parent.isWhileStatement() ||
      parent.isDoWhileStatement() ||
      parent.isForStatement()
    );
  if (parent.isUnaryExpression({ operator: '!' })) return true;
  if (parent.isLogicalExpression() && parent.node.operator !== '??') return inTestContext(parent);
  return false;
}

/** `<div>` and `<my-element>` are the DOM's; `<Checkout>` and `<ui.Button>` are components. */
function isIntrinsic(opening: t.JSXOpeningElement): boolean {
  return opening.name.type === 'JSXIdentifier' && /^[a-z]/.test(opening.name.name);
}

function calleeText(callee: t.Node): string {
  if (callee.type === 'Identifier') return callee.name;
  if (callee.type === 'MemberExpression' && callee.property.type === 'Identifier')
    return `${calleeText(callee.object)}.${callee.property.name}`;
  return 'a function';
}

const STATE_HOOKS = new Set(['useState', 'useReducer', 'useRef', 'signal', 'ref', 'writable']);

function isJsxChild(path: NodePath): boolean {
  return path.listKey === 'children';
}

/**
 * Where a constant at `path` ends up, not counting what folding would do first:
 * - `fold`: a place folding decides (a test, `!`, `&&`/`||`/`??`, a comparison with a literal, a
 *   statement of its own, a JSX child);
 * - `const`: the initialiser of a `const` (its uses are followed);
 * - `data`: a value the program uses as it is (returned, in a template, a DOM attribute);
 * - `escape`: somewhere the rewriter cannot follow (an argument, state, a variable that can
 *   change, an object, a component's prop) — a place for a person.
 */
export function landing(path: NodePath): Landing {
  let current = path;
  while (current.parentPath && isPassThrough(current.parentPath)) current = current.parentPath;
  const parent = current.parentPath;
  const key = current.key;
  if (!parent) return { kind: 'escape', reason: 'not inside a program' };
  const up = (): Landing => {
    const above = landing(parent);
    return above.kind === 'escape' ? above : { kind: 'data' };
  };
  if (parent.isIfStatement() && key === 'test') return { kind: 'fold' };
  if (parent.isConditionalExpression()) return key === 'test' ? { kind: 'fold' } : up();
  if (parent.isUnaryExpression({ operator: '!' })) return { kind: 'fold' };
  if (parent.isLogicalExpression())
    return key === 'left' || (parent.node.operator !== '??' && inTestContext(parent))
      ? { kind: 'fold' }
      : up();
  if (parent.isBinaryExpression()) {
    const other = key === 'left' ? parent.node.right : parent.node.left;
    return ['===', '!==', '==', '!='].includes(parent.node.operator) && knownValue(other)
      ? { kind: 'fold' }
      : up();
  }
  if (parent.isExpressionStatement()) return { kind: 'fold' };
  if (parent.isJSXExpressionContainer()) {
    if (isJsxChild(parent)) return { kind: 'fold' };
    const attribute = parent.parentPath;
    const element = attribute.parentPath;
    if (attribute.isJSXAttribute() && element?.isJSXOpeningElement()) {
      if (isIntrinsic(element.node)) return { kind: 'data' };
      const name = attribute.node.name.name;
      return {
        kind: 'escape',
        reason: `passed to a component as its ${typeof name === 'string' ? name : name.name} prop`,
      };
    }
    return { kind: 'escape', reason: 'used in JSX' };
  }
  if (parent.isVariableDeclarator() && key === 'init') {
    const declaration = parent.parentPath;
    if (
      declaration.isVariableDeclaration() &&
      declaration.node.kind === 'const' &&
      parent.node.id.type === 'Identifier'
    )
      return { kind: 'const' };
    return {
      kind: 'escape',
      reason:
        parent.node.id.type === 'Identifier'
          ? `stored in a variable that can change (${parent.node.id.name})`
          : 'destructured',
    };
  }
  if (parent.isReturnStatement() || (parent.isArrowFunctionExpression() && key === 'body'))
    return { kind: 'data' };
  if (parent.isTemplateLiteral()) return up();
  if ((parent.isCallExpression() || parent.isNewExpression()) && current.listKey === 'arguments') {
    const name = calleeText(parent.node.callee);
    const last = name.split('.').pop() ?? name;
    return {
      kind: 'escape',
      reason: STATE_HOOKS.has(last) ? `stored in state (${name})` : `passed to ${name}()`,
    };
  }
  if (parent.isAssignmentExpression()) return { kind: 'escape', reason: 'stored by an assignment' };
  if (parent.isObjectProperty() || parent.isSpreadElement())
    return { kind: 'escape', reason: 'stored in an object' };
  if (parent.isArrayExpression()) return { kind: 'escape', reason: 'stored in an array' };
  if (parent.isClassProperty()) return { kind: 'escape', reason: 'stored in a class field' };
  if (parent.isSwitchStatement()) return { kind: 'escape', reason: 'a switch on the value' };
  if (parent.isExportSpecifier() || parent.isExportDefaultDeclaration())
    return { kind: 'escape', reason: 'exported' };
  if (parent.isMemberExpression() || parent.isOptionalMemberExpression())
    return { kind: 'escape', reason: 'its properties are read' };
  return { kind: 'escape', reason: `used in a ${parent.type}` };
}

/** Whether `path` still hangs from the program (an ancestor may have been replaced). */
export function isAttached(path: NodePath): boolean {
  for (let current: NodePath | null = path; current; current = current.parentPath) {
    if (current.removed) return false;
    const parent = current.parentPath;
    if (!parent) return current.isProgram() || current.isFile();
    const container = (parent.node as unknown as Record<string, unknown>)[current.parentKey];
    const held: unknown = Array.isArray(container)
      ? (container as unknown[])[current.key as number]
      : container;
    if (held !== current.node) return false;
  }
  return false;
}

/** Recast keeps a node's comments in `comments`; a kept statement takes over the removed one's. */
function moveLeadingComments(from: t.Node, to: t.Node): void {
  const source = from as t.Node & { comments?: (t.Comment & { leading?: boolean })[] };
  const target = to as t.Node & { comments?: (t.Comment & { leading?: boolean })[] };
  const leading = (source.comments ?? []).filter((comment) => comment.leading);
  if (leading.length === 0) return;
  target.comments = [...leading, ...(target.comments ?? [])];
}

/** The names a block declares at its top level (`const`, `let`, classes, functions). */
function blockNames(block: t.BlockStatement): Set<string> {
  const names = new Set<string>();
  for (const statement of block.body) {
    if (
      (statement.type === 'VariableDeclaration' && statement.kind !== 'var') ||
      statement.type === 'ClassDeclaration' ||
      statement.type === 'FunctionDeclaration'
    )
      for (const name of Object.keys(t.getBindingIdentifiers(statement))) names.add(name);
  }
  return names;
}

/**
 * Whether the kept block's statements may join the enclosing list: nothing else in that list
 * uses a name the block declares (else the block is kept, braces and all).
 */
function canSplice(ifPath: NodePath<t.IfStatement>, block: t.BlockStatement): boolean {
  const names = blockNames(block);
  if (names.size === 0) return true;
  const list = ifPath.parentPath;
  let clash = false;
  list.traverse({
    Identifier(path) {
      if (!clash && names.has(path.node.name) && !path.isDescendant(ifPath)) clash = true;
    },
  });
  return !clash;
}

const TERMINATORS = new Set([
  'ReturnStatement',
  'ThrowStatement',
  'BreakStatement',
  'ContinueStatement',
]);

/**
 * After a kept branch that always returns (or throws…), the statements after it in the same list
 * are unreachable: they go, unless one of them declares something (hoisting makes that unsafe).
 */
function removeUnreachableAfter(last: NodePath): void {
  if (!TERMINATORS.has(last.node.type)) return;
  const rest = last.getAllNextSiblings();
  const declares = rest.some(
    (sibling) =>
      sibling.isDeclaration() ||
      sibling.isImportDeclaration() ||
      (sibling.isVariableDeclaration() && sibling.node.kind === 'var'),
  );
  if (declares) return;
  for (const sibling of rest) sibling.remove();
}

/** Keeps one branch of an `if` whose test is known (flag-cleanup contract, section 3). */
function foldIf(ifPath: NodePath<t.IfStatement>, keep: boolean, tally: FoldTally): void {
  tally.branches += 1;
  const kept = keep ? ifPath.node.consequent : ifPath.node.alternate;
  if (ifPath.inList && Array.isArray(ifPath.container)) {
    if (!kept) {
      ifPath.remove();
      return;
    }
    const statements =
      kept.type === 'BlockStatement' && canSplice(ifPath, kept) ? kept.body : [kept];
    const first = statements[0];
    if (!first) {
      ifPath.remove();
      return;
    }
    moveLeadingComments(ifPath.node, first);
    const inserted = ifPath.replaceWithMultiple(statements);
    const last = inserted[inserted.length - 1];
    if (last) removeUnreachableAfter(last);
    return;
  }
  if (ifPath.parentPath.isIfStatement() && ifPath.key === 'alternate') {
    if (kept) ifPath.replaceWith(kept);
    else ifPath.remove();
    return;
  }
  ifPath.replaceWith(kept ?? t.blockStatement([]));
}

/** Removes a JSX child, with the line of indentation before it when it stood on its own line. */
function removeJsxChild(container: NodePath): void {
  const index = container.key as number;
  const before = index > 0 ? container.getSibling(index - 1) : null;
  const after = container.getSibling(index + 1);
  const blank = (path: NodePath | null) =>
    !!path?.node &&
    path.isJSXText() &&
    /^\s*$/.test(path.node.value) &&
    path.node.value.includes('\n');
  const afterNode = after.node as t.Node | undefined;
  const ownLine = blank(before) && (afterNode === undefined || blank(after));
  container.remove();
  if (ownLine && before) before.remove();
}

/**
 * A branch kept in place of a conditional: a JSX element in `{…}` stands on its own, a child
 * that renders nothing goes, and a constant that decides something is folded further.
 */
function afterBranch(path: NodePath, tally: FoldTally): void {
  const parent = path.parentPath;
  if (parent?.isJSXExpressionContainer() && isJsxChild(parent)) {
    if (path.isJSXElement() || path.isJSXFragment()) {
      parent.replaceWith(path.node);
      return;
    }
  }
  const known = knownValue(path.node);
  if (known && landing(path).kind === 'fold') settle(path, tally, 'derived');
}

/** Replaces the expression at `path` (an ancestor of the constant) and returns its new path. */
function replace(path: NodePath, node: t.Node): NodePath {
  const [replaced] = path.replaceWith(node);
  return replaced;
}

/**
 * Folds the constant at `path` into what surrounds it, as far as it goes (flag-cleanup contract,
 * section 3): `!`, `&&`, `||`, `??`, `===`/`!==` against literals, `if`/`else`, ternaries, JSX
 * conditionals, and `const` that became constant (inlined where a use folds, removed when none
 * is left). A constant of `flag` origin that lands where it cannot be followed adds an escape.
 */
export function settle(path: NodePath, tally: FoldTally, origin: Origin = 'flag'): void {
  const node = path.node;
  const known = knownValue(node);
  const parent = path.parentPath;
  if (!known || !parent) return;
  if (isPassThrough(parent)) {
    settle(replace(parent, node), tally, origin);
    return;
  }
  const key = path.key;
  if (parent.isIfStatement() && key === 'test') {
    foldIf(parent, truthy(known), tally);
    return;
  }
  if (parent.isConditionalExpression() && key === 'test') {
    tally.branches += 1;
    const kept = truthy(known) ? parent.node.consequent : parent.node.alternate;
    afterBranch(replace(parent, kept), tally);
    return;
  }
  if (parent.isUnaryExpression({ operator: '!' })) {
    settle(replace(parent, t.booleanLiteral(!truthy(known))), tally, origin);
    return;
  }
  if (parent.isLogicalExpression()) {
    foldLogical(parent, key === 'left', known, tally, origin);
    return;
  }
  if (parent.isBinaryExpression()) {
    const binary = parent;
    const other = knownValue(key === 'left' ? binary.node.right : binary.node.left);
    const result = other
      ? compare(
          binary.node.operator,
          key === 'left' ? known : other,
          key === 'left' ? other : known,
        )
      : null;
    if (result !== null) {
      settle(replace(binary, t.booleanLiteral(result)), tally, origin);
      return;
    }
  }
  if (parent.isExpressionStatement()) {
    parent.remove();
    return;
  }
  if (parent.isJSXExpressionContainer() && isJsxChild(parent)) {
    const value = 'value' in known ? known.value : {};
    if (value === null || value === undefined || typeof value === 'boolean') removeJsxChild(parent);
    return;
  }
  if (parent.isVariableDeclarator() && key === 'init' && landing(path).kind === 'const') {
    settleConst(parent, tally, origin);
    return;
  }
  if (origin === 'flag') {
    const where = landing(path);
    if (where.kind === 'escape') tally.escapes.push(where.reason);
  }
}

function foldLogical(
  logical: NodePath<t.LogicalExpression>,
  isLeft: boolean,
  known: Known,
  tally: FoldTally,
  origin: Origin,
): void {
  const { operator } = logical.node;
  if (isLeft) {
    const nullish = 'value' in known && (known.value === null || known.value === undefined);
    const keepsConstant =
      operator === '&&' ? !truthy(known) : operator === '||' ? truthy(known) : !nullish;
    // `{flag && <New />}` in JSX decides what is rendered: a branch, as a ternary's.
    const container = logical.parentPath;
    if (container.isJSXExpressionContainer() && isJsxChild(container)) tally.branches += 1;
    if (keepsConstant) settle(replace(logical, logical.node.left), tally, origin);
    else afterBranch(replace(logical, logical.node.right), tally);
    return;
  }
  const other = logical.node.left;
  if (operator !== '??' && inTestContext(logical)) {
    // In a test only truthiness matters: `x && true` is `x`, `x || false` is `x`.
    const neutral = operator === '&&' ? truthy(known) : !truthy(known);
    if (neutral) {
      replace(logical, other);
      return;
    }
    if (isPure(other)) {
      settle(replace(logical, logical.node.right), tally, origin);
      return;
    }
    tally.escapes.push(`combined by ${operator} with an expression that may have effects`);
    return;
  }
  if (origin === 'flag') {
    const where = landing(logical);
    if (where.kind === 'escape') tally.escapes.push(where.reason);
  }
}

/**
 * A `const` whose initialiser became constant: each use that folds gets the constant and is
 * folded; uses as data keep the name; a use the rewriter cannot follow is an escape. The
 * declaration itself is removed later, with everything else the removal left unused.
 */
function settleConst(
  declarator: NodePath<t.VariableDeclarator>,
  tally: FoldTally,
  origin: Origin,
): void {
  const id = declarator.node.id;
  const init = declarator.node.init;
  if (id.type !== 'Identifier' || !init) return;
  const exported = declarator.parentPath.parentPath?.isExportNamedDeclaration();
  if (exported && origin === 'flag') {
    tally.escapes.push(`exported as ${id.name}`);
    return;
  }
  const binding = declarator.scope.getBinding(id.name);
  if (!binding) return;
  const uses = binding.referencePaths.filter(
    (use) => (use.isIdentifier() || use.isJSXIdentifier()) && isAttached(use),
  );
  if (origin === 'flag') {
    const escapes = uses
      .map((use) => landing(use))
      .flatMap((where) =>
        where.kind === 'escape' ? [`${where.reason} (through ${id.name})`] : [],
      );
    tally.escapes.push(...escapes);
    if (escapes.length > 0) return;
  }
  for (const use of uses) {
    const kind = isAttached(use) ? landing(use).kind : 'gone';
    if (kind !== 'fold' && kind !== 'const') continue;
    settle(replace(use, t.cloneNode(init, true)), tally, origin);
  }
}
