import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  createSession,
  createTestVexil,
  TestClock,
  testDialects,
  type TestVexil,
} from '../test-support/harness.js';

const MINUTE = 60_000;

describe.each(testDialects())(
  'tokens’ lastUsedAt and members’ lastSeenAt on %s (design record 048)',
  (dialect) => {
    const clock = new TestClock();
    let vexil: TestVexil;
    let owner: Awaited<ReturnType<typeof createOrg>>;
    let member: Awaited<ReturnType<typeof createMember>>;
    let service: { id: string; token: string };
    const flags = '/api/v1/orgs/acme/projects/web/flags';

    beforeAll(async () => {
      // No timed flush during a test: each flushes when it means to.
      vexil = await createTestVexil(dialect, {
        clock,
        config: { usageFlushIntervalMs: 3_600_000 },
      });
      owner = await createOrg(vexil);
      await createProjectWithFlag(vexil, owner);
      member = await createMember(vexil, owner.orgId, 'Member');
      const created = await callOk(vexil, 'POST', '/api/v1/orgs/acme/service-tokens', owner.token, {
        name: 'deploy bot',
        role: 'Viewer',
      });
      service = { id: created.id as string, token: created.token as string };
      await vexil.services.usage.flush();
    });
    afterAll(() => vexil.close());

    const serviceTokenLastUsed = async () => {
      const list = await callOk(vexil, 'GET', '/api/v1/orgs/acme/service-tokens', owner.token);
      return list.items.find((item: { id: string }) => item.id === service.id).lastUsedAt as
        string | null;
    };
    const memberLastSeen = async () =>
      (await callOk(vexil, 'GET', `/api/v1/orgs/acme/members/${member.userId}`, owner.token))
        .lastSeenAt as string | null;
    const personalTokenLastUsed = async () => {
      const list = await callOk(vexil, 'GET', '/api/v1/me/tokens', member.token);
      return list.items[0].lastUsedAt as string | null;
    };

    it('a request is noted, not written: the read shapes change only at the flush', async () => {
      expect(await serviceTokenLastUsed()).toBeNull();
      expect(await memberLastSeen()).toBeNull();
      await vexil.services.usage.flush();
      clock.advance(MINUTE);

      const serviceUse = clock.now().toISOString();
      expect((await call(vexil, 'GET', flags, { token: service.token })).status).toBe(200);
      clock.advance(MINUTE);
      const memberUse = clock.now().toISOString();
      expect((await call(vexil, 'GET', flags, { token: member.token })).status).toBe(200);
      expect((await call(vexil, 'GET', flags, { token: member.token })).status).toBe(200);
      expect(await serviceTokenLastUsed()).toBeNull();
      expect(await memberLastSeen()).toBeNull();

      await vexil.services.usage.flush();
      expect(await serviceTokenLastUsed()).toBe(serviceUse);
      expect(await memberLastSeen()).toBe(memberUse);
      // Reading the list used the member's token too, noted for the next flush.
      expect(await personalTokenLastUsed()).toBe(memberUse);
    });

    it('of several requests between two flushes, the latest is written', async () => {
      clock.advance(MINUTE);
      await call(vexil, 'GET', flags, { token: service.token });
      clock.advance(MINUTE);
      const latest = clock.now().toISOString();
      await call(vexil, 'GET', flags, { token: service.token });
      await vexil.services.usage.flush();
      expect(await serviceTokenLastUsed()).toBe(latest);
    });

    it('an earlier use written by another node never replaces a later one', async () => {
      const later = await serviceTokenLastUsed();
      vexil.services.usage.recordTokenUse(service.id, clock.now().getTime() - 10 * MINUTE);
      await vexil.services.usage.flush();
      expect(await serviceTokenLastUsed()).toBe(later);
    });

    it('a request signed in by session counts as the member being seen', async () => {
      const session = await createSession(vexil, member.userId);
      clock.advance(5 * MINUTE);
      const seen = clock.now().toISOString();
      expect((await call(vexil, 'GET', flags, { headers: session.headers })).status).toBe(200);
      await vexil.services.usage.flush();
      expect(await memberLastSeen()).toBe(seen);
    });

    it('writing a last use never brings a revoked token back', async () => {
      const created = await callOk(vexil, 'POST', '/api/v1/orgs/acme/service-tokens', owner.token, {
        name: 'short-lived',
        role: 'Member',
      });
      expect((await call(vexil, 'GET', '/api/v1/me', { token: created.token })).status).toBe(200);
      const revoked = await call(
        vexil,
        'DELETE',
        `/api/v1/orgs/acme/service-tokens/${created.id}`,
        {
          token: owner.token,
        },
      );
      expect(revoked.status).toBe(204);
      await vexil.services.usage.flush();
      expect((await call(vexil, 'GET', '/api/v1/me', { token: created.token })).status).toBe(401);
    });
  },
);
