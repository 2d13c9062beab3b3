import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** The reminder returned with a webhook signing secret, which is shown only once. */
export const SECRET_SHOWN_ONCE_WARNING =
  'Store this signing secret now: it is shown only once and cannot be retrieved again.';

/** A fresh signing secret: `whsec_` followed by base64 of 32 random bytes (spec: rule 11). */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The headers of one delivery attempt (spec: Headers and signature). The body is signed once
 * per active secret (Standard Webhooks `v1` HMAC-SHA256 over `{id}.{timestamp}.{body}`), and
 * the entries are joined with spaces so receivers holding either secret accept it during a
 * rotation.
 * @param eventId the event's id, the same on every retry (`webhook-id`)
 * @param sentAt this attempt's sending time; `webhook-timestamp` is its Unix seconds
 * @param body the exact request body text
 * @param secrets every active `whsec_…` secret of the subscription (at least one)
 */
export function deliveryHeaders(
  eventId: string,
  sentAt: Date,
  body: string,
  secrets: string[],
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Vexil-Webhooks/1',
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': secrets
      .map((secret) => new Webhook(secret).sign(eventId, sentAt, body))
      .join(' '),
  };
}
