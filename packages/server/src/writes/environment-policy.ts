import { ApiError } from '../errors.js';
import type { DocumentChangeRequestPolicy, ProjectDocument } from './document.js';
import { completeEnvironment } from './document-defaults.js';
import { documentEnvironment, type ProjectState } from './project-state.js';

/** An environment's change-request policy as its columns store it (design record 042). */
export function storedPolicy(policy: DocumentChangeRequestPolicy) {
  return {
    change_requests_required: policy.required ? 1 : 0,
    change_request_approvals: policy.approvals ?? 1,
    change_request_emergency_off: (policy.emergencyOff ?? true) ? 1 : 0,
  };
}

/**
 * The paths of the environments whose change-request policy `document` would change in `state`
 * (a new environment counts when the document gives it a policy that requires requests).
 */
function policyChangePaths(document: ProjectDocument, state: ProjectState): string[] {
  return document.environments.flatMap((input, index) => {
    if (!input.changeRequests) return [];
    const existing = state.environments.find((e) => e.key === input.key);
    const before = existing
      ? documentEnvironment(existing).changeRequests
      : completeEnvironment({ key: input.key }).changeRequests;
    const after = completeEnvironment(input).changeRequests;
    return JSON.stringify(before) === JSON.stringify(after)
      ? []
      : [`environments[${index}].changeRequests`];
  });
}

/**
 * Refuses a document that changes an environment's change-request policy unless `allowed` (an
 * Admin, or the operator's CLI), as `PATCH …/environments/{env}` does.
 * @throws ApiError 403 `forbidden` naming each such environment in `fields`
 */
export function checkPolicyChanges(
  document: ProjectDocument,
  state: ProjectState,
  allowed: boolean,
): void {
  if (allowed) return;
  const paths = policyChangePaths(document, state);
  if (paths.length === 0) return;
  throw new ApiError(
    'forbidden',
    'Only an Admin sets the change-request policy of an environment; leave `changeRequests` as it is, or ask an Admin to apply.',
    {
      fields: Object.fromEntries(
        paths.map((path) => [path, ['changes the change-request policy']]),
      ),
    },
  );
}
