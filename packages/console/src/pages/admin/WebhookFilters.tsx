import { useQueries, useQuery } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { api, unwrap } from '../../api/client';
import { queryKeys } from '../../api/query-keys';

/** A subscription's filters as edited: each list empty means "all". */
export interface FilterDraft {
  eventTypes: string[];
  projectIds: string[];
  environmentIds: string[];
}

function toggled(list: string[], value: string, on: boolean): string[] {
  return on ? [...list, value] : list.filter((item) => item !== value);
}

/**
 * The filters of a webhook subscription: event types (from `GET /webhooks/event-types`),
 * projects and environments of the organization, as checkboxes. None ticked means all.
 */
export function WebhookFilters(props: {
  org: string;
  value: FilterDraft;
  onChange: (value: FilterDraft) => void;
  problemAt: (field: string) => string | undefined;
}) {
  const { org, value, onChange, problemAt } = props;
  const eventTypes = useQuery({
    queryKey: queryKeys.webhookEventTypes(org),
    refetchInterval: false,
    queryFn: () =>
      unwrap(api.GET('/api/v1/orgs/{org}/webhooks/event-types', { params: { path: { org } } })),
  });
  const projects = useQuery({
    queryKey: queryKeys.projects(org),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects', {
          params: { path: { org }, query: { limit: 200 } },
        }),
      ),
  });
  const projectList = projects.data?.items ?? [];
  const environments = useQueries({
    queries: projectList.map((project) => ({
      queryKey: queryKeys.environments(org, project.key),
      queryFn: () =>
        unwrap(
          api.GET('/api/v1/orgs/{org}/projects/{project}/environments', {
            params: { path: { org, project: project.key }, query: { limit: 200 } },
          }),
        ),
    })),
  });
  return (
    <>
      <fieldset className="choices">
        <legend>Event types (none ticked: every type)</legend>
        {groupByResource(eventTypes.data ?? []).map(([resource, types]) => (
          <EventTypeGroup
            key={resource}
            resource={resource}
            types={types}
            chosen={value.eventTypes}
            onChange={(eventTypes) => onChange({ ...value, eventTypes })}
          />
        ))}
        {problemAt('eventTypes') && <p className="field-error">{problemAt('eventTypes')}</p>}
      </fieldset>
      <fieldset className="choices">
        <legend>Projects (none ticked: every project)</legend>
        {projectList.map((project) => (
          <label key={project.id} className="check">
            <input
              type="checkbox"
              checked={value.projectIds.includes(project.id)}
              onChange={(event) =>
                onChange({
                  ...value,
                  projectIds: toggled(value.projectIds, project.id, event.target.checked),
                })
              }
            />
            Project {project.name}
          </label>
        ))}
        {problemAt('projectIds') && <p className="field-error">{problemAt('projectIds')}</p>}
      </fieldset>
      <fieldset className="choices">
        <legend>Environments (none ticked: every environment)</legend>
        <p className="hint">Narrows only events within one environment, such as a toggle.</p>
        {projectList.flatMap((project, index) =>
          (environments[index]?.data?.items ?? []).map((environment) => (
            <label key={environment.id} className="check">
              <input
                type="checkbox"
                checked={value.environmentIds.includes(environment.id)}
                onChange={(event) =>
                  onChange({
                    ...value,
                    environmentIds: toggled(
                      value.environmentIds,
                      environment.id,
                      event.target.checked,
                    ),
                  })
                }
              />
              {project.name} / {environment.name ?? environment.key}
            </label>
          )),
        )}
        {problemAt('environmentIds') && (
          <p className="field-error">{problemAt('environmentIds')}</p>
        )}
      </fieldset>
    </>
  );
}

/** Event types by the resource they concern (`flag.rule.created` → `flag`), in the API's order. */
function groupByResource(types: string[]): [string, string[]][] {
  const groups = new Map<string, string[]>();
  for (const type of types) {
    const resource = type.split('.')[0] ?? type;
    groups.set(resource, [...(groups.get(resource) ?? []), type]);
  }
  return [...groups];
}

/** Initialisms that a resource's name keeps in capitals ("SDK key", not "Sdk key"). */
const INITIALISMS = new Set(['sdk', 'api', 'sso', 'mcp', 'id']);

/** `sdk_key` → "SDK key", `change_request` → "Change request": a resource name as a heading. */
function resourceName(resource: string): string {
  const words = resource
    .split('_')
    .map((word) => (INITIALISMS.has(word) ? word.toUpperCase() : word))
    .join(' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * One resource's event types, with a box that ticks or clears them all (mixed while some are
 * ticked), so 35 types read as a handful of groups.
 */
function EventTypeGroup(props: {
  resource: string;
  types: string[];
  chosen: string[];
  onChange: (chosen: string[]) => void;
}) {
  const { resource, types, chosen, onChange } = props;
  const ticked = types.filter((type) => chosen.includes(type)).length;
  const all = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (all.current) all.current.indeterminate = ticked > 0 && ticked < types.length;
  }, [ticked, types.length]);
  const name = resourceName(resource);
  return (
    <fieldset className="choices event-group">
      <legend>{name} events</legend>
      <label className="check">
        <input
          ref={all}
          type="checkbox"
          checked={ticked === types.length}
          onChange={(event) =>
            onChange(
              event.target.checked
                ? [...chosen.filter((type) => !types.includes(type)), ...types]
                : chosen.filter((type) => !types.includes(type)),
            )
          }
        />
        Every {INITIALISMS.has(resource.split('_')[0] ?? '') ? name : name.toLowerCase()} event
      </label>
      {types.map((type) => (
        <label key={type} className="check">
          <input
            type="checkbox"
            checked={chosen.includes(type)}
            onChange={(event) => onChange(toggled(chosen, type, event.target.checked))}
          />
          {type}
        </label>
      ))}
    </fieldset>
  );
}
