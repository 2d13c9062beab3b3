import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callOk,
  createOrg,
  createProjectWithFlag,
  createTestVexil,
  testDialects,
  variationIdsByKey,
  type TestVexil,
} from '../test-support/harness.js';
import { ruleInWords } from '../management/targeting/rule-words.js';

const project = '/api/v1/orgs/acme/projects/web';
const flag = `${project}/flags/new-checkout`;

/** Issue 43, item 8: "Rule 1 added" in a flag's history said nothing of the rule. */
describe.each(testDialects())('an added rule in the flag history on %s', (dialect) => {
  let vexil: TestVexil;
  let token: string;

  beforeAll(async () => {
    vexil = await createTestVexil(dialect);
    const org = await createOrg(vexil);
    token = org.token;
    await createProjectWithFlag(vexil, org);
  });
  afterAll(() => vexil.close());

  it('names the rule by its description, else by what it matches', async () => {
    const ids = variationIdsByKey(await callOk(vexil, 'GET', flag, token));
    const segment = await callOk(vexil, 'POST', `${project}/segments`, token, {
      key: 'beta',
      conditions: [{ attribute: 'email', operator: 'EndsWith', values: ['@acme.test'] }],
    });
    const rules = `${flag}/environments/production/rules`;
    await callOk(vexil, 'POST', rules, token, {
      variationId: ids['true'],
      description: 'Staff first',
    });
    await callOk(vexil, 'POST', rules, token, {
      variationId: ids['true'],
      userSegmentId: segment.id,
      conditionGroups: [
        {
          conditions: [
            { attribute: 'country', operator: 'in', values: ['DE', 'AT'] },
            { attribute: 'plan', operator: 'Equals', values: ['pro'], negate: true },
          ],
        },
      ],
    });
    const history = await callOk(vexil, 'GET', `${flag}/history`, token);
    const added = (history.items as { description: string }[])
      .map((item) => item.description)
      .filter((description) => / added to flag/.test(description))
      .sort();
    expect(added).toEqual([
      'Rule 1 added to flag "new-checkout" in "production": "Staff first"',
      'Rule 2 added to flag "new-checkout" in "production": when the context is in segment beta ' +
        'and (country is one of DE or AT and plan is not pro)',
    ]);
  });

  // Applies the export of the project the test above built, rules and segment included.
  it('names the rule as flags as code adds it', async () => {
    const document = await callOk(vexil, 'GET', `${project}/export?format=json`, token);
    const environments = (document.environments as { key: string }[]).map(({ key }) => ({ key }));
    await callOk(vexil, 'POST', '/api/v1/orgs/acme/projects', token, {
      key: 'copy',
      name: 'Copy',
      environments,
    });
    const copy = '/api/v1/orgs/acme/projects/copy';
    await callOk(vexil, 'POST', `${copy}/apply`, token, {
      ...document,
      project: { ...document.project, key: 'copy' },
    });
    const history = await callOk(vexil, 'GET', `${copy}/flags/new-checkout/history`, token);
    const added = (history.items as { description: string }[])
      .map((item) => item.description)
      .filter((description) => /^Rule \d of flag .* added/.test(description))
      .sort();
    expect(added).toEqual([
      'Rule 1 of flag "new-checkout" in "production" added: "Staff first"',
      'Rule 2 of flag "new-checkout" in "production" added: when the context is in segment beta ' +
        'and (country is one of DE or AT and plan is not pro)',
    ]);
  });
});

describe('a rule in words', () => {
  const condition = (
    attribute: string,
    operator: 'In' | 'SemverGreaterThanOrEqual',
    values: string[],
  ) => ({
    id: attribute,
    attribute,
    operator,
    values,
    negate: false,
  });

  it('reads a rule without conditions as matching every context', () => {
    expect(ruleInWords({ description: '  ', segmentKey: null, conditionGroups: [] })).toBe(
      'for every context',
    );
  });

  it('brackets a group of several conditions only among others, with its own operator', () => {
    const either = {
      id: 'g1',
      operator: 'Or' as const,
      conditions: [
        condition('country', 'In', ['DE']),
        condition('app', 'SemverGreaterThanOrEqual', ['2.0.0']),
      ],
    };
    expect(ruleInWords({ description: null, segmentKey: null, conditionGroups: [either] })).toBe(
      'when country is one of DE or app version ≥ 2.0.0',
    );
    const single = {
      id: 'g2',
      operator: 'And' as const,
      conditions: [condition('plan', 'In', ['pro', 'team'])],
    };
    expect(
      ruleInWords({ description: null, segmentKey: null, conditionGroups: [either, single] }),
    ).toBe('when (country is one of DE or app version ≥ 2.0.0) and plan is one of pro or team');
  });
});
