import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { core, metrics, resources } from '@opentelemetry/sdk-node';
import type {
  MetricObjectWithValues,
  MetricValue,
  MetricValueWithName,
  Registry,
} from 'prom-client';

type PromMetric = MetricObjectWithValues<MetricValue<string>>;
type MetricData = metrics.MetricData;

/**
 * The Prometheus registries of this process's nodes (ops/routes.ts), read at each OTLP export.
 * A registry is added when its node starts and removed when it closes; while telemetry is off
 * nobody reads them.
 */
const registries = new Set<Registry>();

/**
 * Exports `registry`'s metrics over OTLP too, while metrics are exported at all (design record
 * 055): Prometheus stays the metrics' home, the collector gets the same series.
 * @returns the function that stops exporting it (call it when its node closes)
 */
export function exportOverOtlp(registry: Registry): () => void {
  registries.add(registry);
  return () => registries.delete(registry);
}

/**
 * An OpenTelemetry metric producer over the registries given to {@link exportOverOtlp}: counters
 * become monotonic cumulative sums, gauges gauges and histograms explicit-bucket histograms, each
 * series with its labels as attributes, starting when this producer was made (the process's start,
 * as Prometheus counters do). Summaries, which Vexil does not define, are left out.
 */
export class PrometheusProducer implements metrics.MetricProducer {
  private readonly startTime: HrTime = core.millisToHrTime(Date.now());

  async collect(): Promise<metrics.CollectionResult> {
    const endTime = core.millisToHrTime(Date.now());
    const read = await Promise.all([...registries].map((registry) => registry.getMetricsAsJSON()));
    const converted = read
      .flat()
      .map((metric) => toMetricData(metric, this.startTime, endTime))
      .filter((metric): metric is MetricData => metric !== null);
    return {
      // The reader merges these scopes into the meter provider's own resource.
      resourceMetrics: {
        resource: resources.emptyResource(),
        scopeMetrics: [{ scope: { name: 'vexil' }, metrics: converted }],
      },
      errors: [],
    };
  }
}

function toMetricData(metric: PromMetric, startTime: HrTime, endTime: HrTime): MetricData | null {
  const descriptor = {
    name: metric.name,
    description: metric.help,
    unit: metric.name.endsWith('_seconds') ? 's' : metric.name.endsWith('_bytes') ? 'By' : '',
    valueType: ValueType.DOUBLE,
  };
  const temporality = metrics.AggregationTemporality.CUMULATIVE;
  const point = <T>(attributes: Attributes, value: T) => ({
    startTime,
    endTime,
    attributes,
    value,
  });
  switch (String(metric.type)) {
    case 'counter':
      return {
        descriptor,
        aggregationTemporality: temporality,
        dataPointType: metrics.DataPointType.SUM,
        isMonotonic: true,
        dataPoints: metric.values.map((v) => point(v.labels, v.value)),
      };
    case 'gauge':
      return {
        descriptor,
        aggregationTemporality: temporality,
        dataPointType: metrics.DataPointType.GAUGE,
        dataPoints: metric.values.map((v) => point(v.labels, v.value)),
      };
    case 'histogram':
      return {
        descriptor,
        aggregationTemporality: temporality,
        dataPointType: metrics.DataPointType.HISTOGRAM,
        dataPoints: histogramPoints(metric).map(({ attributes, value }) =>
          point(attributes, value),
        ),
      };
    default:
      return null;
  }
}

/** One series of a histogram as Prometheus holds it: cumulative buckets, a sum and a count. */
interface Series {
  attributes: Attributes;
  buckets: Map<number, number>;
  sum: number;
  count: number;
}

/**
 * Regroups a Prometheus histogram's `_bucket`, `_sum` and `_count` values by series and turns its
 * cumulative `le` buckets into OTLP's per-bucket counts (the `+Inf` bucket is the last count).
 */
function histogramPoints(
  metric: PromMetric,
): { attributes: Attributes; value: metrics.Histogram }[] {
  const series = new Map<string, Series>();
  // A histogram's values name the series they belong to (`_bucket`, `_sum`, `_count`).
  for (const { labels, value, metricName } of metric.values as MetricValueWithName<string>[]) {
    const { le, ...attributes } = labels;
    const id = JSON.stringify(Object.entries(attributes).sort());
    let entry = series.get(id);
    if (!entry) {
      entry = { attributes, buckets: new Map(), sum: 0, count: 0 };
      series.set(id, entry);
    }
    if (metricName?.endsWith('_sum')) entry.sum = value;
    else if (metricName?.endsWith('_count')) entry.count = value;
    else if (le !== undefined) entry.buckets.set(le === '+Inf' ? Infinity : Number(le), value);
  }
  return [...series.values()].map(({ attributes, buckets, sum, count }) => {
    const bounds = [...buckets.keys()].sort((a, b) => a - b);
    const cumulative = bounds.map((bound) => buckets.get(bound) ?? 0);
    if (bounds.at(-1) !== Infinity) cumulative.push(count);
    const counts = cumulative.map((total, index) => total - (cumulative[index - 1] ?? 0));
    return {
      attributes,
      value: {
        buckets: { boundaries: bounds.filter((bound) => bound !== Infinity), counts },
        sum,
        count,
      },
    };
  });
}
