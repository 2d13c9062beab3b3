import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { WebhookDeliveriesTable } from '../db/schema.js';
import type { AttemptOutcome } from './sender.js';
import { traceHeaders } from '../telemetry/spans.js';

/** The delivery an attempt belongs to, as its span describes it. */
export interface AttemptSubject {
  delivery: Pick<WebhookDeliveriesTable, 'id' | 'subscription_id' | 'attempt_count'>;
  /** The event's type, e.g. `flag.toggled`. */
  eventType: string;
  /** The subscription's URL; only its host and port are recorded (a path may hold a secret). */
  url: string;
}

/**
 * Runs one webhook attempt inside a client span `webhook.attempt <event type>`: event type,
 * attempt number (1 for the first), delivery and subscription ids, the receiver's host and port,
 * and the response status (or the transport error). `send` receives the span's `traceparent`
 * header, which the request carries so that the receiver can continue the trace.
 */
export async function traceAttempt(
  subject: AttemptSubject,
  send: (headers: Record<string, string>) => Promise<AttemptOutcome>,
): Promise<AttemptOutcome> {
  const target = new URL(subject.url);
  const defaultPort = target.protocol === 'https:' ? 443 : 80;
  return trace.getTracer('@vexil/server').startActiveSpan(
    `webhook.attempt ${subject.eventType}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'vexil.webhook.event_type': subject.eventType,
        'vexil.webhook.attempt': subject.delivery.attempt_count + 1,
        'vexil.webhook.delivery_id': subject.delivery.id,
        'vexil.webhook.subscription_id': subject.delivery.subscription_id,
        'http.request.method': 'POST',
        'server.address': target.hostname,
        'server.port': target.port === '' ? defaultPort : Number(target.port),
      },
    },
    async (span) => {
      const outcome = await send(traceHeaders());
      if (outcome.statusCode !== null)
        span.setAttribute('http.response.status_code', outcome.statusCode);
      if (outcome.statusCode === null || outcome.statusCode < 200 || outcome.statusCode >= 300) {
        span.setAttribute(
          'error.type',
          outcome.statusCode === null ? 'transport' : String(outcome.statusCode),
        );
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: outcome.error ?? `HTTP ${outcome.statusCode}`,
        });
      }
      span.end();
      return outcome;
    },
  );
}
