import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

const DAY_MS = 86_400_000;

describe('loadConfig: webhook delivery settings', () => {
  it('polls every second and keeps finished deliveries 90 days by default', () => {
    const { webhooks } = loadConfig({});
    expect(webhooks.pollIntervalMs).toBe(1000);
    expect(webhooks.deliveryRetentionMs).toBe(90 * DAY_MS);
  });

  it('reads VEXIL_WEBHOOK_POLL_INTERVAL and VEXIL_WEBHOOK_DELIVERY_RETENTION as durations', () => {
    const { webhooks } = loadConfig({
      VEXIL_WEBHOOK_POLL_INTERVAL: '250ms',
      VEXIL_WEBHOOK_DELIVERY_RETENTION: '7d',
    });
    expect(webhooks.pollIntervalMs).toBe(250);
    expect(webhooks.deliveryRetentionMs).toBe(7 * DAY_MS);
  });

  it('refuses a malformed duration, naming the variable', () => {
    expect(() => loadConfig({ VEXIL_WEBHOOK_DELIVERY_RETENTION: '90 days' })).toThrow(ConfigError);
    expect(() => loadConfig({ VEXIL_WEBHOOK_POLL_INTERVAL: 'often' })).toThrow(
      /VEXIL_WEBHOOK_POLL_INTERVAL/,
    );
  });
});

describe('loadConfig: usage retention', () => {
  it('keeps hourly usage counts 90 days unless VEXIL_USAGE_RETENTION says otherwise', () => {
    expect(loadConfig({}).usageRetentionMs).toBe(90 * DAY_MS);
    expect(loadConfig({ VEXIL_USAGE_RETENTION: '400d' }).usageRetentionMs).toBe(400 * DAY_MS);
    expect(() => loadConfig({ VEXIL_USAGE_RETENTION: 'forever' })).toThrow(/VEXIL_USAGE_RETENTION/);
  });
});

describe('loadConfig: secrets key', () => {
  it('is unset unless VEXIL_SECRETS_KEY is given', () => {
    expect(loadConfig({}).secretsKey).toBeNull();
    const key = 'k'.repeat(32);
    expect(loadConfig({ VEXIL_SECRETS_KEY: key }).secretsKey).toBe(key);
  });

  it('refuses a key shorter than 32 characters, naming the variable', () => {
    expect(() => loadConfig({ VEXIL_SECRETS_KEY: 'too-short' })).toThrow(ConfigError);
    expect(() => loadConfig({ VEXIL_SECRETS_KEY: 'too-short' })).toThrow(/VEXIL_SECRETS_KEY/);
    expect(() => loadConfig({ VEXIL_SECRETS_KEY_PREVIOUS: 'too-short' })).toThrow(
      /VEXIL_SECRETS_KEY_PREVIOUS/,
    );
  });

  it('reads the key before a rotation from VEXIL_SECRETS_KEY_PREVIOUS', () => {
    expect(loadConfig({}).previousSecretsKey).toBeNull();
    const key = 'p'.repeat(32);
    expect(loadConfig({ VEXIL_SECRETS_KEY_PREVIOUS: key }).previousSecretsKey).toBe(key);
  });
});

describe('loadConfig: VEXIL_WORKERS', () => {
  it('serves from one process unless told otherwise', () => {
    expect(loadConfig({}).workers).toBe(1);
  });

  it('reads a count or auto', () => {
    expect(loadConfig({ VEXIL_WORKERS: '4' }).workers).toBe(4);
    expect(loadConfig({ VEXIL_WORKERS: 'auto' }).workers).toBe('auto');
  });

  it.each(['0', '-1', 'two', '1.5'])('refuses %s, naming the variable', (value) => {
    expect(() => loadConfig({ VEXIL_WORKERS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ VEXIL_WORKERS: value })).toThrow(/VEXIL_WORKERS/);
  });
});
