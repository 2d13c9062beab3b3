import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { SeriesPoint } from '../../api/types';

/** A colour per treatment, in the order of the experiment's variations. */
export const TREATMENT_COLOURS = ['#2f80ed', '#9b51e0', '#f2994a', '#27ae60', '#eb5757'];

/**
 * The primary metric's relative difference against the control over time, one line per
 * treatment with its always-valid interval as a band (uPlot, loaded with the results page
 * only; modelled on the release plan's GuardChart). The canvas is hidden from screen readers:
 * the caption and the table beside it say the same in words.
 */
export default function DifferenceChart(props: {
  series: SeriesPoint[];
  treatments: { key: string; name: string }[];
}) {
  const { series, treatments } = props;
  const target = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = target.current;
    if (!element) return;
    const times = [...new Set(series.map((point) => Date.parse(point.at)))].sort((a, b) => a - b);
    const at = (variation: string, time: number) =>
      series.find((point) => point.variation === variation && Date.parse(point.at) === time);
    const columns: (number | null)[][] = [];
    const seriesOptions: uPlot.Series[] = [{}];
    const bands: uPlot.Band[] = [];
    treatments.forEach((treatment, index) => {
      const colour = TREATMENT_COLOURS[index % TREATMENT_COLOURS.length] ?? '#2f80ed';
      const first = columns.length + 1;
      columns.push(
        times.map((time) => at(treatment.key, time)?.relativeDifference ?? null),
        times.map((time) => at(treatment.key, time)?.confidenceInterval[0] ?? null),
        times.map((time) => at(treatment.key, time)?.confidenceInterval[1] ?? null),
      );
      seriesOptions.push(
        { label: treatment.name, stroke: colour, width: 2, points: { show: times.length < 40 } },
        {
          label: `${treatment.name} low`,
          stroke: colour,
          width: 1,
          dash: [4, 4],
          points: { show: false },
        },
        {
          label: `${treatment.name} high`,
          stroke: colour,
          width: 1,
          dash: [4, 4],
          points: { show: false },
        },
      );
      bands.push({ series: [first + 2, first + 1], fill: `${colour}26` });
    });
    const data = [times.map((time) => time / 1000), ...columns] as uPlot.AlignedData;
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: 200,
        legend: { show: false },
        scales: {
          // The computations' own span, at least a minute: with one computation, uPlot's
          // automatic range would pad a single time by years.
          x: {
            time: true,
            range: () => {
              const first = (times[0] ?? Date.now()) / 1000;
              const last = (times.at(-1) ?? Date.now()) / 1000;
              return last - first < 60 ? [first - 30, Math.max(last, first + 30)] : [first, last];
            },
          },
          y: {
            // Zero always in sight: the question is whether the band leaves it.
            range: (_self, min, max) => {
              const low = Math.min(0, min);
              const high = Math.max(0, max);
              const pad = Math.max(0.01, (high - low) * 0.1);
              return [low - pad, high + pad];
            },
          },
        },
        axes: [
          { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.2)' } },
          {
            stroke: 'currentColor',
            size: 64,
            grid: { stroke: 'rgba(127,127,127,0.2)' },
            values: (_self, splits) => splits.map((v) => `${Math.round(v * 1000) / 10}%`),
          },
        ],
        series: seriesOptions,
        bands,
        hooks: {
          // The zero line the intervals are read against.
          draw: [
            (self) => {
              const y = self.valToPos(0, 'y', true);
              const { ctx } = self;
              ctx.save();
              ctx.strokeStyle = 'rgba(127,127,127,0.8)';
              ctx.lineWidth = 1;
              ctx.beginPath();
              ctx.moveTo(self.bbox.left, y);
              ctx.lineTo(self.bbox.left + self.bbox.width, y);
              ctx.stroke();
              ctx.restore();
            },
          ],
        },
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
  }, [series, treatments]);

  return (
    <div className="guard-chart">
      <div ref={target} aria-hidden="true" className="usage-chart" />
      <p className="hint chart-key" aria-hidden="true">
        {treatments.map((treatment, index) => (
          <span key={treatment.key}>
            <span
              className="swatch"
              style={{ background: TREATMENT_COLOURS[index % TREATMENT_COLOURS.length] }}
            />{' '}
            {treatment.name} (band: interval){' '}
          </span>
        ))}
      </p>
    </div>
  );
}
