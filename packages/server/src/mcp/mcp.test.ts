import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dialect } from '../db/database.js';
import {
  TestClock,
  call,
  callOk,
  createMember,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  type TestVexil,
  testWebhookSettings,
} from '../test-support/harness.js';
import { WebhookReceiver } from '../test-support/webhook-receiver.js';

const TOOLS = [
  'apply_change_request',
  'create_flag',
  'create_segment',
  'deliver_webhook',
  'evaluate_flag',
  'flag_cleanup_plan',
  'get_change_request',
  'get_experiment_results',
  'get_flag',
  'list_change_requests',
  'list_code_references',
  'list_experiments',
  'list_flags',
  'list_members',
  'list_removal_candidates',
  'list_webhook_deliveries',
  'list_webhooks',
  'manage_webhook',
  'propose_change_request',
  'toggle_flag',
];

/** A Vexil listening on 127.0.0.1, and MCP clients connected to it (closed with it). */
async function startVexil(dialect: Dialect) {
  const clock = new TestClock();
  const vexil = await createTestVexil(dialect, {
    clock,
    config: {
      webhooks: testWebhookSettings(),
    },
  });
  const address = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
  const url = new URL(`${address}/mcp`);
  const clients: Client[] = [];
  return {
    vexil,
    clock,
    url,
    /** An MCP client speaking to `/mcp` with the given bearer token. */
    async connect(token: string): Promise<Client> {
      const client = new Client({ name: 'vexil-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.all(clients.map((client) => client.close()));
      await vexil.close();
    },
  };
}

async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The structured output of a successful tool call. */
async function output(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  // Tests read arbitrary JSON; asserting on it is the point.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<any> {
  const result = await callTool(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

/** The `code: message` text of a tool error. */
async function refusal(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<string> {
  const result = await callTool(client, name, args);
  expect(result.isError).toBe(true);
  const [first] = result.content;
  return first?.type === 'text' ? first.text : '';
}

/** The message of the JSON-RPC -32602 (invalid params) error a tool call is answered with. */
async function invalidParams(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<string> {
  const error: unknown = await callTool(client, name, args).then(
    (result) => result,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(McpError);
  expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
  return (error as McpError).message;
}

describe('MCP tool server', () => {
  let server: Awaited<ReturnType<typeof startVexil>>;
  let vexil: TestVexil;
  let receiver: WebhookReceiver;
  let ownerToken: string;
  let owner: Client;
  let admin: Client;
  let member: Client;
  let viewer: Client;
  let outsider: Client;
  const flagArgs = { org: 'acme', project: 'web', flag: 'new-checkout' };

  beforeAll(async () => {
    server = await startVexil('sqlite');
    vexil = server.vexil;
    receiver = await WebhookReceiver.start();
    const org = await createOrg(vexil, 'acme');
    await createProjectWithFlag(vexil, org);
    const other = await createOrg(vexil, 'globex');
    ownerToken = org.token;
    owner = await server.connect(org.token);
    admin = await server.connect((await createMember(vexil, org.orgId, 'Admin')).token);
    member = await server.connect((await createMember(vexil, org.orgId, 'Member')).token);
    viewer = await server.connect((await createMember(vexil, org.orgId, 'Viewer')).token);
    outsider = await server.connect(other.token);
  });
  afterAll(async () => {
    await server.close();
    await receiver.close();
  });

  it('lists every tool, each taking `org` and declaring its output shape', async () => {
    const { tools } = await viewer.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(TOOLS);
    for (const tool of tools) {
      expect(tool.inputSchema.required).toContain('org');
      expect(tool.outputSchema?.type).toBe('object');
    }
  });

  it('authentication: no or a bad credential is a 401 before any MCP handling', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    };
    for (const authorization of [undefined, 'Bearer vxl_p_not-a-token']) {
      const response = await fetch(server.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization ? { authorization } : {}),
        },
        body: JSON.stringify(initialize),
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toMatchObject({ error: 'unauthorized' });
    }
    const client = new Client({ name: 'anonymous', version: '1' });
    await expect(client.connect(new StreamableHTTPClientTransport(server.url))).rejects.toThrow(
      StreamableHTTPError,
    );
  });

  it('stateless: no stream to open and no session to end (405)', async () => {
    const headers = { authorization: `Bearer ${ownerToken}` };
    expect((await fetch(server.url, { headers })).status).toBe(405);
    expect((await fetch(server.url, { method: 'DELETE', headers })).status).toBe(405);
  });

  it('webhook tools: manage a subscription through its whole life', async () => {
    const org = { org: 'acme' };
    const created = await output(admin, 'manage_webhook', {
      ...org,
      action: 'create',
      name: 'Agent hook',
      url: receiver.url(),
    });
    expect(created.created.secret).toMatch(/^whsec_/);
    expect(created.webhook).toMatchObject({ name: 'Agent hook', enabled: true });
    const webhook = created.created.id as string;
    const firstSecret = created.webhook.secrets[0].id as string;

    const listed = await output(admin, 'list_webhooks', org);
    expect(listed.items.map((item: { id: string }) => item.id)).toEqual([webhook]);

    const updated = await output(admin, 'manage_webhook', {
      ...org,
      action: 'update',
      webhook,
      name: 'Renamed hook',
    });
    expect(updated.webhook.name).toBe('Renamed hook');

    const added = await output(admin, 'manage_webhook', { ...org, action: 'add_secret', webhook });
    expect(added.secret.secret).toMatch(/^whsec_/);
    const retired = await output(admin, 'manage_webhook', {
      ...org,
      action: 'retire_secret',
      webhook,
      secretId: firstSecret,
    });
    expect(retired.webhook.secrets.map((secret: { id: string }) => secret.id)).toEqual([
      added.secret.secretId,
    ]);

    const disabled = await output(admin, 'manage_webhook', { ...org, action: 'disable', webhook });
    expect(disabled.webhook.enabled).toBe(false);
    expect(await refusal(admin, 'manage_webhook', { ...org, action: 'send_test', webhook })).toBe(
      'bad_request: The subscription is disabled; enable it first.',
    );
    await output(admin, 'manage_webhook', { ...org, action: 'enable', webhook });
    const sent = await output(admin, 'manage_webhook', { ...org, action: 'send_test', webhook });
    const delivery = sent.testEvent.webhookDeliveryId as string;

    // Redelivery is refused while the first round is pending, as on the HTTP route.
    expect(await refusal(admin, 'deliver_webhook', { ...org, webhook, delivery })).toMatch(
      /^bad_request: The delivery is still pending/,
    );
    expect(await vexil.webhookWorker.runOnce()).toBe(1);
    const deliveries = await output(admin, 'list_webhook_deliveries', {
      ...org,
      webhook,
      limit: 1,
    });
    expect(deliveries.items).toMatchObject([{ id: delivery, status: 'Succeeded' }]);
    const redelivered = await output(admin, 'deliver_webhook', { ...org, webhook, delivery });
    expect(redelivered).toMatchObject({ id: delivery, status: 'Pending', attemptCount: 0 });
    expect(redelivered.attempts).toHaveLength(1);

    expect(await output(admin, 'manage_webhook', { ...org, action: 'delete', webhook })).toEqual({
      action: 'delete',
    });
    expect((await output(admin, 'list_webhooks', org)).items).toEqual([]);
  });

  it('webhook tools: arguments an action needs are checked before any call', async () => {
    const text = await invalidParams(admin, 'manage_webhook', { org: 'acme', action: 'update' });
    expect(text).toMatch(/Invalid arguments for tool manage_webhook/);
    expect(text).toMatch(/webhook/);
  });

  it('tool arguments of the wrong kind are refused as invalid params (-32602) in the management API’s words', async () => {
    const text = await invalidParams(admin, 'list_flags', {
      org: 'acme',
      project: 7,
      limit: 500,
      archived: 'yes',
    });
    expect(text).toMatch(/must be a string at project/);
    expect(text).toMatch(/must be at most 200 at limit/);
    expect(text).toMatch(/must be true or false at archived/);
    expect(await invalidParams(admin, 'get_flag', { org: 'acme', project: 'web' })).toMatch(
      /is required at flag/,
    );
    expect(text).not.toMatch(/Invalid input|expected|received/);
  });

  it('webhook tools: the HTTP twin’s validation comes back as a tool error', async () => {
    const result = await callTool(admin, 'manage_webhook', {
      org: 'acme',
      action: 'create',
      url: receiver.url(),
    });
    expect(result.isError).toBe(true);
    const [summary, envelope] = result.content;
    expect(summary).toEqual({ type: 'text', text: 'validation_failed: name is required.' });
    expect(envelope?.type === 'text' && JSON.parse(envelope.text)).toMatchObject({
      error: 'validation_failed',
      fields: { name: ['is required'] },
    });
  });

  it('webhook tools need Admin: Viewers and Members are refused with forbidden', async () => {
    for (const client of [viewer, member]) {
      expect(await refusal(client, 'list_webhooks', { org: 'acme' })).toMatch(
        /^forbidden: This operation needs the Admin role/,
      );
      expect(
        await refusal(client, 'manage_webhook', {
          org: 'acme',
          action: 'create',
          name: 'x',
          url: receiver.url(),
        }),
      ).toMatch(/^forbidden: /);
    }
  });

  it('another organization is not_found, never revealed', async () => {
    expect(await refusal(outsider, 'list_webhooks', { org: 'acme' })).toBe(
      'not_found: Organization "acme" was not found.',
    );
    expect(await refusal(outsider, 'get_flag', flagArgs)).toMatch(/^not_found: /);
    expect(
      await refusal(outsider, 'toggle_flag', {
        ...flagArgs,
        environment: 'production',
        enabled: true,
      }),
    ).toMatch(/^not_found: /);
  });

  it('list_members answers as GET /members does (Viewer)', async () => {
    const members = await output(viewer, 'list_members', { org: 'acme' });
    expect(members.items.map((item: { role: string }) => item.role)).toContain('Owner');
    expect(members.items.map((item: { role: string }) => item.role)).toContain('Viewer');
  });

  it('flag reads: list, get, removal candidates (Viewer)', async () => {
    const flags = await output(viewer, 'list_flags', { org: 'acme', project: 'web' });
    expect(flags.items.map((flag: { key: string }) => flag.key)).toEqual(['new-checkout']);
    const flag = await output(viewer, 'get_flag', flagArgs);
    expect(flag).toMatchObject({ key: 'new-checkout', type: 'Boolean' });
    const candidates = await output(viewer, 'list_removal_candidates', {
      org: 'acme',
      project: 'web',
      staleness: 'stale',
    });
    expect(candidates).toMatchObject({ items: expect.any(Array), next_cursor: null });
    const missing = await callTool(viewer, 'get_flag', { ...flagArgs, flag: 'new-chekout' });
    const envelope = missing.content[1];
    expect(envelope?.type === 'text' && JSON.parse(envelope.text)).toMatchObject({
      error: 'not_found',
      did_you_mean: ['new-checkout'],
    });
  });

  it('experiment reads: list_experiments and get_experiment_results (Viewer)', async () => {
    const project = '/api/v1/orgs/acme/projects/web';
    await callOk(vexil, 'POST', `${project}/metrics`, ownerToken, {
      key: 'signup',
      name: 'Signup',
      eventKey: 'signup',
      kind: 'conversion',
      direction: 'higher_is_better',
    });
    await callOk(
      vexil,
      'POST',
      `${project}/flags/new-checkout/environments/production/experiments`,
      ownerToken,
      {
        key: 'signup-copy',
        name: 'Signup copy',
        variations: [
          { key: 'false', weight: 5000 },
          { key: 'true', weight: 5000 },
        ],
        controlVariation: 'false',
        primaryMetric: 'signup',
      },
    );
    const listed = await output(viewer, 'list_experiments', {
      org: 'acme',
      project: 'web',
      status: 'draft',
    });
    expect(listed.items).toMatchObject([
      { key: 'signup-copy', flagKey: 'new-checkout', environmentKey: 'production' },
    ]);
    const results = await output(viewer, 'get_experiment_results', {
      org: 'acme',
      project: 'web',
      flag: 'new-checkout',
      environment: 'production',
      experiment: 'signup-copy',
    });
    expect(results).toMatchObject({
      status: 'draft',
      variations: [
        { key: 'false', exposedUsers: 0, control: true },
        { key: 'true', exposedUsers: 0 },
      ],
      metrics: [{ key: 'signup', role: 'primary' }],
    });
  });

  it('evaluate_flag and toggle_flag: a Member turns the flag on, the engine sees it', async () => {
    const evaluate = { ...flagArgs, environment: 'production', context: { userId: 'u1' } };
    expect(await output(viewer, 'evaluate_flag', evaluate)).toEqual({
      key: 'new-checkout',
      variation: 'false',
      value: false,
      reason: 'DISABLED',
    });
    expect(
      await refusal(viewer, 'toggle_flag', {
        ...flagArgs,
        environment: 'production',
        enabled: true,
      }),
    ).toMatch(/^forbidden: This operation needs the Member role/);
    const toggled = await output(member, 'toggle_flag', {
      ...flagArgs,
      environment: 'production',
      enabled: true,
    });
    expect(toggled).toMatchObject({ environmentKey: 'production', isEnabled: true });
    expect(await output(owner, 'evaluate_flag', evaluate)).toMatchObject({
      value: true,
      reason: 'DEFAULT',
    });
  });
});

describe.each(testDialects())('toggle_flag and its HTTP twin on %s', (dialect) => {
  let server: Awaited<ReturnType<typeof startVexil>>;
  beforeAll(async () => {
    server = await startVexil(dialect);
  });
  afterAll(() => server.close());

  it('change the same state and emit the same webhook event type', async () => {
    const { vexil } = server;
    const org = await createOrg(vexil, 'acme');
    await createProjectWithFlag(vexil, org);
    const client = await server.connect(org.token);
    const path = '/api/v1/orgs/acme/projects/web/flags/new-checkout/environments/production';
    const state = async () => (await call(vexil, 'GET', path, { token: org.token })).body;
    const events = () =>
      vexil.services.db
        .selectFrom('webhook_events')
        .select(['type', 'project_id', 'environment_id', 'payload'])
        .where('type', '=', 'flag.toggled')
        .orderBy('id')
        .execute();

    const byTool = await output(client, 'toggle_flag', {
      org: 'acme',
      project: 'web',
      flag: 'new-checkout',
      environment: 'production',
      enabled: true,
    });
    expect(byTool).toEqual(await state());
    expect((await state()).isEnabled).toBe(true);
    const byHttp = await call(vexil, 'POST', `${path}/toggle`, {
      token: org.token,
      body: { enabled: false },
    });
    expect(byHttp.status).toBe(204);
    expect((await state()).isEnabled).toBe(false);

    const [fromTool, fromHttp] = await events();
    expect(fromTool).toBeDefined();
    expect(fromHttp).toBeDefined();
    const { payload: toolPayload, ...toolEvent } = fromTool!;
    const { payload: httpPayload, ...httpEvent } = fromHttp!;
    expect(toolEvent).toEqual(httpEvent);
    const shape = (payload: string) => {
      const {
        occurredAt: _occurredAt,
        changes: _changes,
        description: _description,
        ...rest
      } = JSON.parse(payload) as Record<string, unknown>;
      return rest;
    };
    expect(shape(toolPayload)).toEqual(shape(httpPayload));
    expect(JSON.parse(toolPayload).changes).toEqual([
      { property: 'IsEnabled', from: 'false', to: 'true' },
    ]);
    expect(JSON.parse(httpPayload).changes).toEqual([
      { property: 'IsEnabled', from: 'true', to: 'false' },
    ]);
  });
});

describe.each(testDialects())('create_flag and create_segment on %s', (dialect) => {
  let server: Awaited<ReturnType<typeof startVexil>>;
  beforeAll(async () => {
    server = await startVexil(dialect);
  });
  afterAll(() => server.close());

  it('create what POST /flags and POST /segments create, with their events, as a Member', async () => {
    const { vexil } = server;
    const org = await createOrg(vexil, 'acme');
    await createProjectWithFlag(vexil, org);
    const member = await server.connect((await createMember(vexil, org.orgId, 'Member')).token);
    const project = '/api/v1/orgs/acme/projects/web';

    const flag = await output(member, 'create_flag', {
      org: 'acme',
      project: 'web',
      key: 'banner-text',
      name: 'Banner text',
      type: 'String',
      variations: [
        { key: 'short', value: 'Hi' },
        { key: 'long', value: 'Hello there' },
      ],
      tags: ['agent'],
      clientSideVisible: true,
    });
    const read = await call(vexil, 'GET', `${project}/flags/banner-text`, { token: org.token });
    expect(read.status).toBe(200);
    expect(flag).toMatchObject({ key: 'banner-text', type: 'String', offVariationKey: 'short' });
    expect(read.body).toMatchObject({
      id: flag.id,
      name: 'Banner text',
      tags: ['agent'],
      clientSideVisible: true,
    });
    expect(read.body.variations.map((v: { key: string }) => v.key)).toEqual(['short', 'long']);

    const segment = await output(member, 'create_segment', {
      org: 'acme',
      project: 'web',
      key: 'beta-testers',
      name: 'Beta testers',
      conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
    });
    const readSegment = await call(vexil, 'GET', `${project}/segments/beta-testers`, {
      token: org.token,
    });
    expect(readSegment.body).toMatchObject({
      id: segment.id,
      key: 'beta-testers',
      conditionLogic: 'And',
      conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
    });

    const events = await vexil.services.db
      .selectFrom('webhook_events')
      .select('type')
      .where('type', 'in', ['flag.created', 'segment.created'])
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.type)).toEqual(['flag.created', 'flag.created', 'segment.created']);
  });

  it('refuse Viewers, bad arguments (-32602) and what only the twin can judge (tool errors)', async () => {
    const { vexil } = server;
    const org = await createOrg(vexil, 'globex');
    await createProjectWithFlag(vexil, org);
    const viewer = await server.connect((await createMember(vexil, org.orgId, 'Viewer')).token);
    const member = await server.connect((await createMember(vexil, org.orgId, 'Member')).token);
    const at = { org: 'globex', project: 'web' };

    expect(await refusal(viewer, 'create_flag', { ...at, key: 'from-viewer' })).toMatch(
      /^forbidden: /,
    );
    expect(await refusal(viewer, 'create_segment', { ...at, key: 'from-viewer' })).toMatch(
      /^forbidden: /,
    );

    const badFlag = await invalidParams(member, 'create_flag', {
      ...at,
      key: 'no spaces',
      type: 'Colour',
      variations: [],
    });
    expect(badFlag).toMatch(/must start with a letter or digit.* at key/);
    expect(badFlag).toMatch(/at type/);
    expect(badFlag).toMatch(/at variations/);
    const badSegment = await invalidParams(member, 'create_segment', {
      ...at,
      key: 'ok',
      conditions: [{ attribute: 'country', operator: 'In', values: 'DE' }],
      conditionLogic: 'Xor',
    });
    expect(badSegment).toMatch(/must be an array at conditions\.0\.values/);
    expect(badSegment).toMatch(/at conditionLogic/);

    const noVariations = await callTool(member, 'create_flag', { ...at, key: 'x', type: 'Number' });
    expect(noVariations.isError).toBe(true);
    const [, envelope] = noVariations.content;
    expect(envelope?.type === 'text' && JSON.parse(envelope.text)).toMatchObject({
      error: 'validation_failed',
      fields: { variations: [expect.stringMatching(/required for a Number flag/)] },
    });
    expect(await refusal(member, 'create_flag', { ...at, key: 'new-checkout' })).toMatch(
      /^conflict: /,
    );
    expect(
      await refusal(member, 'create_segment', {
        ...at,
        key: 'bad-operator',
        conditions: [{ attribute: 'country', operator: 'Near', values: ['DE'] }],
      }),
    ).toMatch(/^validation_failed: /);
    const flags = await call(vexil, 'GET', '/api/v1/orgs/globex/projects/web/flags', {
      token: org.token,
    });
    expect(flags.body.items.map((f: { key: string }) => f.key)).toEqual(['new-checkout']);
  });
});

describe.each(testDialects())('change requests through MCP on %s', (dialect) => {
  let server: Awaited<ReturnType<typeof startVexil>>;
  beforeAll(async () => {
    server = await startVexil(dialect);
  });
  afterAll(() => server.close());

  it('agents propose, people approve: a refused toggle names the proposal, a person approves, the agent applies', async () => {
    const { vexil } = server;
    const org = await createOrg(vexil, 'acme');
    await createProjectWithFlag(vexil, org);
    const project = '/api/v1/orgs/acme/projects/web';
    const configuration = `${project}/flags/new-checkout/environments/production`;
    await callOk(vexil, 'PATCH', `${project}/environments/production`, org.token, {
      changeRequests: { required: true, approvals: 1 },
    });
    const agent = await server.connect((await createMember(vexil, org.orgId, 'Member')).token);
    const toggle = {
      org: 'acme',
      project: 'web',
      flag: 'new-checkout',
      environment: 'production',
      enabled: true,
    };

    const refused = await callTool(agent, 'toggle_flag', toggle);
    expect(refused.isError).toBe(true);
    const [summary, envelope, suggestion] = refused.content.map((part) =>
      part.type === 'text' ? part.text : '',
    );
    expect(summary).toMatch(/^change_request_required: /);
    expect(summary).toMatch(/Call propose_change_request with the arguments in the last text/);
    expect(JSON.parse(envelope ?? '')).toMatchObject({
      error: 'change_request_required',
      next_actions: [{ method: 'POST', path: `${project}/change-requests` }],
    });
    const { revision } = await callOk(vexil, 'GET', configuration, org.token);
    const proposal = JSON.parse(suggestion ?? '') as {
      tool: string;
      arguments: Record<string, unknown>;
    };
    expect(proposal).toMatchObject({
      tool: 'propose_change_request',
      arguments: {
        org: 'acme',
        project: 'web',
        environment: 'production',
        title: 'Turn "new-checkout" on in "production"',
        submit: true,
        changes: [
          {
            kind: 'flag',
            flagKey: 'new-checkout',
            baseRevision: revision,
            configuration: { enabled: true, rules: [] },
          },
        ],
      },
    });
    expect((await callOk(vexil, 'GET', configuration, org.token)).isEnabled).toBe(false);

    // No tool reviews: the agent's proposal waits for a person.
    const { tools } = await agent.listTools();
    expect(tools.filter((tool) => /review|approve|reject/.test(tool.name))).toEqual([]);
    const idempotencyKey = 'agent-proposal-1';
    const proposed = await output(agent, proposal.tool, { ...proposal.arguments, idempotencyKey });
    expect(proposed).toMatchObject({ number: 1, state: 'open', environmentKey: 'production' });
    // A retried proposal with the same key opens nothing new.
    expect(
      await output(agent, proposal.tool, { ...proposal.arguments, idempotencyKey }),
    ).toMatchObject({ number: 1 });
    expect(proposed.diff).toMatchObject([{ conflict: false }]);
    expect(
      await refusal(agent, 'apply_change_request', { org: 'acme', project: 'web', number: 1 }),
    ).toMatch(/^conflict: .*open/);

    await callOk(vexil, 'POST', `${project}/change-requests/1/reviews`, org.token, {
      decision: 'approve',
    });
    const applied = await output(agent, 'apply_change_request', {
      org: 'acme',
      project: 'web',
      number: 1,
    });
    expect(applied).toMatchObject({ number: 1, state: 'applied' });
    expect((await callOk(vexil, 'GET', configuration, org.token)).isEnabled).toBe(true);
    // Turning off stays direct for a Member (emergency off), from an agent too.
    expect(await output(agent, 'toggle_flag', { ...toggle, enabled: false })).toMatchObject({
      isEnabled: false,
    });

    const listed = await output(agent, 'list_change_requests', {
      org: 'acme',
      project: 'web',
      author: 'me',
    });
    expect(listed.items.map((item: { number: number }) => item.number)).toEqual([1]);
    expect(
      await output(agent, 'get_change_request', { org: 'acme', project: 'web', number: 1 }),
    ).toMatchObject({ title: 'Turn "new-checkout" on in "production"', state: 'applied' });
  });
});

describe.each(testDialects())('code reference tools on %s', (dialect) => {
  const DAY_MS = 86_400_000;
  const base = '/api/v1/orgs/acme/projects/web';
  const planArgs = { org: 'acme', project: 'web', flag: 'new-checkout' };
  let server: Awaited<ReturnType<typeof startVexil>>;
  let vexil: TestVexil;
  let token: string;
  let sdkKey: string;
  let viewer: Client;

  /** A reference as `vexil code-refs scan --format json` writes it. */
  const reference = (path: string, line: number, kind = 'call') => ({
    path,
    line,
    column: 3,
    kind,
    key: 'new-checkout',
    context: { before: ['// before'], line: `read('new-checkout')`, after: [] },
  });
  const upload = async (branch: string, references: ReturnType<typeof reference>[]) => {
    const response = await call(
      vexil,
      'PUT',
      `${base}/code-references/acme%2Fshop/branches/${branch}`,
      { token, body: { commit: `${branch}-sha`, scannedAt: new Date().toISOString(), references } },
    );
    expect(response.status).toBe(204);
  };
  const setEnvironment = async (env: string, body: Record<string, unknown>) => {
    const path = `${base}/flags/new-checkout/environments/${env}`;
    if ('enabled' in body)
      expect((await call(vexil, 'POST', `${path}/toggle`, { token, body })).status).toBe(204);
    else expect((await call(vexil, 'PATCH', path, { token, body })).status).toBe(200);
  };

  beforeAll(async () => {
    server = await startVexil(dialect);
    vexil = server.vexil;
    const org = await createOrg(vexil, 'acme');
    token = org.token;
    ({ sdkKey } = await createProjectWithFlag(vexil, org));
    viewer = await server.connect((await createMember(vexil, org.orgId, 'Viewer')).token);
  });
  afterAll(() => server.close());

  it('another organization’s token finds neither tool’s flag: not_found, never revealed', async () => {
    const outsider = await server.connect((await createOrg(vexil, 'globex')).token);
    for (const tool of ['list_code_references', 'flag_cleanup_plan'])
      expect(await refusal(outsider, tool, { ...planArgs, treatment: 'off' })).toBe(
        'not_found: Organization "acme" was not found.',
      );
  });

  it('before any scan: no references, and the plan says the places are unknown', async () => {
    expect(await output(viewer, 'list_code_references', planArgs)).toEqual({
      flagKey: 'new-checkout',
      repositories: [],
    });
    const plan = await output(viewer, 'flag_cleanup_plan', { ...planArgs, treatment: 'off' });
    expect(plan).toMatchObject({
      flagKey: 'new-checkout',
      flagType: 'Boolean',
      removalCandidate: null,
      treatment: 'off',
      keep: { variation: 'false', value: 'false', environments: ['development', 'production'] },
      refusal: null,
      scanned: false,
      places: [],
    });
    expect(plan.steps[0]).toMatch(/^No repository of the project was ever scanned/);
  });

  it('list_code_references answers as GET …/flags/{flag}/code-references, links included', async () => {
    await upload('main', [reference('src/App.tsx', 5, 'jsx'), reference('settings.py', 1)]);
    await upload('feature', [reference('src/App.tsx', 9, 'jsx')]);
    const patched = await call(vexil, 'PATCH', `${base}/code-references/repositories/acme%2Fshop`, {
      token,
      body: { sourceUrlTemplate: 'https://github.com/acme/shop/blob/{commit}/{path}#L{line}' },
    });
    expect(patched.status).toBe(200);
    const listed = await output(viewer, 'list_code_references', planArgs);
    const twin = await call(vexil, 'GET', `${base}/flags/new-checkout/code-references`, { token });
    expect(listed).toEqual(twin.body);
    expect(listed.repositories[0].branches.map((b: { name: string }) => b.name)).toEqual([
      'feature',
      'main',
    ]);
    expect(listed.repositories[0].branches[1].references[0]).toMatchObject({
      path: 'settings.py',
      url: 'https://github.com/acme/shop/blob/main-sha/settings.py#L1',
    });
  });

  it('a flag that is no removal candidate needs a treatment; its places are split by who changes them', async () => {
    const plan = await output(viewer, 'flag_cleanup_plan', planArgs);
    expect(plan).toMatchObject({
      treatment: null,
      keep: null,
      command: null,
      scanned: true,
      otherBranches: [{ repository: 'acme/shop', branch: 'feature', references: 1 }],
    });
    expect(plan.refusal).toMatch(/is not a removal candidate: pass treatment/);
    expect(
      plan.places.map((p: { path: string; handledBy: string }) => [p.path, p.handledBy]),
    ).toEqual([
      ['settings.py', 'a person'],
      ['src/App.tsx', 'vexil cleanup'],
    ]);
  });

  it('environments that would keep different values are refused, naming them', async () => {
    const flag = await call(vexil, 'GET', `${base}/flags/new-checkout`, { token });
    const variation = (key: string) =>
      (flag.body.variations as { id: string; key: string }[]).find((v) => v.key === key)!.id;
    await setEnvironment('development', { enabled: true });
    await setEnvironment('production', { enabled: true });
    await setEnvironment('development', { defaultVariationId: variation('false') });
    await setEnvironment('production', { defaultVariationId: variation('true') });
    const plan = await output(viewer, 'flag_cleanup_plan', { ...planArgs, treatment: 'on' });
    expect(plan.keep).toBeNull();
    expect(plan.command).toBeNull();
    expect(plan.refusal).toBe(
      'new-checkout keeps different values in different environments (development: false, production: true); pass --value',
    );
  });

  it('a removal candidate’s treatment decides the value, the command and the steps', async () => {
    await setEnvironment('development', { enabled: false });
    for (let day = 0; day < 4; day += 1) {
      const evaluated = await call(vexil, 'POST', '/v1/sdk/evaluate', {
        token: sdkKey,
        body: { flagKey: 'new-checkout', context: {} },
      });
      expect(evaluated.status).toBe(200);
      server.clock.advance(8 * DAY_MS);
    }
    const plan = await output(viewer, 'flag_cleanup_plan', planArgs);
    expect(plan).toMatchObject({
      removalCandidate: { status: 'Stale', treatment: true },
      treatment: 'on',
      keep: { variation: 'true', value: 'true', environments: ['production'] },
      refusal: null,
    });
    expect(plan.command).toBe(
      `npx vexil cleanup --flag new-checkout --treatment on --url ${vexil.config.publicUrl} --org acme --project web > cleanup.diff`,
    );
    expect(plan.steps[0]).toContain(plan.command);
    expect(plan.steps.join(' ')).toContain('Change by hand: acme/shop:settings.py:1, keeping true');
    expect(plan.steps.at(-1)).toMatch(/FLAG_STILL_REFERENCED/);

    // Once the default branch no longer reads it, it is safe to archive.
    const some = await output(viewer, 'list_removal_candidates', {
      org: 'acme',
      project: 'web',
      staleness: 'stale',
      references: 'some',
    });
    expect(some.items.map((c: { key: string }) => c.key)).toEqual(['new-checkout']);
    await upload('main', []);
    const none = await output(viewer, 'list_removal_candidates', {
      org: 'acme',
      project: 'web',
      staleness: 'stale',
      references: 'none',
    });
    expect(none.items).toMatchObject([{ key: 'new-checkout', codeReferences: 0 }]);
    const after = await output(viewer, 'flag_cleanup_plan', planArgs);
    expect(after.places).toEqual([]);
    expect(after.steps).toEqual([
      'No default branch reads "new-checkout" any more: it is safe to archive as far as code is concerned.',
      'Archive the flag (POST …/flags/new-checkout/archive).',
    ]);
  });

  it('bad arguments are invalid params (-32602); an unknown flag is the twin’s not_found', async () => {
    expect(
      await invalidParams(viewer, 'flag_cleanup_plan', { ...planArgs, treatment: 'maybe' }),
    ).toMatch(/Invalid arguments for tool flag_cleanup_plan: .* at treatment/);
    expect(
      await invalidParams(viewer, 'list_code_references', { org: 'acme', project: 'web' }),
    ).toMatch(/at flag/);
    expect(
      await invalidParams(viewer, 'list_removal_candidates', {
        org: 'acme',
        project: 'web',
        references: 'all',
      }),
    ).toMatch(/at references/);
    expect(
      await refusal(viewer, 'flag_cleanup_plan', { ...planArgs, flag: 'new-chekout' }),
    ).toMatch(/^not_found: /);
  });
});
