import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { Flag } from '../../api/types';
import type { StatisticSample } from './GuardChart';
import { rateWords, verdictWords } from './figures';
import type { ReleaseGuard, ReleasePlan } from './types';
import { queryKeys } from '../../api/query-keys';

// uPlot loads with a guarded plan only.
const GuardChart = lazy(() => import('./GuardChart'));

/** How often a running plan's guard figures are read again (ms). */
const GUARD_POLL_MS = 5_000;
/** Readings kept for the chart. */
const MAX_SAMPLES = 720;

/**
 * The guard's figures (`GET …/release-plan/guard`, change-requests.md §5): per side the exposed
 * users, the users who sent the metric and the rate; the statistic against the threshold that
 * stops the release, in words and as a chart of the readings taken while the page is open.
 */
export function GuardPanel(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  plan: ReleasePlan;
  guard: ReleaseGuard;
  targetName: string;
}) {
  const { org, project, flag, environment, plan, guard, targetName } = props;
  const flagKey = flag.key ?? flag.id;
  const report = useQuery({
    queryKey: queryKeys.releasePlanGuard(org, project, flagKey, environment),
    refetchInterval: plan.state === 'active' ? GUARD_POLL_MS : false,
    queryFn: () =>
      unwrap(
        api.GET(
          '/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/release-plan/guard',
          { params: { path: { org, project, flag: flagKey, env: environment } } },
        ),
      ),
  });
  // A stopped plan's chart starts from the finding that stopped it.
  const [samples, setSamples] = useState<StatisticSample[]>(() =>
    plan.regression
      ? [{ atMs: Date.parse(plan.regression.detectedAt), statistic: plan.regression.statistic }]
      : [],
  );
  const statistic = report.data?.testing ? report.data.statistic : null;
  useEffect(() => {
    if (statistic === null || report.dataUpdatedAt === 0) return;
    setSamples((previous) =>
      [...previous, { atMs: report.dataUpdatedAt, statistic }].slice(-MAX_SAMPLES),
    );
  }, [statistic, report.dataUpdatedAt]);

  const data = report.data;
  const waiting = data && !data.testing;
  const better = guard.direction === 'lower_is_better' ? 'lower' : 'higher';
  return (
    <section className="guard" aria-labelledby={`guard-${environment}`}>
      <h4 id={`guard-${environment}`}>Guard: {guard.metric}</h4>
      <p className="hint">
        Rate of users who sent {guard.metric} after first getting the flag ({better} is better); on
        a regression at {guard.confidence * 100}% confidence the release is{' '}
        {guard.action === 'rollback' ? 'rolled back' : 'paused'}. The test starts once both sides
        have {guard.minimumUsers.toLocaleString()} users.
      </p>
      {report.error && <p role="alert">{report.error.message}</p>}
      {data && (
        <>
          <table className="guard-sides">
            <caption className="visually-hidden">Guard figures by side</caption>
            <thead>
              <tr>
                <th scope="col">Side</th>
                <th scope="col">Exposed users</th>
                <th scope="col">With {guard.metric}</th>
                <th scope="col">Rate</th>
              </tr>
            </thead>
            <tbody>
              {(
                [
                  [targetName, data.target],
                  ['The rest', data.rest],
                ] as const
              ).map(([name, side]) => (
                <tr key={name}>
                  <th scope="row">{name}</th>
                  <td>{side.exposedUsers.toLocaleString()}</td>
                  <td>{side.usersWithMetric.toLocaleString()}</td>
                  <td>{rateWords(side.rate)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p aria-live="polite">
            {waiting
              ? `Waiting for ${guard.minimumUsers.toLocaleString()} exposed users on each side.`
              : `${data.regressionDetected ? 'A regression: ' : ''}${verdictWords(data, guard, targetName)}`}
          </p>
          {samples.length > 0 && (
            <figure aria-label="The statistic against its threshold">
              <Suspense fallback={<p role="status">Loading chart…</p>}>
                <GuardChart samples={samples} threshold={data.threshold} />
              </Suspense>
              <figcaption className="hint">
                The statistic at each reading since this page opened ({spanWords(samples)}); the
                release stops where it reaches the threshold.
              </figcaption>
            </figure>
          )}
        </>
      )}
    </section>
  );
}

/** The time the readings span, in words: "one reading", "readings over 35 seconds". */
function spanWords(samples: readonly StatisticSample[]): string {
  const first = samples[0];
  const last = samples.at(-1);
  if (!first || !last || samples.length === 1) return 'one reading so far';
  const seconds = Math.round((last.atMs - first.atMs) / 1000);
  if (seconds < 120) return `${samples.length} readings over ${seconds} seconds`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${samples.length} readings over ${minutes} minutes`;
  return `${samples.length} readings over ${Math.round(minutes / 60)} hours`;
}
