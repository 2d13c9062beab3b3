import { useQuery } from '@tanstack/react-query';
import { Tabs } from 'radix-ui';
import { api, unwrap } from '../../api/client';
import type { Environment, Flag, FlagEnvironment } from '../../api/types';
import { PendingChangesPanel } from '../change-requests/PendingChangesPanel';
import { usePendingChanges } from '../change-requests/pending';
import { useToReview } from '../change-requests/queries';
import { Fallthrough } from './Fallthrough';
import { Playground } from './Playground';
import { Prerequisites } from './Prerequisites';
import { Rules } from './Rules';
import {
  collectingWrites,
  TargetingWritesContext,
  useDirectWrites,
  type TargetingWrites,
} from './writes';
import { useSegments } from '../../api/segments';
import { queryKeys } from '../../api/query-keys';

/**
 * A flag's targeting, one tab per environment: default serve, rules and the playground. The
 * shown environment is the page's (it lives in the address); choosing a tab calls `onEnvironment`.
 */
export function Targeting(props: {
  org: string;
  project: string;
  flag: Flag;
  environments: Environment[];
  configurations: FlagEnvironment[];
  environment: string;
  onEnvironment: (environment: string) => void;
}) {
  const { environments } = props;
  return (
    <Tabs.Root value={props.environment} onValueChange={props.onEnvironment} className="targeting">
      <Tabs.List aria-label="Targeting by environment" className="tabs">
        {environments.map((environment) => (
          <Tabs.Trigger key={environment.id} value={environment.key ?? environment.id}>
            {environment.name ?? environment.key}
          </Tabs.Trigger>
        ))}
      </Tabs.List>
      {environments.map((environment) => {
        const configuration = props.configurations.find((c) => c.environmentId === environment.id);
        return (
          <Tabs.Content key={environment.id} value={environment.key ?? environment.id}>
            {configuration && (
              <EnvironmentTargeting
                org={props.org}
                project={props.project}
                flag={props.flag}
                environment={environment}
                configuration={configuration}
              />
            )}
          </Tabs.Content>
        );
      })}
    </Tabs.Root>
  );
}

function EnvironmentTargeting(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: Environment;
  configuration: FlagEnvironment;
}) {
  const { org, project, flag, configuration } = props;
  const env = props.environment.key ?? props.environment.id;
  const flagKey = flag.key ?? flag.id;
  const rules = useQuery({
    queryKey: queryKeys.flagRules(org, project, flagKey, env),
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules', {
          params: { path: { org, project, flag: flagKey, env } },
        }),
      ),
  });
  const segments = useSegments(org, project);
  const protectedHere = props.environment.changeRequests.required;
  // Whether the caller may propose: the navigation's count query says it already.
  const proposals = useToReview(org, project);
  const { pending, record, discard } = usePendingChanges({
    org,
    project,
    flag: flagKey,
    environment: env,
  });
  const direct = useDirectWrites({ org, project, flag: flagKey, env });
  const storedRules = rules.data?.items ?? [];
  const stored = {
    baseRevision: configuration.revision,
    settings: configuration,
    rules: storedRules,
  };
  const mayPropose = proposals.data?._actions['create']?.allowed ?? false;
  const writes: TargetingWrites = protectedHere
    ? collectingWrites(stored, mayPropose, record)
    : direct;
  const shown = pending ?? stored;
  const ruleList = shown.rules;
  const segmentList = segments.data?.items ?? [];
  const shownConfiguration = { ...configuration, ...shown.settings };
  const shared = { org, project, flag, environment: env };
  // Forms keep their drafts as local state: after a discard they start again from what is shown.
  const version = pending ? pending.edits.length : 0;
  return (
    <TargetingWritesContext.Provider value={writes}>
      <div className="environment-targeting">
        {protectedHere && rules.data && (
          <PendingChangesPanel
            org={org}
            project={project}
            flag={flag}
            environment={props.environment}
            stored={stored}
            pending={pending}
            segments={segmentList}
            mayPropose={mayPropose}
            onDiscard={discard}
          />
        )}
        <Fallthrough
          key={`fallthrough-${version}`}
          flag={flag}
          environment={env}
          configuration={shownConfiguration}
        />
        <Prerequisites
          key={`prerequisites-${version}`}
          {...shared}
          configuration={shownConfiguration}
        />
        <Rules
          flag={flag}
          environment={env}
          rules={ruleList}
          segments={segmentList}
          canEdit={
            protectedHere ? mayPropose : (configuration._actions['createRule']?.allowed ?? false)
          }
        />
        <Playground {...shared} rules={storedRules} segments={segmentList} />
      </div>
    </TargetingWritesContext.Provider>
  );
}
