import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeature, type EvaluationContext, type FlagValue } from '@openfeature/server-sdk';
import { OpenFeature as WebOpenFeature } from '@openfeature/web-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, createTestVexil, type TestVexil } from '../../src/test-support/harness.js';
import { KNOWN_GAPS, NOT_RUN, SERVER_PROVIDER_ONLY } from './applicability.js';
import { conformanceTable, syncSdksDoc, type Provider, type Result } from './report.js';
import { createFlag, seedFlags } from './seed.js';
import type { Evaluator } from './steps.js';
import { runSteps } from './steps.js';
import { loadScenarios } from './suites.js';

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
const results = new Map<string, Result>();
const providers: Provider[] = ['server', 'web'];

/** Why a scenario is not run through `provider`, if it is not. */
function notRunBecause(scenario: (typeof scenarios)[number], provider: Provider) {
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
    const bearer = (key: string): [string, string][] => [['Authorization', `Bearer ${key}`]];

    await OpenFeature.setProviderAndWait(
      'server',
      new OFREPProvider({ baseUrl, headers: bearer(await sdkKey('ServerSide')) }),
    );
    const server = OpenFeature.getClient('server');
    evaluators.set('server', {
      status: () => server.providerStatus,
      evaluate: (type, key, fallback, context) => {
        switch (type) {
          case 'Boolean':
            return server.getBooleanDetails(key, fallback as boolean, context);
          case 'String':
            return server.getStringDetails(key, fallback as string, context);
          case 'Integer':
          case 'Float':
            return server.getNumberDetails(key, fallback as number, context);
          case 'Object':
            return server.getObjectDetails(
              key,
              fallback as Exclude<FlagValue, boolean | string | number>,
              context,
            );
        }
      },
    });

    // Static context: the web SDK evaluates every flag for the context it is given, then reads.
    await WebOpenFeature.setProviderAndWait(
      'web',
      new OFREPWebProvider({
        baseUrl,
        headers: bearer(await sdkKey('ClientSide')),
        cacheMode: 'disabled',
        pollInterval: 0,
      }),
    );
    const web = WebOpenFeature.getClient('web');
    evaluators.set('web', {
      status: () => web.providerStatus,
      evaluate: async (type, key, fallback, context: EvaluationContext) => {
        await WebOpenFeature.setContext('web', context);
        switch (type) {
          case 'Boolean':
            return web.getBooleanDetails(key, fallback as boolean);
          case 'String':
            return web.getStringDetails(key, fallback as string);
          case 'Integer':
          case 'Float':
            return web.getNumberDetails(key, fallback as number);
          case 'Object':
            return web.getObjectDetails(
              key,
              fallback as Exclude<FlagValue, boolean | string | number>,
            );
        }
      },
    });
  });

  afterAll(async () => {
    await OpenFeature.clearProviders();
    await WebOpenFeature.clearProviders();
    await vexil?.close();
  });

  scenarios.forEach((scenario, index) => {
    const title = `${scenario.file}: ${scenario.name}${scenario.example ? ` [${scenario.example}]` : ''}`;
    for (const provider of providers) {
      const id = `${index}:${provider}`;
      const skipped = notRunBecause(scenario, provider);
      if (skipped !== undefined) {
        results.set(id, { scenario, provider, outcome: 'not run', note: skipped });
        it.skip(`${title} (${provider} provider)`);
        continue;
      }
      const gap = KNOWN_GAPS[scenario.name];
      it(`${title} (${provider} provider)`, async () => {
        let failure: unknown;
        await runSteps(scenario.steps, evaluators.get(provider)!).catch((error: unknown) => {
          failure = error;
        });
        results.set(id, {
          scenario,
          provider,
          outcome: failure === undefined ? 'passed' : 'failed',
          ...(gap ? { note: gap } : {}),
        });
        if (gap === undefined && failure !== undefined) throw failure;
        if (gap !== undefined)
          expect(failure, `passes now: take "${scenario.name}" off KNOWN_GAPS`).toBeDefined();
      });
    }
  });

  it('every scenario named in applicability.ts exists in the suites', () => {
    const names = new Set(scenarios.flatMap((scenario) => [scenario.name, scenario.feature]));
    const named = [NOT_RUN, SERVER_PROVIDER_ONLY, KNOWN_GAPS].flatMap((list) => Object.keys(list));
    expect(named.filter((name) => !names.has(name))).toEqual([]);
  });

  it("docs/sdks.md shows this run's conformance table", async () => {
    expect(results.size).toBe(scenarios.length * providers.length);
    const ordered = [...results.entries()]
      .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
      .map(([, result]) => result);
    const update = process.env.VEXIL_UPDATE_CONFORMANCE === '1';
    const state = await syncSdksDoc(conformanceTable(ordered), update);
    expect(state, 'docs/sdks.md is stale: run this test with VEXIL_UPDATE_CONFORMANCE=1').not.toBe(
      'stale',
    );
  });
});
