import type { Transaction } from 'kysely';
import { ApiError } from '../errors.js';
import type { Schema } from './schema.js';

/**
 * What a write does, declared where it touches what SDKs are served (`db/mutate.ts`), so that
 * one guard decides for every write path (design record 042; spec: change requests, section 1):
 * - `serves`, the default, so that a write added later is covered until declared otherwise:
 *   changes what an environment serves (on/off, variations served, rollouts, rules,
 *   prerequisites, segment definitions, variation values). Refused with 409
 *   `change_request_required` in an environment whose policy requires change requests, unless
 *   the mutation applies a change request.
 * - `describes`: creating, naming, describing, tagging, archiving or deleting; never refused.
 * - `emergencyOff`: turning a flag off; passes a policy that allows emergency off, and is then
 *   reported as a bypass. Turning on is never one.
 * - `releasePlan`: a release plan's own step, resume or rollback (design record 046). The plan was
 *   started directly where no change request is required, or by an applied change request: its
 *   steps advance without further approval, and a rollback returns to the reviewed state before
 *   it (spec: change requests, sections 4–5). Starting a plan is a `serves` write.
 */
export type WriteKind = 'serves' | 'describes' | 'emergencyOff' | 'releasePlan';

/**
 * Checks a write against the change-request policy of the environments it reaches: the given
 * environments, or every environment of a project (segments and variations are project-wide).
 * @param applyingChangeRequest true inside the apply of a change request, which passes
 * @returns true when the write passed a policy as an emergency off
 * @throws ApiError 409 `change_request_required` naming the environment, with the
 *   change-request call in `next_actions`
 */
export async function checkChangeRequestPolicy(
  trx: Transaction<Schema>,
  target: { environmentIds: string[] } | { projectId: string },
  write: WriteKind,
  applyingChangeRequest: boolean,
): Promise<boolean> {
  if (write === 'describes' || write === 'releasePlan' || applyingChangeRequest) return false;
  if ('environmentIds' in target && target.environmentIds.length === 0) return false;
  let query = trx
    .selectFrom('environments')
    .innerJoin('projects', 'projects.id', 'environments.project_id')
    .innerJoin('organizations', 'organizations.id', 'projects.organization_id')
    .select([
      'environments.key',
      'environments.change_request_emergency_off',
      'projects.key as projectKey',
      'organizations.slug as orgSlug',
    ])
    .where('environments.change_requests_required', '=', 1)
    .orderBy('environments.sort_order')
    .orderBy('environments.key');
  query =
    'projectId' in target
      ? query.where('environments.project_id', '=', target.projectId)
      : query.where('environments.id', 'in', target.environmentIds);
  const protectedEnvironments = await query.execute();
  const [first] = protectedEnvironments;
  if (!first) return false;
  if (
    write === 'emergencyOff' &&
    protectedEnvironments.every((environment) => environment.change_request_emergency_off === 1)
  )
    return true;
  const where =
    'projectId' in target
      ? `it applies project-wide, and environment "${first.key}" requires change requests`
      : `environment "${first.key}" requires change requests`;
  throw new ApiError(
    'change_request_required',
    `This change needs a change request: ${where}. Propose it with POST …/projects/${first.projectKey}/change-requests` +
      ` (environment "${first.key}"), and apply it once approved.`,
    {
      nextActions: [
        {
          method: 'POST',
          path: `/api/v1/orgs/${first.orgSlug}/projects/${first.projectKey}/change-requests`,
        },
      ],
    },
  );
}
