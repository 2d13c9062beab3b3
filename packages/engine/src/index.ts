/**
 * @vexil/engine: Vexil's pure flag evaluation engine. No I/O; shared by the server and by SDKs
 * that evaluate locally. Compile a configuration once, evaluate it many times.
 */
export { bucket, BUCKET_COUNT } from './bucketing.js';
export { compileEnvironment, compileLazily } from './compile.js';
export type { CompiledEnvironment, LazyConfiguration } from './compile.js';
export { validateCondition } from './conditions.js';
export { bucketingIdentity } from './context.js';
export { evaluationEventAttributes } from './evaluation-event.js';
export type { EvaluationEventAttributes, EvaluationEventSource } from './evaluation-event.js';
export type { ConditionInput } from './conditions.js';
export {
  evaluateAll,
  evaluateFlag,
  evaluateSelected,
  flagMetadata,
  hasRolloutFallthrough,
  isStaticFlag,
  selectFlags,
} from './evaluate.js';
export type { FlagSelection } from './evaluate.js';
export { attributesRead, readsKey } from './reads.js';
export { normalizeOperator, OPERATOR_WORDS } from './operators.js';
export { findPrerequisiteProblem, MAX_PREREQUISITE_DEPTH } from './prerequisites.js';
export type { PrerequisiteGraphFlag, PrerequisiteProblem } from './prerequisites.js';
export { CONDITION_OPERATORS } from './types.js';
export type * from './types.js';
