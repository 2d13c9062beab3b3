/**
 * @vexil/openfeature-provider: an OpenFeature server provider backed by `@vexil/node`, which
 * evaluates Vexil flags locally. See docs/sdks.md.
 */
export { VexilProvider } from './vexil-provider.js';
export type { VexilProviderOptions } from './vexil-provider.js';
export { EvaluationEventsHook } from './evaluation-events-hook.js';
export type { EvaluationEventsHookOptions } from './evaluation-events-hook.js';
export type { ActiveSpanSource, EventSpan } from '@vexil/node';
