import type { Static } from 'typebox';
import { ApiError } from '../../http/errors.js';
import type { Services } from '../../services.js';
import type { FlagRow } from '../flags/queries.js';
import { FieldProblems } from './conditions.js';
import type { RuleParams, RuleRow } from './rule-schemas.js';

/**
 * Resolves `{rule}` (an id) among the rules of the flag in the environment.
 * @throws ApiError 404 with the list request as the next action.
 */
export async function requireRule(
  services: Services,
  params: Static<typeof RuleParams>,
  flagId: string,
  envId: string,
): Promise<RuleRow> {
  const rule = await services.db
    .selectFrom('rules')
    .selectAll()
    .where('flag_id', '=', flagId)
    .where('environment_id', '=', envId)
    .where('id', '=', params.rule)
    .executeTakeFirst();
  if (rule) return rule;
  throw new ApiError('not_found', `Rule "${params.rule}" was not found.`, {
    nextActions: [
      {
        method: 'GET',
        path: `/api/v1/orgs/${params.org}/projects/${params.project}/flags/${params.flag}/environments/${params.env}/rules`,
      },
    ],
  });
}

/**
 * Checks what a rule points at: its variation must belong to the flag and its segment to the
 * project. @throws ApiError 400 `validation_failed` on `variationId` or `userSegmentId`.
 */
export async function checkReferences(
  services: Services,
  flag: FlagRow,
  variationId: string,
  segmentId: string | null,
): Promise<void> {
  const problems = new FieldProblems();
  const variation = await services.db
    .selectFrom('variations')
    .select('id')
    .where('flag_id', '=', flag.id)
    .where('id', '=', variationId)
    .executeTakeFirst();
  if (!variation) problems.add('variationId', 'is not a variation of this flag');
  if (segmentId !== null) {
    const segment = await services.db
      .selectFrom('segments')
      .select('id')
      .where('project_id', '=', flag.project_id)
      .where('id', '=', segmentId)
      .executeTakeFirst();
    if (!segment) problems.add('userSegmentId', 'is not a segment of this project');
  }
  problems.throwIfAny();
}

/** Reads a rule back after a change (spec: endpoint rule 3). */
export async function readRule(services: Services, id: string): Promise<RuleRow> {
  return services.db.selectFrom('rules').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
