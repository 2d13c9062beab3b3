import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, createTestVexil, type TestVexil } from '../../src/test-support/harness.js';
import { KNOWN_GAPS, NOT_RUN, SERVER_PROVIDER_ONLY } from './applicability.js';
import { conformanceTable, syncSdksDoc, type Provider, type Result } from './report.js';
import { createFlag, seedFlags } from './seed.js';
import { closeEvaluators, serverEvaluator, webEvaluator, type Evaluator } from './evaluators.js';
import { runSteps } from './steps.js';
import { loadScenarios, type Scenario } from './suites.js';

/**
 * OpenFeature's own Gherkin conformance suites (open-feature/spec, copied unchanged into
 * `gherkin/`), run against a real Vexil listening on a port, with the flags of the suites'
 * `test-flags.json` created through the management API, and evaluated by the stock SDKs through
 * the stock OFREP providers. The run writes the conformance table of docs/sdks.md; with
 * VEXIL_UPDATE_CONFORMANCE=1 it rewrites a stale one, otherwise a stale table fails the run.
 * Design record 020.
 */

const PROJECT = '/api/v1/orgs/conformance/projects/suite';
const scenarios = loadScenarios();
/** Each scenario's result per provider, in suite order (index × providers + provider). */
const results: Result[] = [];
const providers: Provider[] = ['server', 'web'];

/** Why a scenario is not run through `provider`, if it is not. */
function notRunBecause(scenario: Scenario, provider: Provider) {
  return (
    NOT_RUN[scenario.feature] ??
    NOT_RUN[scenario.name] ??
    (provider === 'web' ? SERVER_PROVIDER_ONLY[scenario.name] : undefined)
  );
}

describe('OpenFeature conformance suites through OFREP (SQLite)', () => {
  let vexil: TestVexil;
  const evaluators = new Map<Provider, Evaluator>();

  beforeAll(async () => {
    vexil = await createTestVexil('sqlite');
    const { token } = await createOrg(vexil, 'conformance');
    const baseUrl = await vexil.app.listen({ port: 0, host: '127.0.0.1' });
    const manage = async (method: 'POST' | 'PATCH', path: string, body: unknown) => {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
      return text ? (JSON.parse(text) as unknown) : undefined;
    };
    await manage('POST', '/api/v1/orgs/conformance/projects', { key: 'suite', name: 'Suite' });
    for (const flag of seedFlags()) await createFlag(manage, PROJECT, 'production', flag);
    const sdkKey = async (type: 'ServerSide' | 'ClientSide') =>
      (
        (await manage('POST', `${PROJECT}/environments/production/sdk-keys`, {
          name: type,
          type,
        })) as { key: string }
      ).key;
    evaluators.set('server', await serverEvaluator(baseUrl, await sdkKey('ServerSide')));
    evaluators.set('web', await webEvaluator(baseUrl, await sdkKey('ClientSide')));
  });

  afterAll(async () => {
    await closeEvaluators();
    await vexil?.close();
  });

  scenarios.forEach((scenario, index) => {
    const title = `${scenario.file}: ${scenario.name}${scenario.example ? ` [${scenario.example}]` : ''}`;
    providers.forEach((provider, providerIndex) => {
      const slot = index * providers.length + providerIndex;
      const skipped = notRunBecause(scenario, provider);
      if (skipped !== undefined) {
        results[slot] = { scenario, provider, outcome: 'not run', note: skipped };
        it.skip(`${title} (${provider} provider)`);
        return;
      }
      const gap = KNOWN_GAPS[scenario.name];
      it(`${title} (${provider} provider)`, async () => {
        let failure: unknown;
        await runSteps(scenario.steps, evaluators.get(provider)!).catch((error: unknown) => {
          failure = error;
        });
        results[slot] = {
          scenario,
          provider,
          outcome: failure === undefined ? 'passed' : 'failed',
          ...(gap ? { note: gap } : {}),
        };
        if (gap === undefined && failure !== undefined) throw failure;
        if (gap !== undefined)
          expect(failure, `passes now: take "${scenario.name}" off KNOWN_GAPS`).toBeDefined();
      });
    });
  });

  it('every scenario named in applicability.ts exists in the suites', () => {
    const names = new Set(scenarios.flatMap((scenario) => [scenario.name, scenario.feature]));
    const named = [NOT_RUN, SERVER_PROVIDER_ONLY, KNOWN_GAPS].flatMap((list) => Object.keys(list));
    expect(named.filter((name) => !names.has(name))).toEqual([]);
  });

  it("docs/sdks.md shows this run's conformance table", async () => {
    const ran = results.filter((result) => result !== undefined);
    expect(ran.length, 'every scenario must run for the table').toBe(
      scenarios.length * providers.length,
    );
    const update = process.env.VEXIL_UPDATE_CONFORMANCE === '1';
    const state = await syncSdksDoc(conformanceTable(ran), update);
    expect(state, 'docs/sdks.md is stale: run this test with VEXIL_UPDATE_CONFORMANCE=1').not.toBe(
      'stale',
    );
  });
});
