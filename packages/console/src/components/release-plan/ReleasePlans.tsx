import { useQuery } from '@tanstack/react-query';
import { Callout } from '@radix-ui/themes';
import { Tabs } from 'radix-ui';
import { useState } from 'react';
import { api, ApiProblem, unwrap } from '../../api/client';
import type { Environment, Flag, FlagEnvironment } from '../../api/types';
import { useToReview } from '../change-requests/queries';
import { PlanEditor } from './PlanEditor';
import { PlanState } from './PlanState';
import { queryKeys } from '../../api/query-keys';

/** How often a running plan is read again while the page is open, besides live updates (ms). */
const PLAN_POLL_MS = 5_000;

/**
 * A flag's release plans (change-requests.md §4–5), one tab per environment like its targeting:
 * the plan's live state, or the editor for a new one. The shown environment is the page's.
 */
export function ReleasePlans(props: {
  org: string;
  project: string;
  flag: Flag;
  environments: Environment[];
  configurations: FlagEnvironment[];
  environment: string;
  onEnvironment: (environment: string) => void;
}) {
  return (
    <section aria-labelledby="release-heading">
      <h2 id="release-heading">Release plan</h2>
      <p className="hint">
        Raise the share of a variation in steps on a schedule; a guard watches a metric and stops
        the release on a regression.
      </p>
      <Tabs.Root value={props.environment} onValueChange={props.onEnvironment}>
        <Tabs.List aria-label="Release plan by environment" className="tabs">
          {props.environments.map((environment) => (
            <Tabs.Trigger key={environment.id} value={environment.key ?? environment.id}>
              {environment.name ?? environment.key}
            </Tabs.Trigger>
          ))}
        </Tabs.List>
        {props.environments.map((environment) => {
          const key = environment.key ?? environment.id;
          return (
            <Tabs.Content key={environment.id} value={key}>
              {key === props.environment && (
                <EnvironmentReleasePlan
                  org={props.org}
                  project={props.project}
                  flag={props.flag}
                  environment={key}
                  reviewed={environment.changeRequests.required}
                  configuration={props.configurations.find(
                    (c) => c.environmentId === environment.id,
                  )}
                />
              )}
            </Tabs.Content>
          );
        })}
      </Tabs.Root>
    </section>
  );
}

function EnvironmentReleasePlan(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  reviewed: boolean;
  configuration: FlagEnvironment | undefined;
}) {
  const { org, project, flag, environment, configuration, reviewed } = props;
  const flagKey = flag.key ?? flag.id;
  const [drafting, setDrafting] = useState(false);
  const [warnings, setWarnings] = useState<string[]>([]);
  // Which environments have a plan: the plan is asked for only where there is one, so that an
  // environment without answers no 404 (issue 43).
  const plans = useQuery({
    queryKey: queryKeys.releasePlans(org, project, flagKey),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/release-plans', {
          params: { path: { org, project, flag: flagKey } },
        }),
      ),
  });
  const hasPlan = plans.data?.some((listed) => listed.environmentKey === environment) ?? false;
  const plan = useQuery({
    queryKey: queryKeys.releasePlan(org, project, flagKey, environment),
    enabled: hasPlan,
    refetchInterval: (query) => (query.state.data?.state === 'active' ? PLAN_POLL_MS : false),
    queryFn: async () => {
      try {
        return await unwrap(
          api.GET(
            '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan',
            { params: { path: { org, project, flag: flagKey, env: environment } } },
          ),
        );
      } catch (error) {
        // Deleted since the list was read.
        if (error instanceof ApiProblem && error.status === 404) return null;
        throw error;
      }
    },
  });
  // Whether the caller may propose: the navigation's count query says it already.
  const proposals = useToReview(org, project);
  const canEdit = reviewed
    ? (proposals.data?._actions['create']?.allowed ?? false)
    : (configuration?._actions['update']?.allowed ?? false);

  if (plans.isError) return <p role="alert">{plans.error.message}</p>;
  if (plan.isError) return <p role="alert">{plan.error.message}</p>;
  // Undefined while loading; null when this environment has no plan.
  const current = hasPlan ? plan.data : plans.data === undefined ? undefined : null;
  if (current === undefined) return <p role="status">Loading…</p>;
  const running = current?.state === 'active' || current?.state === 'paused';
  return (
    <div className="release-plan">
      {warnings.length > 0 && (
        <Callout.Root color="amber" role="status">
          {warnings.map((warning) => (
            <Callout.Text key={warning}>{warning}</Callout.Text>
          ))}
        </Callout.Root>
      )}
      {current && (
        <PlanState
          org={org}
          project={project}
          flag={flag}
          environment={environment}
          plan={current}
          onNewPlan={() => setDrafting(true)}
        />
      )}
      {!running &&
        (current === null || drafting) &&
        (canEdit ? (
          <PlanEditor
            org={org}
            project={project}
            flag={flag}
            environment={environment}
            reviewed={reviewed}
            configuration={configuration}
            onStarted={(started) => {
              setDrafting(false);
              setWarnings(started.warnings ?? []);
            }}
          />
        ) : (
          current === null && <p>No release plan in {environment}.</p>
        ))}
    </div>
  );
}
