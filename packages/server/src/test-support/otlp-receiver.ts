import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import root from 'otlp-proto-decoder/build/src/generated/root.js';

/** One received span, flattened: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  serviceName: unknown;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
}

/** One received metric, flattened: its kind and its data points' attributes and values. */
export interface ReceivedMetric {
  name: string;
  serviceName: unknown;
  kind: 'sum' | 'gauge' | 'histogram';
  /** A sum's or gauge's value, or a histogram's count, sum, bounds and per-bucket counts. */
  points: {
    attributes: Record<string, unknown>;
    value?: number;
    count?: number;
    sum?: number;
    explicitBounds?: number[];
    bucketCounts?: number[];
  }[];
}

interface OtlpPoint {
  attributes?: OtlpKeyValue[];
  asDouble?: number;
  asInt?: number | string;
  count?: number | string;
  sum?: number;
  explicitBounds?: number[];
  bucketCounts?: (number | string)[];
}

interface OtlpMetrics {
  resourceMetrics?: {
    resource?: { attributes?: OtlpKeyValue[] };
    scopeMetrics?: {
      metrics?: {
        name: string;
        sum?: { dataPoints?: OtlpPoint[] };
        gauge?: { dataPoints?: OtlpPoint[] };
        histogram?: { dataPoints?: OtlpPoint[] };
      }[];
    }[];
  }[];
}

interface OtlpKeyValue {
  key: string;
  value: Record<string, unknown>;
}

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind?: number;
  attributes?: OtlpKeyValue[];
  events?: { name: string; attributes?: OtlpKeyValue[] }[];
  status?: { code?: number; message?: string };
}

interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

/** The generated (static) message class of OpenTelemetry's proto definitions. */
interface StaticMessage {
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: Record<string, unknown>): unknown;
}
const { collector } = (
  root as unknown as {
    opentelemetry: {
      proto: {
        collector: {
          trace: { v1: { ExportTraceServiceRequest: StaticMessage } };
          metrics: { v1: { ExportMetricsServiceRequest: StaticMessage } };
        };
      };
    };
  }
).opentelemetry.proto;
const ExportTraceServiceRequest = collector.trace.v1.ExportTraceServiceRequest;
const ExportMetricsServiceRequest = collector.metrics.v1.ExportMetricsServiceRequest;

/** An attribute's value as JSON would have it (OTLP wraps each in a typed field). */
function plain(value: Record<string, unknown>): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  return value;
}

const attributesOf = (list: OtlpKeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]));

/** OTLP/HTTP ids: hex in JSON; bytes in protobuf, which `toObject` turns into base64. */
const hex = (id: string | undefined, encoding: 'hex' | 'base64') =>
  id ? (encoding === 'hex' ? id : Buffer.from(id, 'base64').toString('hex')) : '';

/**
 * A real OTLP/HTTP traces and metrics receiver on 127.0.0.1 (port 0), as a collector would run
 * one: it accepts `http/json` and `http/protobuf` (decoded with OpenTelemetry's own proto
 * definitions) on `/v1/traces` and `/v1/metrics`, and keeps every span and metric it got, with
 * the content types it was sent as.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly metrics: ReceivedMetric[] = [];
  readonly contentTypes = new Set<string>();
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const type = request.headers['content-type'] ?? '';
        receiver.contentTypes.add(type);
        const body = Buffer.concat(chunks);
        const json = type.startsWith('application/json');
        const decode = (message: StaticMessage): unknown =>
          json
            ? JSON.parse(body.toString('utf8'))
            : message.toObject(message.decode(body), {
                longs: Number,
                bytes: String,
                defaults: false,
              });
        if (request.url === '/v1/metrics')
          receiver.takeMetrics(decode(ExportMetricsServiceRequest) as OtlpMetrics);
        else
          receiver.take(decode(ExportTraceServiceRequest) as OtlpTraces, json ? 'hex' : 'base64');
        response.statusCode = 200;
        response.setHeader('content-type', json ? 'application/json' : 'application/x-protobuf');
        response.end(json ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The base address, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it. */
  endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private takeMetrics(metrics: OtlpMetrics): void {
    const number = (value: number | string | undefined) =>
      value === undefined ? undefined : Number(value);
    for (const resourceMetrics of metrics.resourceMetrics ?? []) {
      const resource = attributesOf(resourceMetrics.resource?.attributes);
      for (const scope of resourceMetrics.scopeMetrics ?? [])
        for (const metric of scope.metrics ?? []) {
          const kind = metric.sum ? 'sum' : metric.gauge ? 'gauge' : 'histogram';
          const data = metric.sum ?? metric.gauge ?? metric.histogram;
          this.metrics.push({
            name: metric.name,
            serviceName: resource['service.name'],
            kind,
            points: (data?.dataPoints ?? []).map((point) => ({
              attributes: attributesOf(point.attributes),
              value: number(point.asDouble ?? point.asInt),
              count: number(point.count),
              sum: point.sum,
              explicitBounds: point.explicitBounds,
              bucketCounts: point.bucketCounts?.map(Number),
            })),
          });
        }
    }
  }

  private take(traces: OtlpTraces, ids: 'hex' | 'base64'): void {
    for (const resourceSpans of traces.resourceSpans ?? []) {
      const resource = attributesOf(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          this.spans.push({
            name: span.name,
            traceId: hex(span.traceId, ids),
            spanId: hex(span.spanId, ids),
            parentSpanId: hex(span.parentSpanId, ids),
            kind: span.kind ?? 0,
            serviceName: resource['service.name'],
            attributes: attributesOf(span.attributes),
            events: (span.events ?? []).map((event) => ({
              name: event.name,
              attributes: attributesOf(event.attributes),
            })),
            status: span.status ?? {},
          });
    }
  }
}
