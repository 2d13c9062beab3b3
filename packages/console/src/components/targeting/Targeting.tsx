import { useQuery } from '@tanstack/react-query';
import { Tabs } from 'radix-ui';
import { api, unwrap } from '../../api/client';
import type { Environment, Flag, FlagEnvironment } from '../../api/types';
import { Fallthrough } from './Fallthrough';
import { Playground } from './Playground';
import { Prerequisites } from './Prerequisites';
import { Rules } from './Rules';

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
    queryKey: ['flag', org, project, flagKey, 'rules', env],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/rules', {
          params: { path: { org, project, flag: flagKey, env } },
        }),
      ),
  });
  const segments = useQuery({
    queryKey: ['segments', org, project],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/orgs/{org}/projects/{project}/segments', {
          params: { path: { org, project }, query: { limit: 200 } },
        }),
      ),
  });
  const ruleList = rules.data?.items ?? [];
  const segmentList = segments.data?.items ?? [];
  const shared = { org, project, flag, environment: env };
  return (
    <div className="environment-targeting">
      <Fallthrough {...shared} configuration={configuration} />
      <Prerequisites {...shared} configuration={configuration} />
      <Rules
        {...shared}
        rules={ruleList}
        segments={segmentList}
        canEdit={configuration._actions['createRule']?.allowed ?? false}
      />
      <Playground {...shared} rules={ruleList} segments={segmentList} />
    </div>
  );
}
