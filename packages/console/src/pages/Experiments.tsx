import { useState } from 'react';
import { Link } from 'wouter';
import {
  experimentPagePath,
  useMetrics,
  useProjectExperiments,
  verdictWords,
} from '../api/experiments';
import type { ExperimentItem, ExperimentStatus } from '../api/types';
import { Labelled } from '../components/Field';

/** The statuses the page filters by, in the order people look for them. */
const STATUSES: Record<ExperimentStatus, string> = {
  running: 'Running',
  draft: 'Draft',
  stopped: 'Stopped',
};

/**
 * A project's experiments (experiments.md §4): running, draft and stopped, filtered by status,
 * each with its flag, environment, primary metric and that metric's verdict per treatment in
 * words, linking to its results page. Experiments are created on a flag's page.
 */
export function Experiments({ org, project }: { org: string; project: string }) {
  const [status, setStatus] = useState<ExperimentStatus | ''>('');
  const experiments = useProjectExperiments(org, project, status || undefined);
  const metrics = useMetrics(org, project);
  const metricName = (key: string) =>
    metrics.data?.items.find((metric) => metric.key === key)?.name ?? key;
  const items = [...(experiments.data?.items ?? [])].sort(
    (a, b) => order(a.status) - order(b.status),
  );
  return (
    <>
      <div className="page-heading">
        <h1>Experiments</h1>
      </div>
      <p className="hint">
        An experiment splits the users no targeting rule catches between a flag&apos;s variations
        and measures what each one does to its metrics. Create one from a flag&apos;s Experiments
        section.
      </p>
      <Labelled label="Status">
        {(id) => (
          <select
            id={id}
            value={status}
            onChange={(event) => setStatus(event.target.value as ExperimentStatus | '')}
          >
            <option value="">All</option>
            {(Object.keys(STATUSES) as ExperimentStatus[]).map((value) => (
              <option key={value} value={value}>
                {STATUSES[value]}
              </option>
            ))}
          </select>
        )}
      </Labelled>
      {experiments.error && <p role="alert">{experiments.error.message}</p>}
      {experiments.isPending && <p role="status">Loading…</p>}
      <table>
        <caption className="visually-hidden">Experiments of the project</caption>
        <thead>
          <tr>
            <th scope="col">Experiment</th>
            <th scope="col">Status</th>
            <th scope="col">Flag</th>
            <th scope="col">Environment</th>
            <th scope="col">Primary metric</th>
            <th scope="col">Verdict</th>
          </tr>
        </thead>
        <tbody>
          {items.map((experiment) => (
            <tr key={experiment.id}>
              <th scope="row">
                <Link
                  href={experimentPagePath(
                    {
                      org,
                      project,
                      flag: experiment.flagKey,
                      environment: experiment.environmentKey,
                    },
                    experiment.key,
                  )}
                >
                  {experiment.name}
                </Link>
              </th>
              <td>
                <span className="badge">{STATUSES[experiment.status]}</span>
              </td>
              <td>
                <code>{experiment.flagKey}</code>
              </td>
              <td>{experiment.environmentKey}</td>
              <td>{metricName(experiment.primaryMetric)}</td>
              <td>{primaryVerdictWords(experiment)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {experiments.isSuccess && items.length === 0 && (
        <p>{status ? `No ${STATUSES[status].toLowerCase()} experiment.` : 'No experiment yet.'}</p>
      )}
    </>
  );
}

function order(status: ExperimentStatus): number {
  return Object.keys(STATUSES).indexOf(status);
}

/**
 * The primary metric's verdicts in words, one per treatment: "b: better than a"; before any
 * computation, what the experiment waits for.
 */
export function primaryVerdictWords(experiment: ExperimentItem): string {
  if (experiment.status === 'draft') return 'not started';
  const verdicts = experiment.primaryVerdicts;
  if (!verdicts || Object.keys(verdicts).length === 0) return 'no verdict yet';
  return Object.entries(verdicts)
    .map(
      ([variation, verdict]) =>
        `${variation}: ${verdictWords(verdict, experiment.controlVariation)}`,
    )
    .join('; ');
}
