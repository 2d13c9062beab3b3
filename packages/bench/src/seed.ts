/**
 * Seeds the benchmark's configuration through the management API, the way a user would: one
 * project, 20 segments, 500 flags with three targeting rules each in production (regex, semver,
 * numeric, set and prefix operators, some behind a segment, some rolled out to a percentage),
 * all switched on, and a server-side and a client-side SDK key.
 */
import { required } from './required.js';

export const ORG = 'bench';
export const PROJECT = 'shop';
export const ENVIRONMENT = 'production';
export const FLAG_COUNT = 500;
/** Every tenth flag is visible to client SDKs: 50 of 500. */
export const CLIENT_VISIBLE_EVERY = 10;
export const SEGMENT_COUNT = 20;
export const RULES_PER_FLAG = 3;
/** Requests in flight at once while seeding; enough to overlap round trips, not to swamp. */
const SEED_CONCURRENCY = 8;

/** What the load scenarios need from the seeded configuration. */
export interface SeededConfiguration {
  serverKey: string;
  clientKey: string;
  flagKeys: string[];
  /** Features the running server did not offer yet (their routes answered 404). */
  notes: string[];
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** Calls the management API of organization {@link ORG} as its Owner. */
export class ManagementClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  /** POSTs `body` to `path`, relative to `/api/v1/orgs/{ORG}`. */
  async post(path: string, body: unknown): Promise<Answer> {
    const { status, text } = await this.call('POST', path, body);
    return { status, body: parsed(text) };
  }

  /**
   * Sends `method` to `path`, relative to `/api/v1/orgs/{ORG}`, with `body` as JSON (none when
   * `undefined`), and insists on `expected`; any other answer aborts the benchmark with its body.
   * @returns the answer's JSON body, `{}` when empty
   */
  async send(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH',
    path: string,
    body: unknown,
    expected: number,
  ): Promise<Record<string, unknown>> {
    const { status, text } = await this.call(method, path, body);
    if (status !== expected) throw new Error(`${method} ${path} answered ${status}: ${text}`);
    return parsed(text);
  }

  /** POSTs and insists on `expected`; any other answer aborts the benchmark with its body. */
  async create(path: string, body: unknown, expected = 201): Promise<Record<string, unknown>> {
    const answer = await this.post(path, body);
    if (answer.status !== expected) {
      throw new Error(`POST ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
    return answer.body;
  }

  /** The raw answer to `method` on `path`, with `body` as JSON unless `undefined`. */
  private async call(
    method: string,
    path: string,
    body: unknown,
  ): Promise<{ status: number; text: string }> {
    const response = await fetch(`${this.baseUrl}/api/v1/orgs/${ORG}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  }
}

/** An answer's JSON body, `{}` when empty. */
const parsed = (text: string): Record<string, unknown> =>
  text ? (JSON.parse(text) as Record<string, unknown>) : {};

/** True when the server has no such route at all (as opposed to a missing resource). */
function isMissingRoute(answer: Answer): boolean {
  const { message } = answer.body;
  return answer.status === 404 && typeof message === 'string' && message.startsWith('No route');
}

function segmentBody(index: number) {
  const shapes = [
    {
      conditionLogic: 'And',
      conditions: [
        { attribute: 'country', operator: 'In', values: ['DE', 'FR', 'NL'], negate: false },
        { attribute: 'plan', operator: 'Equals', values: ['pro'], negate: false },
      ],
    },
    {
      conditionLogic: 'Or',
      conditions: [
        {
          attribute: 'email',
          operator: 'EndsWith',
          values: ['@acme.com', '@globex.com'],
          negate: false,
        },
        {
          attribute: 'sessions',
          operator: 'GreaterThan',
          values: [String(10 + index)],
          negate: false,
        },
      ],
    },
    {
      conditionLogic: 'And',
      conditions: [
        {
          attribute: 'appVersion',
          operator: 'SemverGreaterThanOrEqual',
          values: ['2.1.0'],
          negate: false,
        },
        { attribute: 'country', operator: 'In', values: ['CN', 'RU'], negate: true },
      ],
    },
    {
      conditionLogic: 'Or',
      conditions: [
        { attribute: 'email', operator: 'MatchesRegex', values: ['^qa-[0-9]+@'], negate: false },
        { attribute: 'userId', operator: 'StartsWith', values: ['beta-'], negate: false },
      ],
    },
  ];
  return { key: `segment-${index}`, name: `Segment ${index}`, ...shapes[index % shapes.length] };
}

function flagBody(index: number) {
  const base = {
    key: `flag-${index}`,
    name: `Flag ${index}`,
    clientSideVisible: index % CLIENT_VISIBLE_EVERY === 0,
  };
  // A quarter are multivariate String flags, the rest Boolean.
  if (index % 4 !== 3) return base;
  return {
    ...base,
    type: 'String',
    variations: ['control', 'treatment-a', 'treatment-b'].map((key) => ({ key, value: key })),
    offVariationKey: 'treatment-b',
  };
}

/**
 * {@link RULES_PER_FLAG} rules whose conditions cover most operators; the second also needs a
 * segment (when the server has segments).
 */
function ruleBodies(index: number, variationIds: string[], segmentIds: string[]) {
  const served = (n: number) => required(variationIds[n % variationIds.length], 'variation');
  const condition = (attribute: string, operator: string, values: string[]) => ({
    attribute,
    operator,
    values,
    negate: false,
  });
  return [
    {
      description: 'European pro users on the new app',
      variationId: served(0),
      rolloutPercentage: null,
      userSegmentId: null,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            condition('country', 'In', ['DE', 'FR']),
            condition('plan', 'Equals', ['pro']),
            condition('appVersion', 'SemverGreaterThanOrEqual', ['2.0.0']),
          ],
        },
      ],
    },
    {
      description: 'Staff and heavy users, half of them',
      variationId: served(1),
      rolloutPercentage: 50,
      userSegmentId: segmentIds[index % segmentIds.length] ?? null,
      conditionGroups: [
        {
          operator: 'Or',
          conditions: [
            condition('email', 'MatchesRegex', ['@(acme|globex)\\.com$']),
            condition('sessions', 'GreaterThan', [String(20 + (index % 30))]),
            condition('plan', 'Equals', ['enterprise']),
          ],
        },
      ],
    },
    {
      description: 'Beta testers on 3.x',
      variationId: served(2),
      rolloutPercentage: index % 100,
      userSegmentId: null,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            condition('appVersion', 'SemverGreaterThan', ['3.0.0']),
            condition('userId', 'StartsWith', ['beta-']),
            condition('country', 'In', ['US', 'CA', 'GB']),
          ],
        },
      ],
    },
  ];
}

/** Runs `work` over `items` with at most `limit` calls in flight; rejects on the first failure. */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(required(items[next++], 'item'));
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Seeds the configuration on the service at `baseUrl` with the Owner token `token`. Tolerates a
 * server without the segment or rule routes (it seeds without them and says so in `notes`).
 *
 * @throws Error on any other unexpected answer
 */
export async function seedConfiguration(
  baseUrl: string,
  token: string,
): Promise<SeededConfiguration> {
  const client = new ManagementClient(baseUrl, token);
  const notes: string[] = [];
  await client.create('/projects', { key: PROJECT, name: 'Shop' });
  const base = `/projects/${PROJECT}`;

  const segmentIds: string[] = [];
  const firstSegment = await client.post(`${base}/segments`, segmentBody(0));
  if (isMissingRoute(firstSegment)) {
    notes.push('segments: the server has no segment routes yet; seeded without segments');
  } else {
    if (firstSegment.status !== 201) {
      throw new Error(
        `POST segments answered ${firstSegment.status}: ${JSON.stringify(firstSegment.body)}`,
      );
    }
    segmentIds.push(String(firstSegment.body.id));
    for (let index = 1; index < SEGMENT_COUNT; index++) {
      const segment = await client.create(`${base}/segments`, segmentBody(index));
      segmentIds.push(String(segment.id));
    }
  }

  let rulesAvailable = true;
  const seedFlag = async (index: number) => {
    const body = flagBody(index);
    const flag = await client.create(`${base}/flags`, body);
    const variationIds = (flag.variations as { id: string }[]).map((variation) => variation.id);
    const flagPath = `${base}/flags/${body.key}/environments/${ENVIRONMENT}`;
    for (const rule of rulesAvailable ? ruleBodies(index, variationIds, segmentIds) : []) {
      const answer = await client.post(`${flagPath}/rules`, rule);
      if (isMissingRoute(answer)) {
        rulesAvailable = false;
        notes.push(
          'rules: the server has no targeting-rule routes yet; seeded flags without rules',
        );
        break;
      }
      if (answer.status !== 201) {
        throw new Error(`POST rules answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
    }
    await client.create(`${flagPath}/toggle`, { enabled: true }, 204);
  };
  const indexes = Array.from({ length: FLAG_COUNT }, (_, index) => index);
  // The first flag alone, so a missing rule route is found once rather than by eight workers.
  await seedFlag(0);
  await forEachConcurrently(indexes.slice(1), SEED_CONCURRENCY, seedFlag);

  const keyPath = `${base}/environments/${ENVIRONMENT}/sdk-keys`;
  const serverKey = await client.create(keyPath, { name: 'bench server', type: 'ServerSide' });
  const clientKey = await client.create(keyPath, { name: 'bench client', type: 'ClientSide' });
  return {
    serverKey: String(serverKey.key),
    clientKey: String(clientKey.key),
    flagKeys: indexes.map((index) => `flag-${index}`),
    notes,
  };
}

/** A small project of its own, for the streaming and webhook measurements. */
export interface SmallProject {
  /** Management API path of the project, relative to the organization. */
  path: string;
  serverKey: string;
  flagKeys: string[];
  /** Whether each flag is on in production now; kept up to date by whoever toggles it. */
  enabled: Map<string, boolean>;
}

/**
 * Creates project `key` (default environments) with `flagCount` Boolean flags switched on in
 * production, without rules, and a server-side SDK key for production.
 */
export async function seedSmallProject(
  client: ManagementClient,
  key: string,
  flagCount: number,
): Promise<SmallProject> {
  await client.create('/projects', { key, name: key });
  const path = `/projects/${key}`;
  const flagKeys = Array.from({ length: flagCount }, (_, index) => `${key}-flag-${index}`);
  await forEachConcurrently(flagKeys, SEED_CONCURRENCY, async (flagKey) => {
    await client.create(`${path}/flags`, { key: flagKey, name: flagKey });
    await client.create(
      `${path}/flags/${flagKey}/environments/${ENVIRONMENT}/toggle`,
      { enabled: true },
      204,
    );
  });
  const serverKey = await client.create(`${path}/environments/${ENVIRONMENT}/sdk-keys`, {
    name: `${key} server`,
    type: 'ServerSide',
  });
  return {
    path,
    serverKey: String(serverKey.key),
    flagKeys,
    enabled: new Map(flagKeys.map((flagKey) => [flagKey, true])),
  };
}

/**
 * Flips `flagKey` of `project` in production (on → off, off → on): always a real change.
 *
 * @throws Error when the toggle does not answer 204
 */
export async function flipFlag(
  client: ManagementClient,
  project: SmallProject,
  flagKey: string,
): Promise<void> {
  const enabled = !project.enabled.get(flagKey);
  const path = `${project.path}/flags/${flagKey}/environments/${ENVIRONMENT}/toggle`;
  await client.create(path, { enabled }, 204);
  project.enabled.set(flagKey, enabled);
}

/** The SDK keys of a project's production environment. */
export interface SdkKeys {
  serverKey: string;
  clientKey: string;
}

/**
 * Creates the flags `flagKeys` in the project at `projectPath` (relative to the organization),
 * client-visible, switched on in production and serving `false`; with `halfTrueFirst`, the
 * first serves `true` to 50% instead, what a release plan's or an experiment's first 50% serves,
 * so that a node without one evaluates like a node with it.
 */
export async function seedClientVisibleFlags(
  client: ManagementClient,
  projectPath: string,
  flagKeys: readonly string[],
  halfTrueFirst: boolean,
): Promise<void> {
  for (const [index, key] of flagKeys.entries()) {
    const flag = await client.send(
      'POST',
      `${projectPath}/flags`,
      { key, clientSideVisible: true },
      201,
    );
    // The fallthrough serves `false`, so a plan or an experiment can serve `true`.
    const variations = flag.variations as { key: string; id: string }[];
    const variationId = (variationKey: string) =>
      required(
        variations.find((variation) => variation.key === variationKey),
        `${variationKey} variation`,
      ).id;
    const environment = `${projectPath}/flags/${key}/environments/${ENVIRONMENT}`;
    await client.send('PATCH', environment, { defaultVariationId: variationId('false') }, 200);
    if (halfTrueFirst && index === 0) {
      const rollout = [
        { variationId: variationId('true'), weight: 50_000 },
        { variationId: variationId('false'), weight: 50_000 },
      ];
      await client.send('PATCH', environment, { strategy: 'PercentageRollout', rollout }, 200);
    }
    await client.send('POST', `${environment}/toggle`, { enabled: true }, 204);
  }
}

/** Creates a server-side and a client-side SDK key for production in the project at `projectPath`. */
export async function createSdkKeys(
  client: ManagementClient,
  projectPath: string,
): Promise<SdkKeys> {
  const keys = `${projectPath}/environments/${ENVIRONMENT}/sdk-keys`;
  const serverKey = await client.create(keys, { name: 'server', type: 'ServerSide' });
  const clientKey = await client.create(keys, { name: 'client', type: 'ClientSide' });
  return { serverKey: String(serverKey.key), clientKey: String(clientKey.key) };
}

/** The experiment the experiment benchmarks run. */
export const EXPERIMENT = 'bigger-button';

/**
 * Creates the metrics in the project at `projectPath`, each higher-is-better.
 * @returns their ids, in order
 */
export async function createMetrics(
  client: ManagementClient,
  projectPath: string,
  metrics: readonly Record<string, string>[],
): Promise<string[]> {
  const ids = [];
  for (const metric of metrics) {
    const body = { ...metric, direction: 'higher_is_better' };
    ids.push(String((await client.send('POST', `${projectPath}/metrics`, body, 201)).id));
  }
  return ids;
}

/**
 * Creates experiment {@link EXPERIMENT} on the flag environment at `environmentPath`, 50/50 on
 * `false` (the control) and `true`, with metric `checkout` first and `secondaryMetrics`, and
 * starts it.
 * @returns the started experiment, and the path of its results
 */
export async function startExperiment(
  client: ManagementClient,
  environmentPath: string,
  secondaryMetrics: string[],
): Promise<{ started: Record<string, unknown>; resultsPath: string }> {
  const experiments = `${environmentPath}/experiments`;
  await client.send(
    'POST',
    experiments,
    {
      key: EXPERIMENT,
      name: 'Bigger button',
      variations: [
        { key: 'false', weight: 5_000 },
        { key: 'true', weight: 5_000 },
      ],
      controlVariation: 'false',
      primaryMetric: 'checkout',
      secondaryMetrics,
    },
    201,
  );
  const started = await client.send('POST', `${experiments}/${EXPERIMENT}/start`, {}, 200);
  return { started, resultsPath: `${experiments}/${EXPERIMENT}/results` };
}
