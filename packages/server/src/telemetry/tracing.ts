import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { context, propagation, trace, type Span } from '@opentelemetry/api';
import { core, metrics, NodeSDK, tracing } from '@opentelemetry/sdk-node';
import type { FastifyRequest } from 'fastify';
import type { TelemetrySettings } from '../config.js';
import { startEvaluationEvents, stopEvaluationEvents } from './evaluation-events.js';
import { PrometheusProducer } from './metrics.js';

/** OpenTelemetry as this process runs it; `shutdown` sends what is still buffered. */
export interface Telemetry {
  /** True when traces or metrics are exported (an OTLP endpoint is configured). */
  readonly exporting: boolean;
  /** Exports the spans ended so far and the metrics as they are, without waiting for the next batch. */
  flush(): Promise<void>;
  /** Exports what is left and stops; spans opened afterwards are no-ops. */
  shutdown(): Promise<void>;
}

/**
 * Paths without a request span: the evaluation and SDK APIs (the hot path; their evaluations
 * are reported as sampled `feature_flag.evaluation` events instead), OFREP, probes and metrics.
 */
const UNTRACED = /^\/(?:v1\/|ofrep\/|healthz|readyz|metrics)/;

/** Route parameters that name an organization, a project or an environment, as span attributes. */
const SCOPE_ATTRIBUTES: Record<string, string> = {
  org: 'vexil.org',
  project: 'vexil.project',
  env: 'vexil.environment',
};

/**
 * Names the request span by its route and adds the scope it works in. The path is kept without
 * its query string, so that nothing a client put there reaches the collector.
 */
function describeRequest(span: Span, request: FastifyRequest): void {
  const route = request.routeOptions.url;
  if (route) span.updateName(`${request.method} ${route}`);
  span.setAttribute('url.path', request.url.split('?', 1)[0] ?? request.url);
  const params = request.params as Record<string, unknown> | undefined;
  for (const [param, attribute] of Object.entries(SCOPE_ATTRIBUTES)) {
    const value = params?.[param];
    if (typeof value === 'string') span.setAttribute(attribute, value);
  }
}

/**
 * Starts OpenTelemetry for this process (design record 055) when `settings` name an endpoint:
 * the Node SDK with an OTLP/HTTP trace exporter (JSON or protobuf) and Fastify's own
 * instrumentation, which gives every Fastify instance created afterwards a span per request and
 * continues an incoming `traceparent`; and, where a metrics URL is set too, the nodes' Prometheus
 * metrics every `metricsIntervalMs` (telemetry/metrics.ts). The SDK reads
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER(_ARG)` and `OTEL_EXPORTER_OTLP_HEADERS` itself.
 * Without an endpoint nothing starts and every span Vexil opens is a no-op. Call it before the
 * node's Fastify instances are created.
 */
export function startTelemetry(settings: TelemetrySettings): Telemetry {
  if (settings.tracesUrl === null && settings.metricsUrl === null) {
    const nothing = () => Promise.resolve();
    return { exporting: false, flush: nothing, shutdown: nothing };
  }
  const json = settings.protocol === 'http/json';
  const spans =
    settings.tracesUrl === null
      ? null
      : new tracing.BatchSpanProcessor(
          json
            ? new JsonTraceExporter({ url: settings.tracesUrl })
            : new ProtobufTraceExporter({ url: settings.tracesUrl }),
        );
  const fastify = new FastifyOtelInstrumentation({
    registerOnInitialization: true,
    ignorePaths: (route) => UNTRACED.test(route.url),
    requestHook: describeRequest,
  });
  const metricReader =
    settings.metricsUrl === null
      ? null
      : new metrics.PeriodicExportingMetricReader({
          exporter: json
            ? new JsonMetricExporter({ url: settings.metricsUrl })
            : new ProtobufMetricExporter({ url: settings.metricsUrl }),
          exportIntervalMillis: settings.metricsIntervalMs,
          metricProducers: [new PrometheusProducer()],
        });
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    // All given, even when empty, so that the SDK adds no exporters of its own from the environment.
    spanProcessors: spans ? [spans] : [],
    metricReaders: metricReader ? [metricReader] : [],
    logRecordProcessors: [],
    // W3C Trace Context and Baggage, so that an incoming `traceparent` is continued.
    textMapPropagator: new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
    instrumentations: [fastify],
  });
  sdk.start();
  startEvaluationEvents(settings.evaluationSample);
  return {
    exporting: true,
    flush: async () => {
      await Promise.all([spans?.forceFlush(), metricReader?.forceFlush()]);
    },
    async shutdown() {
      stopEvaluationEvents();
      await sdk.shutdown();
      fastify.disable();
      // The SDK leaves its globals registered; a process that starts telemetry again needs them free.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
