import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** One reading of the guard's statistic. */
export interface StatisticSample {
  atMs: number;
  statistic: number;
}

/** "1M", "10K": a likelihood ratio's axis spans many powers of ten. */
const compact = new Intl.NumberFormat(undefined, { notation: 'compact' });
const STATISTIC_COLOUR = '#2f80ed';
const THRESHOLD_COLOUR = '#d64545';

/**
 * The guard's statistic (the mixture likelihood ratio, design record 046) over time against its
 * threshold, on a logarithmic axis (uPlot, loaded with a guarded plan only).
 * The canvas is hidden from screen readers: the figures beside it say the same in words.
 */
export default function GuardChart(props: { samples: StatisticSample[]; threshold: number }) {
  const { samples, threshold } = props;
  const target = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = target.current;
    if (!element) return;
    const data: uPlot.AlignedData = [
      samples.map((sample) => sample.atMs / 1000),
      samples.map((sample) => sample.statistic),
      samples.map(() => threshold),
    ];
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: 180,
        legend: { show: false },
        // The statistic is a likelihood ratio: it grows by factors, so its axis is logarithmic.
        scales: {
          // The readings' own span (seconds apart while the page is open): with one reading,
          // uPlot's automatic range would pad a single time by years.
          x: {
            time: true,
            range: (_self, min, max) =>
              max - min < 60 ? [min - 5, Math.max(max, min + 55)] : [min, max],
          },
          y: {
            // uPlot's Distr is an ambient const enum, which isolatedModules cannot read: 3 is
            // Logarithmic.
            // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment
            distr: 3,
            log: 10,
            // From below 1 (no evidence) to a little above the larger of the threshold and the
            // highest reading: a decade of headroom made 16 million read as 100 million.
            range: (_self, min, max) => [Math.min(0.5, min), Math.max(threshold, max) * 2],
          },
        },
        axes: [
          { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.2)' } },
          {
            stroke: 'currentColor',
            size: 64,
            // Powers of ten only: the minor ticks of a log axis would grey the whole plot.
            filter: (_self, splits) =>
              splits.map((v) => (Number.isInteger(Math.log10(v)) ? v : null)),
            grid: {
              stroke: 'rgba(127,127,127,0.2)',
              filter: (_self, splits) =>
                splits.map((v) => (Number.isInteger(Math.log10(v)) ? v : null)),
            },
            ticks: {
              filter: (_self, splits) =>
                splits.map((v) => (Number.isInteger(Math.log10(v)) ? v : null)),
            },
            values: (_self, splits) =>
              splits.map((v) => (Number.isInteger(Math.log10(v)) ? compact.format(v) : null)),
          },
        ],
        series: [
          {},
          { label: 'Statistic', stroke: STATISTIC_COLOUR, width: 2, points: { show: true } },
          {
            label: 'Threshold',
            stroke: THRESHOLD_COLOUR,
            width: 1,
            dash: [6, 4],
            points: { show: false },
          },
        ],
      },
      data,
      element,
    );
    const resize = new ResizeObserver(() =>
      chart.setSize({ width: Math.max(320, element.clientWidth), height: 180 }),
    );
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [samples, threshold]);

  return (
    <div className="guard-chart">
      <div ref={target} aria-hidden="true" className="usage-chart" />
      <p className="hint chart-key" aria-hidden="true">
        <span className="swatch" style={{ background: STATISTIC_COLOUR }} /> statistic{' '}
        <span className="swatch" style={{ background: THRESHOLD_COLOUR }} /> threshold
      </p>
    </div>
  );
}
