/**
 * @vexil/node: the Vexil server SDK for Node.js. Downloads an environment's configuration with a
 * server SDK key and evaluates flags locally with `@vexil/engine`, the engine the server uses, so
 * local answers agree with `/v1/sdk/evaluate`. See docs/sdks.md.
 */
export { createClient, VexilClient } from './client.js';
export { StreamRefusedError } from './configuration-stream.js';
export type {
  ClientConnection,
  ClientEvents,
  ClientStatus,
  DetailErrorCode,
  EvaluationDetail,
  VexilClientOptions,
} from './client.js';
export type { TrackEvent } from './event-reporter.js';
export type { ActiveSpanSource, EvaluationEventsOptions, EventSpan } from './evaluation-events.js';
export type { EvaluationContext, EvaluationReason, FlagMetadata } from '@vexil/engine';
