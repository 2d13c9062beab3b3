/**
 * @vexil/openfeature-provider: an OpenFeature server provider backed by `@vexil/node`, which
 * evaluates Vexil flags locally. See docs/sdks.md.
 */
export { VexilProvider } from './vexil-provider.js';
export type { VexilProviderOptions } from './vexil-provider.js';
