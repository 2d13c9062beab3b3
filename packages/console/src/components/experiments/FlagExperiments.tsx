import { Button } from '@radix-ui/themes';
import { Tabs } from 'radix-ui';
import { useState } from 'react';
import { Link } from 'wouter';
import {
  experimentPagePath,
  useFlagExperiments,
  useMetrics,
  verdictWords,
  type ExperimentPlace,
} from '../../api/experiments';
import type { Environment, Flag, FlagEnvironment } from '../../api/types';
import { ExperimentForm } from './ExperimentForm';
import { variationName } from './words';

/**
 * A flag's experiments (experiments.md §2 and §4), one tab per environment like its release
 * plan: the experiments of the flag there, each linking to its results, and the form for a new one.
 */
export function FlagExperiments(props: {
  org: string;
  project: string;
  flag: Flag;
  environments: Environment[];
  configurations: FlagEnvironment[];
  environment: string;
  onEnvironment: (environment: string) => void;
}) {
  return (
    <section aria-labelledby="experiments-heading">
      <h2 id="experiments-heading">Experiments</h2>
      <p className="hint">
        Split the users no targeting rule catches between this flag&apos;s variations, and measure
        what each one does to the project&apos;s metrics.
      </p>
      <Tabs.Root value={props.environment} onValueChange={props.onEnvironment}>
        <Tabs.List aria-label="Experiments by environment" className="tabs">
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
                <EnvironmentExperiments
                  place={{
                    org: props.org,
                    project: props.project,
                    flag: props.flag.key ?? props.flag.id,
                    environment: key,
                  }}
                  flag={props.flag}
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

function EnvironmentExperiments(props: {
  place: ExperimentPlace;
  flag: Flag;
  configuration: FlagEnvironment | undefined;
}) {
  const { place, flag } = props;
  const experiments = useFlagExperiments(place);
  const metrics = useMetrics(place.org, place.project);
  const [drafting, setDrafting] = useState(false);
  if (experiments.isError) return <p role="alert">{experiments.error.message}</p>;
  if (!experiments.data) return <p role="status">Loading…</p>;
  const items = experiments.data.items;
  const canCreate = experiments.data._actions['create']?.allowed ?? false;
  const metricName = (key: string) =>
    metrics.data?.items.find((metric) => metric.key === key)?.name ?? key;
  return (
    <div className="experiments">
      {items.length === 0 ? (
        <p>No experiment of this flag in {place.environment} yet.</p>
      ) : (
        <table>
          <caption className="visually-hidden">
            Experiments of {flag.key} in {place.environment}
          </caption>
          <thead>
            <tr>
              <th scope="col">Experiment</th>
              <th scope="col">Status</th>
              <th scope="col">Primary metric</th>
              <th scope="col">Verdict</th>
            </tr>
          </thead>
          <tbody>
            {items.map((experiment) => (
              <tr key={experiment.id}>
                <th scope="row">
                  <Link href={experimentPagePath(place, experiment.key)}>{experiment.name}</Link>
                </th>
                <td>
                  <span className="badge">{experiment.status}</span>
                </td>
                <td>{metricName(experiment.primaryMetric)}</td>
                <td>
                  {experiment.status === 'draft'
                    ? 'not started'
                    : experiment.primaryVerdicts &&
                        Object.keys(experiment.primaryVerdicts).length > 0
                      ? Object.entries(experiment.primaryVerdicts)
                          .map(
                            ([variation, verdict]) =>
                              `${variationName(flag, variation)}: ${verdictWords(
                                verdict,
                                variationName(flag, experiment.controlVariation),
                              )}`,
                          )
                          .join('; ')
                      : 'no verdict yet'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canCreate &&
        (drafting ? (
          <ExperimentForm
            place={place}
            flag={flag}
            configuration={props.configuration}
            metrics={metrics.data?.items ?? []}
            onCancel={() => setDrafting(false)}
          />
        ) : (
          <Button type="button" onClick={() => setDrafting(true)}>
            New experiment
          </Button>
        ))}
    </div>
  );
}
