import {
  context,
  propagation,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';

const tracer = () => trace.getTracer('@vexil/server');

/**
 * Runs `work` inside a span named `name` (a child of the active span, or a new trace), which
 * ends when it settles; a throw marks the span as an error and is rethrown. Without OpenTelemetry
 * started, the span is OpenTelemetry's no-op.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The active trace as W3C headers (`traceparent`, `tracestate`): none without OpenTelemetry. */
export function traceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}
