import * as t from '@babel/types';

/** A flag's value as the API serves it: a variation's JSON value. */
export type FlagValue =
  boolean | string | number | null | FlagValue[] | { [key: string]: FlagValue };

/** What the rewriter knows about a constant expression: its value, or only that it is truthy. */
export type Known = { value: FlagValue | undefined } | { truthy: true };

/** Builds the literal that stands for `value` in code (objects and arrays as literals). */
export function valueNode(value: FlagValue): t.Expression {
  if (value === null) return t.nullLiteral();
  if (typeof value === 'boolean') return t.booleanLiteral(value);
  if (typeof value === 'string') return t.stringLiteral(value);
  if (typeof value === 'number')
    return value < 0 || Object.is(value, -0)
      ? t.unaryExpression('-', t.numericLiteral(-value))
      : t.numericLiteral(value);
  if (Array.isArray(value)) return t.arrayExpression(value.map(valueNode));
  return t.objectExpression(
    Object.entries(value).map(([key, item]) =>
      t.objectProperty(
        t.isValidIdentifier(key) ? t.identifier(key) : t.stringLiteral(key),
        valueNode(item),
      ),
    ),
  );
}

/**
 * The value of a constant expression: literals, `undefined`, `-n`, a template without
 * expressions; object and array literals are only known to be truthy. Null when not constant.
 */
export function knownValue(node: t.Node | null | undefined): Known | null {
  if (!node) return null;
  switch (node.type) {
    case 'BooleanLiteral':
    case 'StringLiteral':
    case 'NumericLiteral':
      return { value: node.value };
    case 'NullLiteral':
      return { value: null };
    case 'Identifier':
      return node.name === 'undefined' ? { value: undefined } : null;
    case 'TemplateLiteral':
      return node.expressions.length === 0 ? { value: node.quasis[0]?.value.cooked ?? '' } : null;
    case 'UnaryExpression':
      if (node.operator === '-' && node.argument.type === 'NumericLiteral')
        return { value: -node.argument.value };
      return null;
    case 'ObjectExpression':
    case 'ArrayExpression':
      return { truthy: true };
    default:
      return null;
  }
}

/** JavaScript truthiness of a known constant. */
export function truthy(known: Known): boolean {
  return 'truthy' in known ? true : Boolean(known.value);
}

/**
 * `a === b` (or `!==`, `==`, `!=`) of two known constants, or null when it cannot be decided
 * (an object literal compared with anything).
 */
export function compare(operator: string, left: Known, right: Known): boolean | null {
  if ('truthy' in left || 'truthy' in right) return null;
  const a = left.value;
  const b = right.value;
  if (typeof a === 'object' && a !== null) return null;
  if (typeof b === 'object' && b !== null) return null;
  switch (operator) {
    case '===':
      return a === b;
    case '!==':
      return a !== b;
    case '==':
      // Only the cases that need no coercion rules beyond null/undefined.
      return typeof a === typeof b || a == null || b == null ? a == b : null;
    case '!=':
      return typeof a === typeof b || a == null || b == null ? a != b : null;
    default:
      return null;
  }
}

/**
 * Whether evaluating `node` can have no effect and throw nothing the rewriter cares about:
 * names, property reads, literals and operators over them. A getter is assumed to be pure.
 */
export function isPure(node: t.Node): boolean {
  switch (node.type) {
    case 'Identifier':
    case 'ThisExpression':
    case 'BooleanLiteral':
    case 'StringLiteral':
    case 'NumericLiteral':
    case 'NullLiteral':
    case 'BigIntLiteral':
      return true;
    case 'TemplateLiteral':
      return node.expressions.every(isPure);
    case 'MemberExpression':
    case 'OptionalMemberExpression':
      return isPure(node.object) && (!node.computed || isPure(node.property));
    case 'UnaryExpression':
      return node.operator !== 'delete' && isPure(node.argument);
    case 'BinaryExpression':
    case 'LogicalExpression':
      return node.left.type !== 'PrivateName' && isPure(node.left) && isPure(node.right);
    case 'TSAsExpression':
    case 'TSNonNullExpression':
    case 'TSSatisfiesExpression':
      return isPure(node.expression);
    default:
      return false;
  }
}
