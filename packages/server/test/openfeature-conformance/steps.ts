import { CucumberExpression, ParameterTypeRegistry } from '@cucumber/cucumber-expressions';
import type { PickleStep } from '@cucumber/messages';
import type { EvaluationDetails, FlagValue, JsonValue } from '@openfeature/core';
import { expect } from 'vitest';
import type { Evaluator, FlagType } from './evaluators.js';

/** What one scenario has set up and seen so far. */
class World {
  context: Record<string, JsonValue> = {};
  flag: { type: FlagType; key: string; fallback: FlagValue } | undefined;
  pending: Promise<EvaluationDetails<FlagValue>> | undefined;
  evaluated: EvaluationDetails<FlagValue> | undefined;

  constructor(readonly evaluator: Evaluator) {}

  /** The flag the scenario named. */
  get given(): { type: FlagType; key: string; fallback: FlagValue } {
    if (!this.flag) throw new Error('no flag given');
    return this.flag;
  }

  get details(): EvaluationDetails<FlagValue> {
    if (!this.evaluated) throw new Error('no flag has been evaluated yet');
    return this.evaluated;
  }

  /** Starts evaluating the given flag for `context` (the scenario's context by default). */
  start(context: Record<string, JsonValue> = this.context): Promise<EvaluationDetails<FlagValue>> {
    const { type, key, fallback } = this.given;
    return this.evaluator.evaluate(type, key, fallback, context);
  }

  async evaluate(context?: Record<string, JsonValue>): Promise<void> {
    this.evaluated = await this.start(context);
  }

  /** Names the flag and evaluates it: the deprecated suite's steps do both at once. */
  async evaluateFlag(type: FlagType, key: string, fallback: FlagValue): Promise<void> {
    this.flag = { type, key, fallback };
    await this.evaluate();
  }
}

/** A value written in a feature file, read as `type` (`Boolean`, `Integer`, `Object`, …). */
function typed(type: string, text: string): JsonValue {
  switch (type) {
    case 'Boolean':
      if (text !== 'true' && text !== 'false') throw new Error(`not a Boolean: "${text}"`);
      return text === 'true';
    case 'Integer':
    case 'Float':
      if (!Number.isFinite(Number(text))) throw new Error(`not a number: "${text}"`);
      return Number(text);
    case 'Object':
      return JSON.parse(text) as JsonValue;
    default:
      return text;
  }
}

type StepRun = (world: World, ...args: unknown[]) => unknown;

interface StepDefinition {
  expression: CucumberExpression;
  run: StepRun;
}

const parameterTypes = new ParameterTypeRegistry();
const definitions: StepDefinition[] = [];

/** Defines a step by a Cucumber expression; a data table arrives as a last `string[][]`. */
function step<A extends unknown[]>(text: string, run: (world: World, ...args: A) => unknown) {
  definitions.push({
    expression: new CucumberExpression(text, parameterTypes),
    run: run as StepRun,
  });
}

const asFlagType = (word: string): FlagType => {
  if (!['Boolean', 'String', 'Integer', 'Float', 'Object'].includes(word))
    throw new Error(`unknown flag type "${word}"`);
  return word as FlagType;
};

// --- evaluation_v2.feature and metadata.feature -------------------------------------------------

step('a stable provider', (w) => expect(w.evaluator.status()).toBe('READY'));

step(
  'a {word}-flag with key {string} and a fallback value {string}',
  (w, word: string, key: string, fallback: string) => {
    const type = asFlagType(word);
    w.flag = { type, key, fallback: typed(type, fallback) };
  },
);

step(
  'a context containing a key {string}, with type {string} and with value {string}',
  (w, key: string, type: string, value: string) => {
    w.context[key] = typed(type, value);
  },
);

step('a context containing a key {string} with null value', (w, key: string) => {
  w.context[key] = null;
});

step('the flag was evaluated with details', (w) => w.evaluate());

step('the flag was evaluated with details asynchronously', (w) => {
  w.pending = w.start();
});

step('the evaluation should complete without blocking', async (w) => {
  expect(w.pending).toBeInstanceOf(Promise);
  w.evaluated = await w.pending;
});

step('the resolved details value should be {string}', (w, value: string) => {
  expect(w.details.value).toEqual(typed(w.given.type, value));
});

step('the reason should be {string}', (w, reason: string) => {
  expect(w.details.reason).toBe(reason);
});

step('the error-code should be {string}', (w, code: string) => {
  expect(w.details.errorCode).toBe(code);
});

step('the flag key should be {string}', (w, key: string) => {
  expect(w.details.flagKey).toBe(key);
});

step('the variant should be {string}', (w, variant: string) => {
  expect(w.details.variant).toBe(variant);
});

step('the resolved metadata should contain', (w, table: string[][]) => {
  for (const [key = '', type = '', value = ''] of table.slice(1))
    expect(w.details.flagMetadata[key], key).toEqual(typed(type, value));
});

step('the resolved metadata is empty', (w) => {
  expect(w.details.flagMetadata).toEqual({});
});

// --- evaluation.feature (deprecated) ------------------------------------------------------------

step(
  'a boolean flag with key {string} is evaluated with (details and )default value {string}',
  (w, key: string, fallback: string) => w.evaluateFlag('Boolean', key, typed('Boolean', fallback)),
);
step(
  'a string flag with key {string} is evaluated with (details and )default value {string}',
  (w, key: string, fallback: string) => w.evaluateFlag('String', key, fallback),
);
step(
  'an integer flag with key {string} is evaluated with (details and )default value {int}',
  (w, key: string, fallback: number) => w.evaluateFlag('Integer', key, fallback),
);
step(
  'a float flag with key {string} is evaluated with (details and )default value {float}',
  (w, key: string, fallback: number) => w.evaluateFlag('Float', key, fallback),
);
step(
  'an object flag with key {string} is evaluated with (details and )a null default value',
  (w, key: string) => w.evaluateFlag('Object', key, null),
);

step('the resolved boolean value should be {string}', (w, value: string) => {
  expect(w.details.value).toBe(typed('Boolean', value));
});
step('the resolved string value should be {string}', (w, value: string) => {
  expect(w.details.value).toBe(value);
});
step('the resolved integer value should be {int}', (w, value: number) => {
  expect(w.details.value).toBe(value);
});
step('the resolved float value should be {float}', (w, value: number) => {
  expect(w.details.value).toBe(value);
});
step(
  'the resolved object (details )value should be contain fields {string}, {string}, and {string}, with values {string}, {string} and {int}, respectively',
  (
    w,
    bool: string,
    text: string,
    int: string,
    boolValue: string,
    textValue: string,
    intValue: number,
  ) => {
    expect(w.details.value).toMatchObject({
      [bool]: typed('Boolean', boolValue),
      [text]: textValue,
      [int]: intValue,
    });
  },
);

for (const [type, parameter] of [
  ['boolean', '{string}'],
  ['string', '{string}'],
  ['integer', '{int}'],
  ['float', '{float}'],
] as const) {
  step(
    `the resolved ${type} details value should be ${parameter}, the variant should be {string}, and the reason should be {string}`,
    (w, value: string | number, variant: string, reason: string) => {
      const expected = type === 'boolean' ? typed('Boolean', String(value)) : value;
      expect(w.details).toMatchObject({ value: expected, variant, reason });
    },
  );
}

step(
  'the variant should be {string}, and the reason should be {string}',
  (w, variant: string, reason: string) => {
    expect(w.details).toMatchObject({ variant, reason });
  },
);

step(
  'context contains keys {string}, {string}, {string}, {string} with values {string}, {string}, {int}, {string}',
  (w, ...entries: (string | number)[]) => {
    for (let i = 0; i < 4; i++) w.context[String(entries[i])] = entries[i + 4] ?? null;
  },
);

step(
  'a flag with key {string} is evaluated with default value {string}',
  (w, key: string, fallback: string) => w.evaluateFlag('String', key, fallback),
);

step('the resolved string response should be {string}', (w, value: string) => {
  expect(w.details.value).toBe(value);
});

step('the resolved flag value is {string} when the context is empty', async (w, value: string) => {
  await w.evaluate({});
  expect(w.details.value).toBe(value);
});

step(
  'a non-existent string flag with key {string} is evaluated with details and a fallback value {string}',
  (w, key: string, fallback: string) => w.evaluateFlag('String', key, fallback),
);

step(
  'a string flag with key {string} is evaluated as an integer, with details and a fallback value {int}',
  (w, key: string, fallback: number) => w.evaluateFlag('Integer', key, fallback),
);

step('the default {word} value should be returned', (w) => {
  expect(w.details.value).toEqual(w.given.fallback);
});

for (const error of ['a missing flag', 'a type mismatch']) {
  step(
    `the reason should indicate an error and the error code should indicate ${error} with {string}`,
    (w, code: string) => {
      expect(w.details).toMatchObject({ reason: 'ERROR', errorCode: code });
    },
  );
}

/** The one step definition matching `text`, with its arguments. */
function definitionFor(text: string): { run: StepRun; args: unknown[] } {
  const matches = definitions.flatMap((definition) => {
    const args = definition.expression.match(text);
    return args ? [{ run: definition.run, args: args.map((arg) => arg.getValue(null)) }] : [];
  });
  if (matches.length !== 1)
    throw new Error(`${matches.length === 0 ? 'undefined' : 'ambiguous'} step: "${text}"`);
  return matches[0]!;
}

/** Runs a scenario's steps in order against `evaluator`; throws at the first that fails. */
export async function runSteps(steps: readonly PickleStep[], evaluator: Evaluator): Promise<void> {
  const world = new World(evaluator);
  for (const pickleStep of steps) {
    const { run, args } = definitionFor(pickleStep.text);
    const table = pickleStep.argument?.dataTable?.rows.map((row) =>
      row.cells.map((cell) => cell.value),
    );
    await run(world, ...args, ...(table ? [table] : []));
  }
}
