import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Aggregator, Metric } from 'prom-client';

/** Upper bounds of the buckets, in seconds. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

type Labels = { method: string; route: string; status: string };

/** One label set's observations: per-bucket counts (the last is above every bound) and the sum. */
interface Series {
  labels: Labels;
  counts: number[];
  sumSeconds: number;
}

/** One sample line, as prom-client's registry reads it. */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/** An onResponse hook that records the request's duration. */
export type DurationObserver = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

/**
 * The `vexil_http_request_duration_seconds` histogram (design record 010), by route pattern,
 * method and status. prom-client's `observe` builds and hashes a label string for every
 * observation, which cost server evaluate 11–20% of its throughput (design record 016). Here each
 * route's hook keeps its series by status and an observation is an array increment; prom-client
 * still renders the histogram, through the metric interface its registry reads at scrape time.
 */
export class RequestDurations {
  readonly name = 'vexil_http_request_duration_seconds';
  readonly help = 'HTTP request duration by route, method and status';
  readonly type = 'histogram';
  /** Under `--workers`, the node's histogram is the sum of the workers' (design record 029). */
  readonly aggregator: Aggregator = 'sum';
  private readonly series: Series[] = [];

  /**
   * Records the requests of one route and method: `record(status, seconds)`. With the method
   * fixed, the status alone finds the series, which needs no string building.
   */
  recorder(method: string, route: string): (status: number, seconds: number) => void {
    const byStatus = new Map<number, Series>();
    return (status, seconds) => {
      let series = byStatus.get(status);
      if (series === undefined) {
        series = {
          labels: { method, route, status: String(status) },
          counts: new Array<number>(BUCKETS.length + 1).fill(0),
          sumSeconds: 0,
        };
        byStatus.set(status, series);
        this.series.push(series);
      }
      let bucket = 0;
      for (const bound of BUCKETS) {
        if (seconds <= bound) break;
        bucket++;
      }
      series.counts[bucket] = (series.counts[bucket] ?? 0) + 1;
      series.sumSeconds += seconds;
    };
  }

  /**
   * The onResponse hook of one route.
   * @param method the route's method, or null (several methods, or none known): the request's
   */
  observer(method: string | null, route: string): DurationObserver {
    const byMethod = new Map<string, (status: number, seconds: number) => void>();
    const recorderOf = (requestMethod: string) => {
      let record = byMethod.get(requestMethod);
      if (record === undefined) {
        record = this.recorder(requestMethod, route);
        byMethod.set(requestMethod, record);
      }
      return record;
    };
    const fixed = method === null ? null : recorderOf(method);
    return (request, reply, done) => {
      (fixed ?? recorderOf(request.method))(reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
  }

  /** The samples, as prom-client's registry reads them from a histogram. */
  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: Aggregator;
    values: Sample[];
  }> {
    const values: Sample[] = [];
    for (const { labels, counts, sumSeconds } of this.series) {
      let cumulative = 0;
      counts.forEach((count, bucket) => {
        cumulative += count;
        const le = BUCKETS[bucket] ?? '+Inf';
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le, ...labels },
          value: cumulative,
        });
      });
      values.push({ metricName: `${this.name}_sum`, labels, value: sumSeconds });
      values.push({ metricName: `${this.name}_count`, labels, value: cumulative });
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }

  /** Forgets every observation (prom-client's `registry.resetMetrics()`). */
  reset(): void {
    for (const series of this.series) {
      series.counts.fill(0);
      series.sumSeconds = 0;
    }
  }

  /**
   * This histogram as prom-client's registry takes it. The registry reads `name`, `get()` and
   * `reset()`, which this class has; its typings only list prom-client's own metric classes.
   */
  asMetric(): Metric {
    return this as unknown as Metric;
  }
}
