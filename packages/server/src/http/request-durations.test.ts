import type { FastifyReply, FastifyRequest } from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurations } from './request-durations.js';

/** Records one response of `elapsedMs` with `status` through `observe`. */
function respond(
  observe: ReturnType<RequestDurations['observer']>,
  method: string,
  status: number,
  elapsedMs: number,
): void {
  let done = false;
  observe(
    { method } as FastifyRequest,
    { statusCode: status, elapsedTime: elapsedMs } as FastifyReply,
    () => (done = true),
  );
  expect(done).toBe(true);
}

describe('request durations', () => {
  it('renders a Prometheus histogram through prom-client: cumulative buckets, sum and count', async () => {
    const durations = new RequestDurations();
    const registry = new Registry();
    registry.registerMetric(durations.asMetric());
    const evaluate = durations.observer('POST', '/v1/sdk/evaluate');
    respond(evaluate, 'POST', 200, 0.5); // exactly on the first bound: counted in it
    respond(evaluate, 'POST', 200, 3); // 0.003 s
    respond(evaluate, 'POST', 200, 4000); // above every bound
    respond(evaluate, 'POST', 404, 1);
    const text = await registry.metrics();
    const series = 'method="POST",route="/v1/sdk/evaluate",status="200"';
    expect(text).toContain('# TYPE vexil_http_request_duration_seconds histogram');
    expect(text).toContain(`vexil_http_request_duration_seconds_bucket{le="0.0005",${series}} 1`);
    expect(text).toContain(`vexil_http_request_duration_seconds_bucket{le="0.0025",${series}} 1`);
    expect(text).toContain(`vexil_http_request_duration_seconds_bucket{le="0.005",${series}} 2`);
    expect(text).toContain(`vexil_http_request_duration_seconds_bucket{le="2.5",${series}} 2`);
    expect(text).toContain(`vexil_http_request_duration_seconds_bucket{le="+Inf",${series}} 3`);
    expect(text).toContain(`vexil_http_request_duration_seconds_sum{${series}} 4.0035`);
    expect(text).toContain(`vexil_http_request_duration_seconds_count{${series}} 3`);
    expect(text).toContain(
      'vexil_http_request_duration_seconds_count{method="POST",route="/v1/sdk/evaluate",status="404"} 1',
    );
  });

  it("labels a route without one method by each request's method; reset forgets the counts", async () => {
    const durations = new RequestDurations();
    const registry = new Registry();
    registry.registerMetric(durations.asMetric());
    const unmatched = durations.observer(null, 'unmatched');
    respond(unmatched, 'GET', 404, 1);
    respond(unmatched, 'DELETE', 404, 1);
    respond(unmatched, 'GET', 404, 1);
    const count = (method: string) =>
      `vexil_http_request_duration_seconds_count{method="${method}",route="unmatched",status="404"}`;
    let text = await registry.metrics();
    expect(text).toContain(`${count('GET')} 2`);
    expect(text).toContain(`${count('DELETE')} 1`);
    registry.resetMetrics();
    text = await registry.metrics();
    expect(text).toContain(`${count('GET')} 0`);
  });
});
