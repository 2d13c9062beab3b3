import { performance } from 'node:perf_hooks';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { LogEvent } from 'kysely';

/**
 * A Kysely `log` function that records each query as a client span under the active span
 * (design record 055): `db.system.name`, `db.operation.name` and the parameterized text (values
 * are bound separately, so none reaches the span). Kysely calls it once the query has finished,
 * so the span is written after the fact with the query's measured duration. Queries outside a
 * recording span (background polling) get none, and without OpenTelemetry nothing records.
 */
export function databaseSpans(system: 'postgresql' | 'sqlite'): (event: LogEvent) => void {
  return (event) => {
    const parent = trace.getSpan(context.active());
    if (!parent?.isRecording()) return;
    const endTime = performance.timeOrigin + performance.now();
    const text = event.query.sql;
    const operation = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';
    const span = trace.getTracer('@vexil/server').startSpan(
      `${operation} ${system}`,
      {
        kind: SpanKind.CLIENT,
        startTime: endTime - event.queryDurationMillis,
        attributes: {
          'db.system.name': system,
          'db.operation.name': operation,
          'db.query.text': text.length > 2_000 ? `${text.slice(0, 2_000)}…` : text,
        },
      },
      context.active(),
    );
    if (event.level === 'error') {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', (event.error as Error | undefined)?.name ?? 'Error');
    }
    span.end(endTime);
  };
}
