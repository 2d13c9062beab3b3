import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVexil, type Vexil } from '../../node/full-node.js';
import { issueToken } from '../../auth/tokens.js';
import { openDatabase } from '../../db/database.js';
import {
  call,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testConfig,
  testDialects,
  type TestVexil,
} from '../../test-support/harness.js';
import { SseReader } from '../../test-support/sse-reader.js';

const base = '/api/v1/orgs/acme/projects/web';

/** Starts `vexil` on a free port and returns its base URL. */
async function listen(vexil: Vexil): Promise<string> {
  await vexil.app.listen({ port: 0, host: '127.0.0.1' });
  const address = vexil.app.server.address();
  return `http://127.0.0.1:${String(typeof address === 'object' && address ? address.port : 0)}`;
}

async function openFeed(url: string, org: string, token: string): Promise<SseReader> {
  const abort = new AbortController();
  const response = await fetch(`${url}/api/v1/orgs/${org}/events/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = new SseReader(response, abort);
  expect((await reader.next()).event).toBe('ready');
  return reader;
}

describe.each(testDialects())('management event stream on %s', (dialect) => {
  let vexil: TestVexil;
  let url: string;
  let acme: Awaited<ReturnType<typeof createOrg>>;
  let other: Awaited<ReturnType<typeof createOrg>>;
  const readers: SseReader[] = [];

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    acme = await createOrg(vexil);
    other = await createOrg(vexil, 'other');
    await createProjectWithFlag(vexil, acme);
    await createProjectWithFlag(vexil, other);
    url = await listen(vexil);
  });
  afterAll(async () => {
    for (const reader of readers) reader.close();
    await vexil.close();
  });

  it("carries each committed change with its kind, keys and project, to its own organization's streams only", async () => {
    const mine = await openFeed(url, 'acme', acme.token);
    const theirs = await openFeed(url, 'other', other.token);
    readers.push(mine, theirs);

    const toggled = await call(
      vexil,
      'POST',
      `${base}/flags/new-checkout/environments/production/toggle`,
      {
        token: acme.token,
        body: { enabled: true },
      },
    );
    expect(toggled.status).toBe(204);
    const event = await mine.next();
    expect(event.event).toBe('change');
    const change = JSON.parse(event.data);
    expect(change).toMatchObject({
      type: 'flag.toggled',
      project: { key: 'web' },
      environment: { key: 'production' },
      entity: { type: 'flag', key: 'new-checkout' },
    });
    expect(event.id).toBe(change.id);
    // Only what changed, not the data: re-read with your own permissions.
    expect(change).not.toHaveProperty('changes');
    expect(change).not.toHaveProperty('actor');

    // The other organization's change reaches its own stream, and acme's stream hears nothing of it.
    await call(vexil, 'PATCH', '/api/v1/orgs/other/projects/web/flags/new-checkout', {
      token: other.token,
      body: { name: 'Theirs' },
    });
    expect(JSON.parse((await theirs.next()).data)).toMatchObject({
      type: 'flag.updated',
      entity: { key: 'new-checkout' },
    });
    expect(mine.unread()).toEqual([]);
    // A deleted flag is gone before its event is written: its id is all that is left.
    await call(vexil, 'POST', `${base}/flags`, { token: acme.token, body: { key: 'doomed' } });
    const created = JSON.parse((await mine.next()).data);
    expect(created).toMatchObject({ type: 'flag.created', entity: { key: 'doomed' } });
    await call(vexil, 'DELETE', `${base}/flags/doomed`, { token: acme.token });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'flag.deleted',
      entity: { type: 'flag', id: created.entity.id, key: null },
    });
    expect(theirs.unread()).toEqual([]);
  });

  it("a flag's toggle, variation, rule and archive events carry the project, environment and flag keys", async () => {
    const mine = await openFeed(url, 'acme', acme.token);
    readers.push(mine);
    const nextChange = async () => JSON.parse((await mine.next()).data);
    const project = {
      id: (await call(vexil, 'GET', base, { token: acme.token })).body.id,
      key: 'web',
    };
    const flagPath = `${base}/flags/keyed`;
    const created = await call(vexil, 'POST', `${base}/flags`, {
      token: acme.token,
      body: {
        key: 'keyed',
        type: 'String',
        variations: [
          { key: 'red', value: 'red' },
          { key: 'blue', value: 'blue' },
        ],
      },
    });
    expect(created.status).toBe(201);
    const flag = { type: 'flag', id: created.body.id, key: 'keyed' };
    expect(await nextChange()).toMatchObject({ type: 'flag.created', project, entity: flag });

    await call(vexil, 'POST', `${flagPath}/environments/production/toggle`, {
      token: acme.token,
      body: { enabled: true },
    });
    expect(await nextChange()).toMatchObject({
      type: 'flag.toggled',
      project,
      environment: { key: 'production' },
      entity: flag,
    });

    // Variations belong to the flag in every environment: their events name no environment.
    const variation = await call(vexil, 'POST', `${flagPath}/variations`, {
      token: acme.token,
      body: { key: 'green', value: 'green' },
    });
    expect(variation.status).toBe(201);
    const variationChild = { type: 'variation', id: variation.body.id };
    expect(await nextChange()).toMatchObject({
      type: 'flag.variation.created',
      project,
      environment: null,
      entity: flag,
      child: variationChild,
    });
    await call(vexil, 'PATCH', `${flagPath}/variations/green`, {
      token: acme.token,
      body: { name: 'Green' },
    });
    expect(await nextChange()).toMatchObject({
      type: 'flag.variation.updated',
      project,
      environment: null,
      entity: flag,
      child: variationChild,
    });
    await call(vexil, 'DELETE', `${flagPath}/variations/green`, { token: acme.token });
    expect(await nextChange()).toMatchObject({
      type: 'flag.variation.deleted',
      project,
      environment: null,
      entity: flag,
      child: variationChild,
    });

    const rules = `${flagPath}/environments/production/rules`;
    const blue = created.body.variations.find((v: { key: string }) => v.key === 'blue').id;
    const rule = await call(vexil, 'POST', rules, {
      token: acme.token,
      body: { variationId: blue },
    });
    expect(rule.status).toBe(201);
    const ruleChange = {
      project,
      environment: { key: 'production' },
      entity: flag,
      child: { type: 'rule', id: rule.body.id },
    };
    expect(await nextChange()).toMatchObject({ type: 'flag.rule.created', ...ruleChange });
    await call(vexil, 'PATCH', `${rules}/${rule.body.id}`, {
      token: acme.token,
      body: { description: 'Everyone blue' },
    });
    expect(await nextChange()).toMatchObject({ type: 'flag.rule.updated', ...ruleChange });
    await call(vexil, 'DELETE', `${rules}/${rule.body.id}`, { token: acme.token });
    expect(await nextChange()).toMatchObject({ type: 'flag.rule.deleted', ...ruleChange });

    expect((await call(vexil, 'POST', `${flagPath}/archive`, { token: acme.token })).status).toBe(
      204,
    );
    expect(await nextChange()).toMatchObject({
      type: 'flag.archived',
      project,
      environment: null,
      entity: flag,
    });
    expect((await call(vexil, 'POST', `${flagPath}/restore`, { token: acme.token })).status).toBe(
      204,
    );
    expect(await nextChange()).toMatchObject({
      type: 'flag.restored',
      project,
      environment: null,
      entity: flag,
    });
    expect(mine.unread()).toEqual([]);
  });

  it('a token allowlisted to one project hears only of that project', async () => {
    await call(vexil, 'POST', '/api/v1/orgs/acme/projects', {
      token: acme.token,
      body: { key: 'elsewhere', name: 'Elsewhere' },
    });
    const web = await call(vexil, 'GET', base, { token: acme.token });
    const { token } = await issueToken(vexil.services.db, {
      kind: 'service',
      organizationId: acme.orgId,
      role: 'Viewer',
      projectScope: [web.body.id as string],
      name: 'web only',
      expiresAt: null,
      now: new Date().toISOString(),
    });
    const scoped = await openFeed(url, 'acme', token);
    readers.push(scoped);
    await call(vexil, 'POST', '/api/v1/orgs/acme/projects/elsewhere/flags', {
      token: acme.token,
      body: { key: 'hidden' },
    });
    await call(vexil, 'POST', `${base}/flags`, { token: acme.token, body: { key: 'visible' } });
    const heard = JSON.parse((await scoped.next()).data);
    expect(heard).toMatchObject({ type: 'flag.created', entity: { key: 'visible' } });
    expect(scoped.unread()).toEqual([]);
  });

  it('an environment or project deletion keeps its keys; a renamed segment carries its new key', async () => {
    const mine = await openFeed(url, 'acme', acme.token);
    readers.push(mine);
    await call(vexil, 'POST', '/api/v1/orgs/acme/projects', {
      token: acme.token,
      body: { key: 'short-lived', name: 'Short-lived', environments: [{ key: 'staging' }] },
    });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'project.created',
      project: { key: 'short-lived' },
      entity: { type: 'project', key: 'short-lived' },
    });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'environment.created',
      environment: { key: 'staging' },
      entity: { type: 'environment', key: 'staging' },
    });
    const project = '/api/v1/orgs/acme/projects/short-lived';
    await call(vexil, 'POST', `${project}/segments`, {
      token: acme.token,
      body: { key: 'beta', name: 'Beta' },
    });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'segment.created',
      entity: { key: 'beta' },
    });
    await call(vexil, 'PATCH', `${project}/segments/beta`, {
      token: acme.token,
      body: { key: 'gamma' },
    });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'segment.updated',
      entity: { key: 'gamma' },
    });
    await call(vexil, 'DELETE', `${project}/environments/staging`, { token: acme.token });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'environment.deleted',
      project: { key: 'short-lived' },
      environment: { key: 'staging' },
      entity: { type: 'environment', key: 'staging' },
    });
    await call(vexil, 'DELETE', project, { token: acme.token });
    expect(JSON.parse((await mine.next()).data)).toMatchObject({
      type: 'project.deleted',
      project: { key: 'short-lived' },
      entity: { type: 'project', key: 'short-lived' },
    });
    expect(mine.unread()).toEqual([]);
  });

  it('refuses without a credential, and from another organization', async () => {
    expect((await fetch(`${url}/api/v1/orgs/acme/events/stream`)).status).toBe(401);
    const foreign = await fetch(`${url}/api/v1/orgs/acme/events/stream`, {
      headers: { authorization: `Bearer ${other.token}` },
    });
    expect(foreign.status).toBe(404);
  });

  it.runIf(dialect === 'postgres')(
    "a change committed on another node reaches this node's streams",
    async () => {
      const nodeB = await createVexil(testConfig({ databaseUrl: vexil.databaseUrl }), {
        database: openDatabase(vexil.databaseUrl),
        logger: false,
        startWorkers: false,
      });
      try {
        const onB = await openFeed(await listen(nodeB), 'acme', acme.token);
        readers.push(onB);
        await call(vexil, 'PATCH', `${base}/flags/new-checkout`, {
          token: acme.token,
          body: { name: 'Changed on A' },
        });
        expect(JSON.parse((await onB.next()).data)).toMatchObject({
          type: 'flag.updated',
          entity: { key: 'new-checkout' },
          project: { key: 'web' },
        });
        onB.close();
      } finally {
        await nodeB.close();
      }
    },
  );
});
