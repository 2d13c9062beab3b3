import { evaluateFlag } from '@vexil/engine';
import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import type { SnapshotStore } from '../../evaluation/snapshots.js';
import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import { scopedRoutes } from '../../api/scope.js';

const EvaluationContextSchema = Type.Object(
  {
    userId: Type.Optional(Type.String({ maxLength: 1024 })),
    attributes: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

/** What the playground shows: the SDK's answer plus the rule that matched. */
const ExplanationResponse = Type.Object({
  key: Type.String(),
  variation: Type.Union([Type.String(), Type.Null()]),
  value: Type.Unknown(),
  reason: Type.String(),
  /** The targeting rule that matched (reason `TARGETING_MATCH`), else null. */
  ruleId: Type.Union([Type.String(), Type.Null()]),
  /** The prerequisite that failed (reason `PREREQUISITE_FAILED`), else null. */
  prerequisiteKey: Type.Union([Type.String(), Type.Null()]),
  errorCode: Type.Union([Type.String(), Type.Null()]),
});

/**
 * `POST …/flags/{flag}/environments/{env}/evaluate` (Viewer): "what would this context get, and
 * why" (console.md journey 4; design record 023). Evaluates with the engine against the same
 * snapshot the evaluation API serves, so the answer is the one `POST /v1/sdk/evaluate` gives,
 * plus the matching rule's id. It is a question, not a use: it counts no evaluation.
 *
 * @throws ApiError 400 `bad_request` for an archived flag (SDKs get FLAG_NOT_FOUND for it).
 */
export function registerPlaygroundRoutes(
  app: App,
  services: Services,
  snapshots: SnapshotStore,
): void {
  scopedRoutes(app, services).post(
    '/orgs/:org/projects/:project/flags/:flag/environments/:env/evaluate',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: Type.Object({
          org: Type.String(),
          project: Type.String(),
          flag: Type.String(),
          env: Type.String(),
        }),
        body: Type.Object({ context: EvaluationContextSchema }, { additionalProperties: false }),
        response: { 200: ExplanationResponse },
      },
    },
    async ({ flag, environment }, request) => {
      const snapshot = await snapshots.get(environment.id);
      const result = snapshot && evaluateFlag(snapshot.compiled, flag.key, request.body.context);
      if (!result || result.errorCode === 'FLAG_NOT_FOUND')
        throw new ApiError(
          'bad_request',
          `Flag "${flag.key}" is archived: SDKs in "${environment.key}" get FLAG_NOT_FOUND for it.`,
        );
      return {
        key: result.key,
        variation: result.variation,
        value: result.value,
        reason: result.reason,
        ruleId: result.ruleId ?? null,
        prerequisiteKey: result.prerequisiteKey ?? null,
        errorCode: result.errorCode ?? null,
      };
    },
  );
}
