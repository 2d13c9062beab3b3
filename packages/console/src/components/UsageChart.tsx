import { useEffect, useMemo, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useProjectUsage } from '../api/usage';
import type { Flag } from '../api/types';

/** The chart's span: a week of hours. */
const HOURS = 7 * 24;
/** Series colours, readable on the light and the dark theme. */
const COLOURS = ['#2f80ed', '#e2711d', '#27ae60', '#9b51e0', '#d64545', '#1b998b', '#b08800'];

/** A colour per variation, in the flag's order, so a variation keeps its colour across charts. */
function colourOf(flag: Flag, variation: string): string {
  const index = flag.variations.findIndex((v) => v.key === variation);
  return COLOURS[(index < 0 ? flag.variations.length : index) % COLOURS.length] ?? '#777';
}

/**
 * Evaluations per variation per hour over the last week, one chart per environment that
 * evaluated the flag (journey 4), all from one `GET …/usage?flag=…&interval=hour` (design record
 * 038, `useProjectUsage`). The canvas is hidden from screen
 * readers; the table under it says the same in numbers, for everyone.
 */
export default function UsageChart({
  org,
  project,
  flag,
}: {
  org: string;
  project: string;
  flag: Flag;
}) {
  const key = flag.key ?? flag.id;
  const usage = useProjectUsage(org, project, { interval: 'hour', buckets: HOURS, flag: key });
  const environments = usage.data?.flags[0]?.environments ?? [];
  return (
    <section aria-labelledby="usage-heading">
      <h2 id="usage-heading">Evaluations per variation</h2>
      {usage.error && <p role="alert">{usage.error.message}</p>}
      {usage.isSuccess && environments.length === 0 && <p>Not evaluated in the last 7 days.</p>}
      {usage.data &&
        environments.map((environment) => (
          <EnvironmentChart
            key={environment.environmentKey}
            flag={flag}
            environment={environment.environmentKey}
            buckets={usage.data.buckets}
            variations={environment.variations}
          />
        ))}
    </section>
  );
}

/** The fewest hours a chart spans, so that a flag created this hour still reads as a line. */
const MIN_HOURS = 6;
const HOUR_MS = 3_600_000;

function EnvironmentChart(props: {
  flag: Flag;
  environment: string;
  buckets: string[];
  variations: { variation: string; counts: number[] }[];
}) {
  const { flag, environment } = props;
  // A flag younger than the week is drawn from the hour it was created (at least the last
  // MIN_HOURS hours), not as a spike at the right edge of a week of nothing (issue 43).
  const created = Date.parse(flag.createdAt);
  const first = Math.min(
    Math.max(0, props.buckets.length - MIN_HOURS),
    Math.max(
      0,
      props.buckets.findIndex((bucket) => Date.parse(bucket) + HOUR_MS > created),
    ),
  );
  const young = first > 0;
  const buckets = useMemo(() => props.buckets.slice(first), [props.buckets, first]);
  const variations = useMemo(
    () => props.variations.map((v) => ({ ...v, counts: v.counts.slice(first) })),
    [props.variations, first],
  );
  const target = useRef<HTMLDivElement>(null);
  const captionId = `usage-${environment}`;

  useEffect(() => {
    const element = target.current;
    if (!element) return;
    const data: uPlot.AlignedData = [
      buckets.map((bucket) => Date.parse(bucket) / 1000),
      ...variations.map((v) => v.counts),
    ];
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: 200,
        legend: { show: false },
        scales: { y: { range: (_self, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.2)' } },
          { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.2)' } },
        ],
        series: [
          {},
          ...variations.map((v) => ({
            label: v.variation,
            stroke: colourOf(flag, v.variation),
            width: 2,
          })),
        ],
      },
      data,
      element,
    );
    const resize = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(320, element.clientWidth), height: 200 }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [flag, buckets, variations]);

  const busiest = (counts: number[]) => {
    const max = Math.max(...counts);
    return max > 0 ? new Date(buckets[counts.indexOf(max)] ?? 0) : null;
  };
  return (
    <figure className="usage" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        {environment}: evaluations per hour{' '}
        {young ? `since the flag was created (${buckets.length} hours)` : 'over the last 7 days'}
      </figcaption>
      <div ref={target} aria-hidden="true" className="usage-chart" />
      <table className="usage-summary">
        <caption className="visually-hidden">Evaluations in {environment} by variation</caption>
        <thead>
          <tr>
            <th scope="col">Variation</th>
            <th scope="col">Evaluations, 7 days</th>
            <th scope="col">Busiest hour</th>
          </tr>
        </thead>
        <tbody>
          {variations.map(({ variation, counts }) => {
            const peak = busiest(counts);
            return (
              <tr key={variation}>
                <th scope="row">
                  <span
                    className="swatch"
                    style={{ background: colourOf(flag, variation) }}
                    aria-hidden="true"
                  />{' '}
                  {variation}
                </th>
                <td>{counts.reduce((sum, n) => sum + n, 0).toLocaleString()}</td>
                <td>
                  {peak && (
                    <time dateTime={peak.toISOString()}>
                      {peak.toLocaleString([], {
                        weekday: 'short',
                        hour: '2-digit',
                        minute: '2-digit',
                      })}{' '}
                      ({Math.max(...counts).toLocaleString()})
                    </time>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </figure>
  );
}
