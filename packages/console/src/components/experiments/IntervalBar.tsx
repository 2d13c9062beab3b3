import type { Verdict } from '../../api/types';
import { percent } from './words';

const WIDTH = 180;
const HEIGHT = 22;
const PAD = 6;

/**
 * A relative difference's interval drawn as a bar against zero (experiments.md §4): the bar spans
 * the interval, the dot is the difference, the upright line is zero; every bar of one metric
 * shares the scale `extent` (± the largest bound). Green when better, red when worse. The
 * picture's text alternative says the same numbers.
 */
export function IntervalBar(props: {
  interval: [number, number];
  difference: number | null | undefined;
  extent: number;
  verdict: Verdict | null | undefined;
  confidence: number;
}) {
  const { interval, difference, extent, verdict } = props;
  const x = (value: number) =>
    PAD +
    ((Math.max(-extent, Math.min(extent, value)) + extent) / (2 * extent)) * (WIDTH - 2 * PAD);
  const colour =
    verdict === 'better'
      ? 'var(--green-9)'
      : verdict === 'worse'
        ? 'var(--red-9)'
        : 'var(--gray-9)';
  const words =
    `${(props.confidence * 100).toLocaleString()}% interval of the relative difference: from ` +
    `${percent(interval[0], true)} to ${percent(interval[1], true)}` +
    (difference === null || difference === undefined
      ? ''
      : `, difference ${percent(difference, true)}`) +
    `; zero is ${interval[0] > 0 ? 'below' : interval[1] < 0 ? 'above' : 'inside'} it.`;
  return (
    <svg
      width={WIDTH}
      height={HEIGHT}
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={words}
      className="interval-bar"
    >
      <title>{words}</title>
      <line
        x1={PAD}
        x2={WIDTH - PAD}
        y1={HEIGHT / 2}
        y2={HEIGHT / 2}
        stroke="currentColor"
        strokeOpacity={0.25}
      />
      <rect
        x={x(interval[0])}
        y={HEIGHT / 2 - 4}
        width={Math.max(2, x(interval[1]) - x(interval[0]))}
        height={8}
        rx={3}
        fill={colour}
        fillOpacity={0.55}
      />
      {difference !== null && difference !== undefined && (
        <circle cx={x(difference)} cy={HEIGHT / 2} r={4} fill={colour} />
      )}
      <line x1={x(0)} x2={x(0)} y1={2} y2={HEIGHT - 2} stroke="currentColor" strokeWidth={1.5} />
    </svg>
  );
}
