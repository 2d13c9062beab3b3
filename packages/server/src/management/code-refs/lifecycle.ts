import { ApiError } from '../../errors.js';
import type { Services } from '../../services.js';
import type { RemovalCandidate } from '../flags/removal-candidates.js';
import { countsOnDefaultBranches, placesReading } from './queries.js';

/** How many places `FLAG_STILL_REFERENCED` names (flag-cleanup contract, section 2). */
const PLACES_NAMED = 10;

/**
 * Refuses to archive a flag that code on a repository's default branch still reads.
 * @throws ApiError 400 `FLAG_STILL_REFERENCED` naming the first 10 places (`fields.places`),
 *   with the forced archive as its next action
 */
export async function refuseWhileReferenced(
  services: Services,
  scope: { org: { slug: string }; project: { id: string; key: string }; flag: { key: string } },
): Promise<void> {
  const { org, project, flag } = scope;
  const places = await placesReading(services, project.id, flag.key, PLACES_NAMED);
  if (places.length === 0) return;
  throw new ApiError(
    'FLAG_STILL_REFERENCED',
    `Flag "${flag.key}" is still read by code: ${places.join(', ')}. Remove it from code first (vexil cleanup --flag ${flag.key}), or pass force=true to archive anyway.`,
    {
      fields: { places },
      nextActions: [
        {
          method: 'POST',
          path: `/api/v1/orgs/${org.slug}/projects/${project.key}/flags/${flag.key}/archive?force=true`,
        },
      ],
    },
  );
}

/**
 * Removal candidates with their references on default branches (`codeReferences`, null when
 * no repository was scanned), narrowed by `references`: `none` keeps those safe to archive
 * (no references left, which needs a scan), `some` those still read by code.
 */
export async function withCodeReferences(
  services: Services,
  projectId: string,
  candidates: RemovalCandidate[],
  references: 'none' | 'some' | undefined,
): Promise<(RemovalCandidate & { codeReferences: number | null })[]> {
  const counts = await countsOnDefaultBranches(
    services,
    projectId,
    candidates.map((candidate) => candidate.key),
  );
  return candidates
    .map((candidate) => ({
      ...candidate,
      codeReferences: counts && (counts.get(candidate.key) ?? 0),
    }))
    .filter(
      ({ codeReferences }) =>
        references === undefined ||
        (references === 'none' ? codeReferences === 0 : (codeReferences ?? 0) > 0),
    );
}
