import { CLIENT_VISIBLE_EVERY, type SdkKeys, type SeededConfiguration } from './seed.js';
import type { LoadScenario, NamedScenario } from './wrk.js';
import { required } from './required.js';

/** A measured route, with the share of the bare-Fastify ceiling it should reach (issue 3). */
export interface RouteScenario {
  name: string;
  scenario: LoadScenario;
  /** Expected HTTP status, checked once before loading. */
  status: number;
  /** For client evaluate: how many flags the answer must hold (else the figure means little). */
  expectedFlags?: number;
  /** Minimum ratio of its req/s to the ceiling's at the same connection count; null: no target. */
  target: number | null;
  /** The route records usage unless told the client reports its own reads (issue 5). */
  recordsUsage?: boolean;
}

const CONTEXT_COUNT = 1_000;
const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'CA', 'NL', 'BR', 'IN', 'CN', 'JP'];
const PLANS = ['free', 'pro', 'enterprise', 'pro', 'free'];
const VERSIONS = ['1.9.4', '2.0.0', '2.1.3', '2.10.0', '3.0.0', '3.2.1', '3.0.0-beta.1'];
const DOMAINS = ['acme.com', 'globex.com', 'example.org', 'mail.test'];

/**
 * Deterministic, varied user attributes: every rule and segment condition of the seeded
 * configuration matches some of them and misses others.
 */
/** The element at `n` of a non-empty list, counting round it. */
function cycle<T>(list: readonly T[], n: number): T {
  return required(list[n % list.length], 'list element');
}

function attributes(index: number) {
  const userId = index % 7 === 0 ? `beta-${index}` : `user-${index}`;
  return {
    userId,
    attributes: {
      country: cycle(COUNTRIES, index),
      plan: cycle(PLANS, index * 3),
      appVersion: cycle(VERSIONS, index * 5),
      email: `${index % 9 === 0 ? 'qa-' : 'user'}${index}@${DOMAINS[index % DOMAINS.length]}`,
      sessions: (index * 17) % 60,
    },
  };
}

/**
 * The four evaluation routes of issue 3: single-flag server evaluate (a different flag and
 * context per request), client evaluate of every client-visible flag, and the full configuration
 * download, answered in full (200) and as not modified (304, `If-None-Match` of `etag`).
 */
export function evaluationScenarios(seeded: SeededConfiguration, etag: string): RouteScenario[] {
  const server = { authorization: seeded.serverKey };
  const json = { 'content-type': 'application/json' };
  const clientVisible = Math.ceil(seeded.flagKeys.length / CLIENT_VISIBLE_EVERY);
  const contexts = Array.from({ length: CONTEXT_COUNT }, (_, index) => attributes(index));
  return [
    {
      name: 'server evaluate, 1 flag',
      status: 200,
      target: 0.6,
      recordsUsage: true,
      scenario: {
        method: 'POST',
        path: '/v1/sdk/evaluate',
        headers: { ...server, ...json },
        bodies: contexts.map((context, index) =>
          JSON.stringify({
            // A stride coprime with 500 visits every flag with varied contexts.
            flagKey: seeded.flagKeys[(index * 37) % seeded.flagKeys.length],
            context,
          }),
        ),
      },
    },
    {
      name: `client evaluate, ${clientVisible} flags`,
      status: 200,
      expectedFlags: clientVisible,
      target: 1 / 3,
      recordsUsage: true,
      scenario: {
        method: 'POST',
        path: '/v1/client/evaluate',
        headers: { authorization: seeded.clientKey, ...json },
        bodies: contexts.map(({ userId, attributes }) =>
          JSON.stringify({ context: { userId, ...attributes } }),
        ),
      },
    },
    {
      name: 'config download, 200',
      status: 200,
      target: null,
      scenario: { method: 'GET', path: '/v1/sdk/flags', headers: server, bodies: [] },
    },
    {
      // As SDKs ask for it: the document is held gzipped and sent as held (design record 012).
      name: 'config download, 200 gzip',
      status: 200,
      target: null,
      scenario: {
        method: 'GET',
        path: '/v1/sdk/flags',
        headers: { ...server, 'accept-encoding': 'gzip' },
        bodies: [],
      },
    },
    {
      name: 'config download, 304',
      status: 304,
      target: 0.6,
      scenario: {
        method: 'GET',
        path: '/v1/sdk/flags',
        headers: { ...server, 'if-none-match': etag },
        bodies: [],
      },
    },
  ];
}

/** `count` distinct user ids: `user-0`, `user-1`, … */
export const userIds = (count: number): string[] =>
  Array.from({ length: count }, (_, index) => `user-${index}`);

/**
 * Server evaluate of `flagKey` and client evaluate, named as `names` says, each sending the users
 * `userIds` in turn (one a request, no other attributes).
 */
export function evaluationsByUser(
  keys: SdkKeys,
  flagKey: string,
  userIds: readonly string[],
  names: { server: string; client: string },
): NamedScenario[] {
  const json = { 'content-type': 'application/json' };
  return [
    {
      name: names.server,
      scenario: {
        method: 'POST',
        path: '/v1/sdk/evaluate',
        headers: { ...json, authorization: keys.serverKey },
        bodies: userIds.map((userId) => JSON.stringify({ flagKey, context: { userId } })),
      },
    },
    {
      name: names.client,
      scenario: {
        method: 'POST',
        path: '/v1/client/evaluate',
        headers: { ...json, authorization: keys.clientKey },
        bodies: userIds.map((userId) => JSON.stringify({ context: { userId } })),
      },
    },
  ];
}

/**
 * The same route with `X-Service-Reports-Evaluations: 1`: the client reports its own reads, so
 * the server records no usage (spec: Evaluation API rule 1).
 */
export function withoutUsageRecording(route: RouteScenario): RouteScenario {
  return {
    ...route,
    name: `${route.name}, not recording`,
    scenario: {
      ...route.scenario,
      headers: { ...route.scenario.headers, 'x-service-reports-evaluations': '1' },
    },
  };
}

/**
 * A second reference: `POST /evaluate` on the bare Fastify server, with server evaluate's bodies
 * (flag keys of the seeded form; the route answers a constant whatever the key).
 */
export const BARE_EVALUATE_SCENARIO: LoadScenario = {
  method: 'POST',
  path: '/evaluate',
  headers: { 'content-type': 'application/json' },
  bodies: Array.from({ length: CONTEXT_COUNT }, (_, index) =>
    JSON.stringify({ flagKey: `flag-${(index * 37) % 500}`, context: attributes(index) }),
  ),
};

/** The ceiling: `GET /hello` on a bare server (see hello-server.ts). */
export const HELLO_SCENARIO: LoadScenario = {
  method: 'GET',
  path: '/hello',
  headers: {},
  bodies: [],
};

/**
 * Sends the scenario's first request once and checks the status, so a misconfigured run fails
 * loudly instead of measuring error pages.
 *
 * @throws Error naming the route, the status and the body
 */
export async function checkScenario(baseUrl: string, route: RouteScenario): Promise<void> {
  const { scenario } = route;
  const response = await fetch(baseUrl + scenario.path, {
    method: scenario.method,
    headers: scenario.headers,
    body: scenario.bodies[0],
  });
  const text = await response.text();
  if (response.status !== route.status) {
    throw new Error(
      `${route.name}: expected ${route.status}, got ${response.status}: ${text.slice(0, 500)}`,
    );
  }
  if (route.expectedFlags !== undefined) {
    const answered = Object.keys((JSON.parse(text) as { flags: object }).flags).length;
    if (answered !== route.expectedFlags) {
      throw new Error(`${route.name}: expected ${route.expectedFlags} flags, got ${answered}`);
    }
  }
}
