import type { RequestListener } from 'node:http';
import type { ValidateFunction } from 'ajv';
import type { TSchema } from 'typebox';
import { allowBrowserCalls } from '../evaluation/cors.js';
import { leanLane } from '../evaluation/lean-lane.js';
import { ofrepAnswers, ofrepLeanRoute, registerOfrepApi } from '../evaluation/ofrep.js';
import {
  EVALUATION_PREFIX,
  evaluationAnswers,
  leanRoutes,
  registerEvaluationApi,
  type EvaluationSource,
} from '../evaluation/routes.js';
import { SdkAuthenticator } from '../evaluation/sdk-authenticator.js';
import type { App } from '../http/app-instance.js';
import { BODY_LIMITS, limitBodies } from '../http/request-limits.js';
import type { RequestDurations } from '../http/request-durations.js';
import type { EvaluationServices } from '../services.js';

/** What the evaluation role needs from the node around it. */
export interface EvaluationRoleOptions {
  services: EvaluationServices;
  source: EvaluationSource;
  compileBody: (schema: TSchema) => ValidateFunction;
  durations: Pick<RequestDurations, 'recorder'>;
  /** False once shutdown has begun. */
  accepting: () => boolean;
  /** The node's Fastify listener, which the lean lane hands every other request to. */
  fallback: RequestListener;
  /** Routes under the evaluation prefix that only this kind of node serves (the relay feed). */
  extraRoutes?: (evaluation: App) => void;
}

/**
 * The evaluation role (spec: Evaluation API, OFREP): registers `/v1` and `/ofrep/v1` on `app`
 * and returns the node's request listener, the lean lane in front of Fastify (design record 030).
 */
export async function registerEvaluationRole(
  app: App,
  options: EvaluationRoleOptions,
): Promise<RequestListener> {
  const { services, source } = options;
  const sdk = new SdkAuthenticator(
    source.sdkKeys,
    source.snapshots,
    services.clock,
    services.usage,
  );
  const answers = evaluationAnswers(services, sdk);
  const ofrep = ofrepAnswers(services, sdk);
  await app.register(
    async (evaluation) => {
      limitBodies(evaluation, BODY_LIMITS.evaluation);
      // Evaluation bodies are JSON only: text/plain is a 415 naming application/json, not a string.
      evaluation.removeContentTypeParser('text/plain');
      await allowBrowserCalls(evaluation);
      registerEvaluationApi(evaluation, services, source.snapshots, sdk, source.streams, answers);
      options.extraRoutes?.(evaluation);
    },
    { prefix: EVALUATION_PREFIX },
  );
  await app.register(
    async (ofrepApi) => {
      limitBodies(ofrepApi, BODY_LIMITS.evaluation);
      await allowBrowserCalls(ofrepApi);
      registerOfrepApi(ofrepApi, ofrep);
    },
    { prefix: '/ofrep/v1' },
  );
  // The hot routes leave Fastify's request lifecycle (design record 030).
  return leanLane(
    [
      ...leanRoutes(answers, options.compileBody, options.durations),
      ofrepLeanRoute(ofrep, options.compileBody, options.durations),
    ],
    { bodyLimit: BODY_LIMITS.evaluation, accepting: options.accepting, log: app.log },
    options.fallback,
  );
}
