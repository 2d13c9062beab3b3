import traverseModule from '@babel/traverse';

type Traverse = typeof traverseModule.default;

/**
 * `@babel/traverse`'s function. The package is CommonJS: imported from ESM, its function is the
 * module's `default` property.
 */
export const traverse: Traverse =
  (traverseModule as unknown as { default?: Traverse }).default ??
  (traverseModule as unknown as Traverse);
