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
  webhooks: {
    /** Delays before each retry, in milliseconds (spec: Limits, 6 attempts in total). */
    retryScheduleMs: number[];
    /** Per-attempt time-out in milliseconds. */
    timeoutMs: number;
    /** Development only: allow `http://` and private-network targets. */
    allowPrivateTargets: boolean;
  };
}

/** Thrown for a malformed environment variable; the CLI prints it and exits non-zero. */
export class ConfigError extends Error {}

const DURATION = /^(\d+)(ms|s|m|h)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Parses `500ms`, `10s`, `5m`, `2h` into milliseconds. */
export function parseDuration(text: string, name: string): number {
  const match = DURATION.exec(text.trim());
  if (!match) throw new ConfigError(`${name}: "${text}" is not a duration such as 10s, 5m or 2h`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
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
    webhooks: {
      retryScheduleMs: schedule
        .split(',')
        .filter((part) => part.trim() !== '')
        .map((part) => parseDuration(part, 'VEXIL_WEBHOOK_RETRY_SCHEDULE')),
      timeoutMs: parseDuration(env.VEXIL_WEBHOOK_TIMEOUT || '10s', 'VEXIL_WEBHOOK_TIMEOUT'),
      allowPrivateTargets: env.VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS === 'true',
    },
  };
}
