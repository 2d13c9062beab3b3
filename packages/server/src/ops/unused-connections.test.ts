import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTestVexil } from '../test-support/harness.js';

describe('shutdown', () => {
  // Without closing it, Node 20 waits for such a connection until headersTimeout (a minute),
  // far beyond this test's timeout.
  it(
    'closes a connection that never sent a request instead of waiting for it',
    { timeout: 10_000 },
    async () => {
      const vexil = await createTestVexil('sqlite');
      const origin = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
      const spare = connect(Number(new URL(origin).port), '127.0.0.1');
      await once(spare, 'connect');
      const closed = once(spare, 'close');
      await vexil.close();
      await closed;
      expect(spare.destroyed).toBe(true);
    },
  );
});
