import { describe, expect, it } from 'vitest';
import { EventReporter, MAX_USERS_PER_FLUSH } from './event-reporter.js';

interface SentEvent {
  type: string;
  flagKey: string;
  variation?: string;
  userId?: string;
  reason?: string;
}

/** A reporter whose `fetch` keeps the events it was asked to send. */
function reporter(): { reporter: EventReporter; sent: SentEvent[] } {
  const sent: SentEvent[] = [];
  const fetchStub = (async (_url: string, init: { body: string }) => {
    sent.push(...(JSON.parse(init.body) as { events: SentEvent[] }).events);
    return new Response(null, { status: 202 });
  }) as typeof fetch;
  return {
    sent,
    reporter: new EventReporter({
      baseUrl: 'http://vexil.test',
      sdkKey: 'vxl_srv_test',
      requestTimeoutMs: 1_000,
      fetch: fetchStub,
      onError: (error) => {
        throw error;
      },
    }),
  };
}

describe('evaluation summary: who was served what, for release-plan guards', () => {
  it('names each user once per flag and variation, and summarises contexts without a userId', async () => {
    const { reporter: r, sent } = reporter();
    r.recordEvaluation('checkout', 'on', 1, 'u1');
    // Served again later: the first time is kept, since a guard counts what follows it.
    r.recordEvaluation('checkout', 'on', 2, 'u1');
    r.recordEvaluation('checkout', 'off', 3, 'u2');
    r.recordEvaluation('checkout', 'off', 4);
    r.recordEvaluation('checkout', 'off', 5);
    await r.flush();
    expect(sent).toEqual([
      {
        type: 'Evaluation',
        flagKey: 'checkout',
        variation: 'on',
        userId: 'u1',
        timestamp: new Date(1).toISOString(),
      },
      expect.objectContaining({
        type: 'Evaluation',
        flagKey: 'checkout',
        variation: 'off',
        userId: 'u2',
      }),
      {
        type: 'Evaluation',
        flagKey: 'checkout',
        variation: 'off',
        timestamp: new Date(5).toISOString(),
      },
    ]);
  });

  it(`names at most ${MAX_USERS_PER_FLUSH} users per flush, then summarises, and starts again after it`, async () => {
    const { reporter: r, sent } = reporter();
    for (let user = 0; user <= MAX_USERS_PER_FLUSH + 5; user++)
      r.recordEvaluation('checkout', 'on', user, `u${user}`);
    await r.flush();
    expect(sent.filter((event) => event.userId !== undefined)).toHaveLength(MAX_USERS_PER_FLUSH);
    expect(sent.filter((event) => event.userId === undefined)).toHaveLength(1);
    sent.length = 0;
    r.recordEvaluation('checkout', 'on', 1, 'later');
    await r.flush();
    expect(sent).toEqual([expect.objectContaining({ userId: 'later' })]);
  });

  it('sends the reason a named user was served for, so that only a split counts for an experiment', async () => {
    const { reporter: r, sent } = reporter();
    r.recordEvaluation('checkout', 'on', 1, 'u1', 'SPLIT');
    r.recordEvaluation('checkout', 'on', 2, 'u2', 'TARGETING_MATCH');
    r.recordEvaluation('checkout', 'on', 3, 'u1', 'SPLIT');
    await r.flush();
    expect(sent.map(({ userId, reason }) => [userId, reason])).toEqual([
      ['u1', 'SPLIT'],
      ['u2', 'TARGETING_MATCH'],
    ]);
  });
});
