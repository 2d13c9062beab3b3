import { Type } from 'typebox';
import type { App } from '../../http/app-instance.js';
import { ApiError, invalidField } from '../../errors.js';
import type { Services } from '../../services.js';
import { lastEvaluatedByEnvironment, readFlagUsage } from '../../usage/queries.js';
import { mutateAs } from '../../api/access.js';
import { actionsFor, ActionsSchema } from '../../api/actions.js';
import { Timestamp, Uuid } from '../../api/fields.js';
import { DEFAULT_PAGE_SIZE, PageQuery, pagedSchema } from '../../api/pagination.js';
import { setFlagArchived } from './queries.js';
import { findRemovalCandidates } from './removal-candidates.js';
import { scopedRoutes } from '../../api/scope.js';
import { refuseWhileReferenced, withCodeReferences } from '../code-refs/lifecycle.js';

const ProjectParams = Type.Object({ org: Type.String(), project: Type.String() });
const FlagParams = Type.Object({ org: Type.String(), project: Type.String(), flag: Type.String() });
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** The usage read's range when `from` is omitted. */
const DEFAULT_USAGE_RANGE_MS = 7 * DAY_MS;

const UsageResponse = Type.Object({
  flagKey: Type.String(),
  from: Timestamp,
  to: Timestamp,
  environments: Type.Array(
    Type.Object({
      environmentId: Uuid,
      environmentKey: Type.String(),
      total: Type.Integer(),
      variations: Type.Array(Type.Object({ variation: Type.String(), count: Type.Integer() })),
      lastEvaluatedAt: Type.Union([Timestamp, Type.Null()]),
    }),
  ),
  _actions: ActionsSchema,
});

const RemovalCandidateSchema = Type.Object({
  key: Type.String(),
  reason: Type.String(),
  treatment: Type.Boolean(),
  status: Type.Enum(['Stale', 'Dead']),
  /** References on default branches; null: no repository scanned (flag-cleanup contract §2). */
  codeReferences: Type.Union([Type.Integer(), Type.Null()]),
});

/** `7 days`, `36 hours`: how configuration periods read in messages. */
function describePeriod(ms: number): string {
  if (ms % DAY_MS === 0) return `${ms / DAY_MS} day${ms === DAY_MS ? '' : 's'}`;
  return `${Math.round((ms / HOUR_MS) * 10) / 10} hours`;
}

function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** The project's environments (id and key) in display order. */
function projectEnvironments(services: Services, projectId: string) {
  return services.db
    .selectFrom('environments')
    .select(['id', 'key'])
    .where('project_id', '=', projectId)
    .orderBy('sort_order')
    .orderBy('key')
    .execute();
}

/**
 * Flag lifecycle (spec: Flag archival, endpoint rules 7–9; design record 008): usage read,
 * archive with its recent-evaluation guard, restore, expiry removal and removal candidates.
 */
export function registerLifecycleRoutes(app: App, services: Services): void {
  const route = scopedRoutes(app, services);
  route.get(
    '/orgs/:org/projects/:project/flags/removal-candidates',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: ProjectParams,
        querystring: Type.Intersect([
          PageQuery,
          Type.Object({
            staleness: Type.Optional(Type.String({ maxLength: 20 })),
            references: Type.Optional(Type.Enum(['none', 'some'])),
          }),
        ]),
        response: { 200: pagedSchema(RemovalCandidateSchema) },
      },
    },
    async ({ project, ...access }, request) => {
      const { staleness, references, limit = DEFAULT_PAGE_SIZE, cursor } = request.query;
      // Spec rule 9: omitted or unrecognised values mean `dead`.
      const candidates = await findRemovalCandidates(
        services,
        project.id,
        staleness?.toLowerCase() === 'stale' ? 'stale' : 'dead',
      );
      const all = await withCodeReferences(services, project.id, candidates, references);
      let after = '';
      if (cursor) {
        after = Buffer.from(cursor, 'base64url').toString('utf8');
        if (after === '' || encodeCursor(after) !== cursor)
          throw invalidField('cursor', 'is not a cursor returned by this endpoint');
      }
      const remaining = all.filter((candidate) => candidate.key > after);
      const items = remaining.slice(0, limit);
      return {
        items,
        next_cursor:
          remaining.length > limit ? encodeCursor(items[items.length - 1]?.key ?? '') : null,
        _actions: actionsFor(access.role, { archive: { role: 'Member' } }),
      };
    },
  );

  route.get(
    '/orgs/:org/projects/:project/flags/:flag/usage',
    'Viewer',
    {
      schema: {
        tags: ['flags'],
        params: FlagParams,
        querystring: Type.Object({
          from: Type.Optional(Timestamp),
          to: Type.Optional(Timestamp),
        }),
        response: { 200: UsageResponse },
      },
    },
    async ({ project, flag, ...access }, request) => {
      const toMs = request.query.to ? Date.parse(request.query.to) : services.clock.now().getTime();
      const fromMs = request.query.from
        ? Date.parse(request.query.from)
        : toMs - DEFAULT_USAGE_RANGE_MS;
      if (fromMs > toMs) throw invalidField('from', 'must not be later than to');
      const environments = await projectEnvironments(services, project.id);
      const usage = await readFlagUsage(
        services,
        flag,
        environments.map((env) => env.id),
        { fromMs, toMs },
      );
      return {
        flagKey: flag.key,
        from: new Date(fromMs).toISOString(),
        to: new Date(toMs).toISOString(),
        environments: environments.map((env) => {
          const entry = usage.get(env.id);
          const variations = [...(entry?.counts ?? [])]
            .map(([variation, count]) => ({ variation, count }))
            .sort((a, b) => (a.variation < b.variation ? -1 : 1));
          return {
            environmentId: env.id,
            environmentKey: env.key,
            total: variations.reduce((sum, v) => sum + v.count, 0),
            variations,
            lastEvaluatedAt:
              entry?.lastEvaluatedMs != null ? new Date(entry.lastEvaluatedMs).toISOString() : null,
          };
        }),
        _actions: actionsFor(access.role, {
          archive: {
            role: 'Member',
            blockedBy: flag.is_archived === 1 ? 'the flag is already archived' : null,
          },
        }),
      };
    },
  );

  route.post(
    '/orgs/:org/projects/:project/flags/:flag/archive',
    'Member',
    {
      schema: {
        tags: ['flags'],
        params: FlagParams,
        querystring: Type.Object({ force: Type.Optional(Type.Boolean({ default: false })) }),
      },
    },
    async ({ project, flag, ...access }, request, reply) => {
      if (flag.is_archived === 1) return reply.status(204).send();
      if (!request.query.force) await refuseWhileReferenced(services, { project, flag, ...access });
      if (!request.query.force) {
        const { archiveGuardWindowMs } = services.config.lifecycle;
        const environments = await projectEnvironments(services, project.id);
        const last = await lastEvaluatedByEnvironment(
          services,
          flag,
          environments.map((env) => env.id),
        );
        const since = services.clock.now().getTime() - archiveGuardWindowMs;
        const recent = environments
          .filter((env) => (last.get(env.id) ?? -Infinity) >= since)
          .map((env) => env.key);
        if (recent.length > 0) {
          throw new ApiError(
            'FLAG_RECENTLY_EVALUATED',
            `Flag "${flag.key}" was evaluated within the last ${describePeriod(archiveGuardWindowMs)} in: ${recent.join(', ')}. Remove it from code first, or pass force=true to archive anyway.`,
            {
              fields: { environments: recent },
              nextActions: [
                {
                  method: 'POST',
                  path: `/api/v1/orgs/${access.org.slug}/projects/${project.key}/flags/${flag.key}/archive?force=true`,
                },
              ],
            },
          );
        }
      }
      await mutateAs(services, access, (m) =>
        setFlagArchived(m, project, flag, true, request.query.force ? ' (forced)' : ''),
      );
      return reply.status(204).send();
    },
  );

  route.post(
    '/orgs/:org/projects/:project/flags/:flag/restore',
    'Member',
    { schema: { tags: ['flags'], params: FlagParams } },
    async ({ project, flag, ...access }, _request, reply) => {
      if (flag.is_archived === 0) return reply.status(204).send();
      await mutateAs(services, access, (m) => setFlagArchived(m, project, flag, false));
      return reply.status(204).send();
    },
  );

  route.delete(
    '/orgs/:org/projects/:project/flags/:flag/expiry',
    'Member',
    { schema: { tags: ['flags'], params: FlagParams } },
    async ({ project, flag, ...access }, _request, reply) => {
      // Spec rule 7: always allowed, whatever the flag-expiration feature's setting.
      if (flag.expires_at === null) return reply.status(204).send();
      await mutateAs(services, access, async (m) => {
        await m.trx
          .updateTable('flags')
          .set({ expires_at: null, updated_at: m.now })
          .where('id', '=', flag.id)
          .execute();
        // Expiry never changes evaluation, so no environment is touched.
        await m.emit({
          type: 'flag.updated',
          project,
          entity: { type: 'flag', id: flag.id, key: flag.key },
          changes: [{ property: 'ExpiresAtUtc', from: flag.expires_at, to: null }],
          description: `Expiry of flag "${flag.key}" removed`,
        });
      });
      return reply.status(204).send();
    },
  );
}
