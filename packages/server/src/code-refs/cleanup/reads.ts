import type { NodePath } from '@babel/traverse';
import type * as t from '@babel/types';
import type { FlagValue } from './constants.js';

/** How a function reads a flag: where its key is, and what it answers. */
interface ReadShape {
  /** `value`: the call is the value; `details`: the value is the answer's `.value`. */
  answer: 'value' | 'details';
  /** The type of value the call returns, checked against the value kept. */
  type: 'boolean' | 'string' | 'number' | 'any';
  keyArgument: number;
}

const shape = (answer: ReadShape['answer'], type: ReadShape['type']): ReadShape => ({
  answer,
  type,
  keyArgument: 0,
});

/**
 * The reads replaced (flag-cleanup contract, section 3), by the name called: the Vexil SDK
 * (`@vexil/node`), OpenFeature server and web clients, and the OpenFeature React SDK's hooks.
 * Matched by name whatever the object they are called on, as the scan matches keys: the names
 * are specific to flag SDKs (LaunchDarkly's `boolVariation` reads a flag the same way).
 */
const READS: ReadonlyMap<string, ReadShape> = new Map([
  ['boolVariation', shape('value', 'boolean')],
  ['stringVariation', shape('value', 'string')],
  ['numberVariation', shape('value', 'number')],
  ['jsonVariation', shape('value', 'any')],
  ['boolVariationDetail', shape('details', 'boolean')],
  ['stringVariationDetail', shape('details', 'string')],
  ['numberVariationDetail', shape('details', 'number')],
  ['jsonVariationDetail', shape('details', 'any')],
  ['getBooleanValue', shape('value', 'boolean')],
  ['getStringValue', shape('value', 'string')],
  ['getNumberValue', shape('value', 'number')],
  ['getObjectValue', shape('value', 'any')],
  ['getBooleanDetails', shape('details', 'boolean')],
  ['getStringDetails', shape('details', 'string')],
  ['getNumberDetails', shape('details', 'number')],
  ['getObjectDetails', shape('details', 'any')],
  ['useBooleanFlagValue', shape('value', 'boolean')],
  ['useStringFlagValue', shape('value', 'string')],
  ['useNumberFlagValue', shape('value', 'number')],
  ['useObjectFlagValue', shape('value', 'any')],
  ['useBooleanFlagDetails', shape('details', 'boolean')],
  ['useStringFlagDetails', shape('details', 'string')],
  ['useNumberFlagDetails', shape('details', 'number')],
  ['useObjectFlagDetails', shape('details', 'any')],
  ['useFlag', shape('details', 'any')],
  ['useSuspenseFlag', shape('details', 'any')],
]);

/** A project's own function that reads a flag (`.vexil/code-refs.yaml`, `wrappers`). */
export interface Wrapper {
  name: string;
  keyArgument: number;
}

/** A call that reads the flag, and the name it was called by. */
export interface Read {
  call: NodePath<t.CallExpression | t.OptionalCallExpression>;
  name: string;
  shape: ReadShape;
}

function calleeName(callee: t.Node): string | null {
  if (callee.type === 'Identifier') return callee.name;
  if (
    (callee.type === 'MemberExpression' || callee.type === 'OptionalMemberExpression') &&
    !callee.computed &&
    callee.property.type === 'Identifier'
  )
    return callee.property.name;
  return null;
}

/**
 * The read whose key argument `site` (a key literal or a use of a constant holding it) is, or
 * null when the key is something else there (an argument of another function, a JSX attribute…).
 */
export function readAt(site: NodePath, wrappers: readonly Wrapper[]): Read | null {
  const parent = site.parentPath;
  if (!parent || site.listKey !== 'arguments') return null;
  if (!parent.isCallExpression() && !parent.isOptionalCallExpression()) return null;
  const name = calleeName(parent.node.callee);
  if (name === null) return null;
  const wrapper = wrappers.find((candidate) => candidate.name === name);
  const found: ReadShape | undefined = wrapper
    ? { answer: 'value', type: 'any', keyArgument: wrapper.keyArgument }
    : READS.get(name);
  if (!found || site.key !== found.keyArgument) return null;
  return { call: parent, name, shape: found };
}

/** What a read becomes: the expression to replace by the value, or a destructuring of it. */
export type ReadTarget =
  | { replace: NodePath<t.Expression> }
  | { destructure: NodePath<t.VariableDeclarator>; name: string }
  | { refused: string };

/**
 * Where the read's value is in the code: the call (or the `await` of it); for the details forms
 * the `.value` read of the answer, or `const { value: name } = …`. Anything else done with the
 * details (their `reason`, passing them on) is refused.
 */
export function readTarget(read: Read): ReadTarget {
  let base: NodePath = read.call;
  if (base.parentPath?.isAwaitExpression()) base = base.parentPath;
  if (read.shape.answer === 'value') return { replace: base as NodePath<t.Expression> };
  const parent = base.parentPath;
  if (
    parent &&
    (parent.isMemberExpression() || parent.isOptionalMemberExpression()) &&
    base.key === 'object' &&
    !parent.node.computed &&
    parent.node.property.type === 'Identifier' &&
    parent.node.property.name === 'value'
  )
    return { replace: parent as NodePath<t.Expression> };
  if (parent?.isVariableDeclarator() && base.key === 'init') {
    const id = parent.node.id;
    const [property, ...others] = id.type === 'ObjectPattern' ? id.properties : [];
    if (
      others.length === 0 &&
      property?.type === 'ObjectProperty' &&
      !property.computed &&
      property.key.type === 'Identifier' &&
      property.key.name === 'value' &&
      property.value.type === 'Identifier'
    )
      return { destructure: parent, name: property.value.name };
  }
  return { refused: `${read.name}() details are used beyond their .value` };
}

/** Null when `value` is what the read returns, else why not (a String flag read as a boolean). */
export function typeMismatch(read: Read, value: FlagValue): string | null {
  const expected = read.shape.type;
  if (expected === 'any' || typeof value === expected) return null;
  return `${read.name}() reads a ${expected}, but the flag serves ${JSON.stringify(value)}`;
}
