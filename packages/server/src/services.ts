import type { Kysely } from 'kysely';
import type { AttemptCounter } from './auth/attempts.js';
import type { Clock } from './clock.js';
import type { IdentityProviders } from './auth/oidc.js';
import type { Config } from './config.js';
import type { Dialect } from './db/database.js';
import type { Schema } from './db/schema.js';
import type { EventHub } from './events/hub.js';
import type { Mailer } from './mail/mailer.js';
import type { UsageAggregator } from './usage/aggregator.js';
import type { SigningSecretVault } from './webhooks/secrets-at-rest.js';

/** What route modules and workers are given: passed explicitly, never looked up. */
export interface Services {
  db: Kysely<Schema>;
  dialect: Dialect;
  config: Config;
  clock: Clock;
  /** Where mutations publish their events and configuration changes (design record 018). */
  events: EventHub;
  /** Told, after commit, that webhook deliveries were queued (the delivery worker wakes). */
  onDeliveriesQueued: () => void;
  /** Told, after commit, that an SDK key (by hash) was revoked. */
  onSdkKeyRevoked: (keyHash: string) => void;
  /** In-memory evaluation and custom-event counts, flushed in batches (design record 008). */
  usage: UsageAggregator;
  /** Seals and opens webhook signing secrets, which are stored sealed (design record 015). */
  signingSecrets: SigningSecretVault;
  /** Requests to SSO connections' identity providers, through the SSRF guard (record 032). */
  identityProviders: IdentityProviders;
  /** Sends e-mails when `VEXIL_SMTP_URL` is set; otherwise null (design records 022, 034). */
  mailer: Mailer | null;
  /** Password attempts and reset mails, counted per address and IP (design record 034). */
  attempts: AttemptCounter;
}

/** What the evaluation API uses of a node's services: no database, which a relay has none of. */
export type EvaluationServices = Pick<Services, 'config' | 'clock' | 'usage'>;
