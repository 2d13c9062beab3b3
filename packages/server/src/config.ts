import { resolve } from 'node:path';

/**
 * Service configuration. This is the only module that reads `process.env`; everything else
 * receives a {@link Config}. Every variable is documented in the README's "Configuration" table.
 */
export interface Config {
  /** `postgres://…` selects PostgreSQL; anything else is a SQLite file path (or `:memory:`). */
  databaseUrl: string;
  host: string;
  port: number;
  /** Base address users reach the service at; used in `docs_url` and links. No trailing slash. */
  publicUrl: string;
  logLevel: string;
  /** Management API quota per caller per window. */
  rateLimit: { points: number; windowSeconds: number };
  /** `VEXIL_REDIS_URL`: when set, every node shares one rate-limit quota per caller in Redis. */
  redisUrl: string | null;
  /**
   * `VEXIL_SECRETS_KEY`: seals stored webhook signing secrets (design record 015); at least
   * {@link MIN_SECRETS_KEY_LENGTH} characters. Required on PostgreSQL; with SQLite, when unset, a
   * key is generated beside the database file.
   */
  secretsKey: string | null;
  /**
   * `VEXIL_SECRETS_KEY_PREVIOUS`: the secrets key before a rotation. Secrets it opens are sealed
   * again with {@link secretsKey} at start-up (design record 015).
   */
  previousSecretsKey: string | null;
  webhooks: {
    /** Delays before each retry, in milliseconds (spec: Limits, 6 attempts in total). */
    retryScheduleMs: number[];
    /** Per-attempt time-out in milliseconds. */
    timeoutMs: number;
    /** Development only: allow `http://` and private-network targets. */
    allowPrivateTargets: boolean;
    /**
     * How often the delivery worker looks for due retries, in milliseconds. New deliveries do not
     * wait for it: their commit wakes the worker (design record 005).
     */
    pollIntervalMs: number;
    /**
     * How long finished deliveries (and their attempts) stay in the delivery log after their last
     * attempt, in milliseconds. Their events stay: they are the audit log.
     */
    deliveryRetentionMs: number;
  };
  /** How often in-memory usage counts are written to the database, in milliseconds (design record 008). */
  usageFlushIntervalMs: number;
  /**
   * How long hourly usage counts are kept, in milliseconds; each flag's newest count in each
   * environment stays, for its "last evaluated" time (design record 008).
   */
  usageRetentionMs: number;
  /** `VEXIL_FLAG_EXPIRATION_ENABLED`: whether passed `expiresAtUtc` dates surface as expired flags. */
  flagExpirationEnabled: boolean;
  /** How often held snapshots are checked against the database's versions, in milliseconds (design record 010). */
  snapshotCheckIntervalMs: number;
  /**
   * `VEXIL_SNAPSHOT_CACHE_DIR`: where the node keeps last-known-good copies of the configurations
   * it serves, to serve them when started while the database is unreachable (design record 019).
   */
  snapshotCacheDir: string | null;
  /** `vexil relay` (design record 044): what the relay follows, and with which key. */
  relay: {
    /** `VEXIL_RELAY_UPSTREAM` (or `--upstream`): the upstream's base address, http(s). */
    upstreamUrl: string | null;
    /** `VEXIL_RELAY_KEY`: the relay key, `vxr_…`, created upstream by an Admin. */
    key: string | null;
  };
  /** How long SIGTERM may take before the process exits regardless, in milliseconds (design record 019). */
  shutdownTimeoutMs: number;
  /**
   * `VEXIL_WORKERS`: how many processes `vexil serve` runs behind its one port (design record
   * 029); `auto` is one per available core. 1 serves from a single process, without a primary.
   */
  workers: number | 'auto';
  /** Heartbeat interval of SDK streams, in milliseconds (design record 010, Streaming). */
  streamHeartbeatMs: number;
  /** Per-client-IP quota of `POST /v1/client/events` (spec: Authentication rule 6). */
  clientEventsRateLimit: { points: number; windowSeconds: number };
  /** People and sign-in (design record 022). */
  signIn: {
    /** `VEXIL_PASSWORD_SIGN_IN`: `false` switches password sign-in off for the whole instance. */
    passwordEnabled: boolean;
    /** `VEXIL_SESSION_IDLE_TIMEOUT`: a session unused this long ends (ms). */
    sessionIdleMs: number;
    /** `VEXIL_SESSION_LIFETIME`: a session ends this long after sign-in, used or not (ms). */
    sessionLifetimeMs: number;
    /** `VEXIL_INVITATION_LIFETIME`: how long an invitation link works (ms). */
    invitationLifetimeMs: number;
    /** `VEXIL_PASSWORD_RESET_LIFETIME`: how long a password reset link works (ms). */
    passwordResetLifetimeMs: number;
    /**
     * `VEXIL_SIGN_IN_RATE_LIMIT`: password attempts per e-mail address per window, counted before
     * the check (a correct one starts the address afresh), and as many reset mails; a client IP
     * gets ten times as many (design record 034).
     */
    attempts: { points: number; windowSeconds: number };
    /**
     * `VEXIL_SSO_ALLOW_PRIVATE_ISSUERS`: SSO issuers may be on loopback and private networks
     * (still https only); off, they must be public addresses, like webhook targets (record 032).
     */
    allowPrivateIssuers: boolean;
  };
  /**
   * `VEXIL_SMTP_URL` (`smtp://user:pass@host:587`, `smtps://…`): invitations are e-mailed when set,
   * and password reset links can be sent only then.
   */
  smtpUrl: string | null;
  /** `VEXIL_SMTP_FROM`: the sender of invitation and password reset e-mails. */
  smtpFrom: string;
  lifecycle: {
    /** Archiving without `force` is refused when the flag was evaluated this recently (ms). */
    archiveGuardWindowMs: number;
    /** A stuck flag unchanged this long is a `Stale` removal candidate (ms). */
    stalePeriodMs: number;
    /** A stuck flag unchanged this long is a `Dead` removal candidate (ms). */
    deadPeriodMs: number;
  };
  /** OpenTelemetry (design record 055): off unless the standard OTLP variables name an endpoint. */
  telemetry: TelemetrySettings;
}

/**
 * Where traces go, read from OpenTelemetry's standard variables. The SDK itself reads the others
 * (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`…).
 */
export interface TelemetrySettings {
  /**
   * The OTLP/HTTP traces URL: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else
   * `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; null (nothing exported) when neither is set or
   * `OTEL_SDK_DISABLED=true`.
   */
  tracesUrl: string | null;
  /**
   * The metrics URL likewise (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, else endpoint + `/v1/metrics`):
   * where the Prometheus metrics are sent too, or null.
   */
  metricsUrl: string | null;
  /** `OTEL_METRIC_EXPORT_INTERVAL`: milliseconds between two metric exports, default 60,000. */
  metricsIntervalMs: number;
  /** `OTEL_EXPORTER_OTLP_PROTOCOL` (or its `_TRACES_` form): `http/protobuf` (default) or `http/json`. */
  protocol: 'http/protobuf' | 'http/json';
  /** `OTEL_SERVICE_NAME`, default `vexil`: the `service.name` of everything exported. */
  serviceName: string;
  /**
   * `VEXIL_OTEL_EVALUATION_SAMPLE`: the share (0 to 1, default 0) of server-side evaluations that
   * emit a `feature_flag.evaluation` event.
   */
  evaluationSample: number;
}

function telemetrySettings(env: NodeJS.ProcessEnv): TelemetrySettings {
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim().replace(/\/+$/, '');
  const url = (specific: string | undefined, path: string) =>
    disabled ? null : specific?.trim() || (base ? `${base}${path}` : null);
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
    'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (Vexil does not export over ${protocol})`,
    );
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL?.trim() || '60000');
  if (!Number.isInteger(interval) || interval < 100)
    throw new ConfigError(
      'OTEL_METRIC_EXPORT_INTERVAL must be a whole number of milliseconds, at least 100',
    );
  const sample = Number(env.VEXIL_OTEL_EVALUATION_SAMPLE?.trim() || '0');
  if (!(sample >= 0 && sample <= 1))
    throw new ConfigError('VEXIL_OTEL_EVALUATION_SAMPLE must be a number from 0 to 1, e.g. 0.01');
  return {
    tracesUrl: url(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, '/v1/traces'),
    metricsUrl: url(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, '/v1/metrics'),
    metricsIntervalMs: interval,
    protocol,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'vexil',
    evaluationSample: sample,
  };
}

/** Thrown for a malformed environment variable; the CLI prints it and exits non-zero. */
export class ConfigError extends Error {}

/** The shortest `VEXIL_SECRETS_KEY` accepted: 32 characters, as `openssl rand -base64 32` gives 44. */
export const MIN_SECRETS_KEY_LENGTH = 32;

function secretsKey(value: string | undefined, name: string): string | null {
  if (value === undefined || value === '') return null;
  if (value.length < MIN_SECRETS_KEY_LENGTH) {
    throw new ConfigError(
      `${name}: must be at least ${MIN_SECRETS_KEY_LENGTH} characters (e.g. openssl rand -base64 32)`,
    );
  }
  return value;
}

const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Parses `500ms`, `10s`, `5m`, `2h`, `7d` into milliseconds. */
export function parseDuration(text: string, name: string): number {
  const match = DURATION.exec(text.trim());
  if (!match)
    throw new ConfigError(`${name}: "${text}" is not a duration such as 10s, 5m, 2h or 7d`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/**
 * A worker count: a positive integer, or `auto` (one per available core, decided at start).
 * @throws ConfigError naming `name` for anything else.
 */
export function parseWorkers(value: string, name: string): number | 'auto' {
  if (value === 'auto') return 'auto';
  if (!/^[1-9][0-9]{0,3}$/.test(value))
    throw new ConfigError(`${name} must be a positive integer or "auto", got "${value}"`);
  return Number(value);
}

/**
 * A relay's upstream: an `http://` or `https://` base address, returned without a trailing slash.
 * @throws ConfigError naming `name` for anything else.
 */
export function parseUpstreamUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(
      `${name}: "${value}" is not an address such as https://flags.example.com`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name}: "${value}" must be an http:// or https:// address`);
  return url.toString().replace(/\/+$/, '');
}

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) {
    throw new ConfigError(`${name}: "${value}" is not a non-negative integer`);
  }
  return parsed;
}

/** Reads the configuration from an environment (by default `process.env`). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.VEXIL_HOST || '127.0.0.1';
  const port = integer(env.VEXIL_PORT, 8080, 'VEXIL_PORT');
  const schedule = env.VEXIL_WEBHOOK_RETRY_SCHEDULE || '10s,1m,5m,30m,2h';
  return {
    databaseUrl: env.VEXIL_DATABASE_URL || resolve('data', 'vexil.db'),
    host,
    port,
    publicUrl: (env.VEXIL_PUBLIC_URL || `http://${host}:${port}`).replace(/\/+$/, ''),
    logLevel: env.VEXIL_LOG_LEVEL || 'info',
    rateLimit: {
      points: integer(env.VEXIL_RATE_LIMIT, 1000, 'VEXIL_RATE_LIMIT'),
      windowSeconds: integer(
        env.VEXIL_RATE_LIMIT_WINDOW_SECONDS,
        60,
        'VEXIL_RATE_LIMIT_WINDOW_SECONDS',
      ),
    },
    redisUrl: env.VEXIL_REDIS_URL || null,
    secretsKey: secretsKey(env.VEXIL_SECRETS_KEY, 'VEXIL_SECRETS_KEY'),
    previousSecretsKey: secretsKey(env.VEXIL_SECRETS_KEY_PREVIOUS, 'VEXIL_SECRETS_KEY_PREVIOUS'),
    webhooks: {
      retryScheduleMs: schedule
        .split(',')
        .filter((part) => part.trim() !== '')
        .map((part) => parseDuration(part, 'VEXIL_WEBHOOK_RETRY_SCHEDULE')),
      timeoutMs: parseDuration(env.VEXIL_WEBHOOK_TIMEOUT || '10s', 'VEXIL_WEBHOOK_TIMEOUT'),
      allowPrivateTargets: env.VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS === 'true',
      pollIntervalMs: parseDuration(
        env.VEXIL_WEBHOOK_POLL_INTERVAL || '1s',
        'VEXIL_WEBHOOK_POLL_INTERVAL',
      ),
      deliveryRetentionMs: parseDuration(
        env.VEXIL_WEBHOOK_DELIVERY_RETENTION || '90d',
        'VEXIL_WEBHOOK_DELIVERY_RETENTION',
      ),
    },
    usageFlushIntervalMs: parseDuration(
      env.VEXIL_USAGE_FLUSH_INTERVAL || '5s',
      'VEXIL_USAGE_FLUSH_INTERVAL',
    ),
    usageRetentionMs: parseDuration(env.VEXIL_USAGE_RETENTION || '90d', 'VEXIL_USAGE_RETENTION'),
    flagExpirationEnabled: env.VEXIL_FLAG_EXPIRATION_ENABLED !== 'false',
    snapshotCheckIntervalMs: parseDuration(
      env.VEXIL_SNAPSHOT_CHECK_INTERVAL || '5s',
      'VEXIL_SNAPSHOT_CHECK_INTERVAL',
    ),
    snapshotCacheDir: env.VEXIL_SNAPSHOT_CACHE_DIR ? resolve(env.VEXIL_SNAPSHOT_CACHE_DIR) : null,
    relay: {
      upstreamUrl: env.VEXIL_RELAY_UPSTREAM
        ? parseUpstreamUrl(env.VEXIL_RELAY_UPSTREAM, 'VEXIL_RELAY_UPSTREAM')
        : null,
      key: env.VEXIL_RELAY_KEY || null,
    },
    shutdownTimeoutMs: parseDuration(env.VEXIL_SHUTDOWN_TIMEOUT || '30s', 'VEXIL_SHUTDOWN_TIMEOUT'),
    workers: parseWorkers(env.VEXIL_WORKERS || '1', 'VEXIL_WORKERS'),
    streamHeartbeatMs: parseDuration(env.VEXIL_STREAM_HEARTBEAT || '15s', 'VEXIL_STREAM_HEARTBEAT'),
    clientEventsRateLimit: {
      points: integer(env.VEXIL_CLIENT_EVENTS_RATE_LIMIT, 60, 'VEXIL_CLIENT_EVENTS_RATE_LIMIT'),
      windowSeconds: integer(
        env.VEXIL_CLIENT_EVENTS_RATE_LIMIT_WINDOW_SECONDS,
        10,
        'VEXIL_CLIENT_EVENTS_RATE_LIMIT_WINDOW_SECONDS',
      ),
    },
    signIn: {
      passwordEnabled: env.VEXIL_PASSWORD_SIGN_IN !== 'false',
      sessionIdleMs: parseDuration(
        env.VEXIL_SESSION_IDLE_TIMEOUT || '12h',
        'VEXIL_SESSION_IDLE_TIMEOUT',
      ),
      sessionLifetimeMs: parseDuration(
        env.VEXIL_SESSION_LIFETIME || '7d',
        'VEXIL_SESSION_LIFETIME',
      ),
      invitationLifetimeMs: parseDuration(
        env.VEXIL_INVITATION_LIFETIME || '7d',
        'VEXIL_INVITATION_LIFETIME',
      ),
      passwordResetLifetimeMs: parseDuration(
        env.VEXIL_PASSWORD_RESET_LIFETIME || '1h',
        'VEXIL_PASSWORD_RESET_LIFETIME',
      ),
      attempts: {
        points: integer(env.VEXIL_SIGN_IN_RATE_LIMIT, 10, 'VEXIL_SIGN_IN_RATE_LIMIT'),
        windowSeconds: 15 * 60,
      },
      allowPrivateIssuers: env.VEXIL_SSO_ALLOW_PRIVATE_ISSUERS === 'true',
    },
    smtpUrl: env.VEXIL_SMTP_URL || null,
    smtpFrom: env.VEXIL_SMTP_FROM || 'Vexil <vexil@localhost>',
    lifecycle: {
      archiveGuardWindowMs: parseDuration(
        env.VEXIL_ARCHIVE_GUARD_WINDOW || '7d',
        'VEXIL_ARCHIVE_GUARD_WINDOW',
      ),
      stalePeriodMs: parseDuration(env.VEXIL_STALE_FLAG_PERIOD || '30d', 'VEXIL_STALE_FLAG_PERIOD'),
      deadPeriodMs: parseDuration(env.VEXIL_DEAD_FLAG_PERIOD || '90d', 'VEXIL_DEAD_FLAG_PERIOD'),
    },
    telemetry: telemetrySettings(env),
  };
}
