/**
 * `npm run bench:fragment-memory` (issue 49, design record 062): the memory the bulk answers'
 * prepared fragments hold at 10,000 flags × 10 environments.
 *
 * Builds ten snapshots of 10,000 client-visible flags each (the shape of `bench:client-scale`:
 * one two-condition rule, and every tenth flag a 50/50 rollout, so that a flag is served up to
 * three outcomes), then answers client evaluate and OFREP bulk for varied contexts in every
 * environment until each flag has been served every outcome it has. Reported: the V8 heap and
 * the buffers outside it after a full collection, before the answers and after, and the
 * fragments held.
 */
import process from 'node:process';
import { setTimeout as delay } from 'node:timers/promises';
import type { EvaluationContext, SdkFlag } from '@vexil/engine';
import { clientFlagsBody } from '@vexil/server/dist/evaluation/client-flags.js';
import { ofrepBulkAnswer } from '@vexil/server/dist/evaluation/ofrep.js';
import { snapshotFromCopy, type Snapshot } from '@vexil/server/dist/evaluation/snapshots.js';
import { gitCommit, writeReport } from './report-file.js';

const FLAGS = 10_000;
const ENVIRONMENTS = 10;
const CONTEXTS = 40;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
/**
 * The V8 heap and the buffers outside it (where fragment bytes live), in MiB, after full
 * collections: buffers' memory is given back after the collection that finds them unreachable,
 * so the figure is read once two collections a moment apart agree.
 */
const heapMiB = async () => {
  let last = Number.NaN;
  for (;;) {
    gc();
    await delay(200);
    gc();
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    const now = (heapUsed + arrayBuffers) / 1024 / 1024;
    if (Math.abs(now - last) < 0.5) return now;
    last = now;
  }
};

const flag = (i: number): SdkFlag => ({
  key: `flag-${i}`,
  version: 1,
  type: 'Boolean',
  enabled: true,
  variations: [
    { key: 'true', value: true },
    { key: 'false', value: false },
  ],
  rules: [
    {
      id: `rule-${i}`,
      priority: 0,
      conditionGroups: [
        {
          operator: 'And',
          conditions: [
            { attribute: 'country', operator: 'In', values: ['NL', 'DE'], negate: false },
            { attribute: 'plan', operator: 'In', values: ['pro'], negate: false },
          ],
        },
      ],
      serve: { type: 'Fixed', variation: 'true' },
    },
  ],
  fallthrough:
    i % 10 === 0
      ? {
          type: 'Rollout',
          variations: [
            { key: 'true', weight: 50_000 },
            { key: 'false', weight: 50_000 },
          ],
        }
      : { type: 'Fixed', variation: 'false' },
  offVariation: 'false',
  prerequisites: [],
});

const flags = Array.from({ length: FLAGS }, (_, i) => flag(i));
const snapshots: Snapshot[] = [];
for (let e = 0; e < ENVIRONMENTS; e++)
  snapshots.push(
    await snapshotFromCopy({
      environmentId: `environment-${e}`,
      organizationId: 'org',
      projectId: 'project',
      clientSideKeys: flags.map((f) => f.key),
      configuration: { environment: `environment-${e}`, version: 1, flags, segments: [] },
    }),
  );
const contexts: EvaluationContext[] = Array.from({ length: CONTEXTS }, (_, i) => ({
  userId: `user-${i}`,
  targetingKey: `user-${i}`,
  country: ['NL', 'FR'][i % 2],
  plan: ['pro', 'free'][Math.floor(i / 2) % 2],
}));
// Compile every flag first, so the heap before holds the snapshots as they serve, fragments aside.
for (const snapshot of snapshots) clientFlagsBody(snapshot, {}, null);
for (const snapshot of snapshots) snapshot.clientEntries.forEach((entries) => (entries.length = 0));
/**
 * Drops the answers the snapshots remember (design record 065), which are not fragments: their
 * memos are keyed by the flag selection's array, replaced here by a copy.
 */
const forgetAnswers = () => {
  for (const snapshot of snapshots)
    (snapshot as { clientFlags: readonly number[] }).clientFlags = [...snapshot.clientFlags];
};
forgetAnswers();
const before = await heapMiB();
const streams = JSON.stringify([]);
for (const snapshot of snapshots)
  for (const context of contexts) {
    clientFlagsBody(snapshot, context, null);
    ofrepBulkAnswer(snapshot, snapshot.clientFlags, context, streams);
  }
const withAnswers = await heapMiB();
forgetAnswers();
const after = await heapMiB();
const fragments = snapshots.reduce(
  (sum, snapshot) => sum + snapshot.clientEntries.reduce((n, entries) => n + entries.length, 0),
  0,
);
const perFlag = Math.round(((after - before) * 1024 * 1024) / FLAGS / ENVIRONMENTS);
console.log(
  await writeReport({
    fragmentMemory: [
      '## Memory of the bulk answers’ fragments (`npm run bench:fragment-memory`, issue 49)',
      '',
      `Commit ${gitCommit()}, ${new Date().toISOString()}.`,
      '',
      `${FLAGS.toLocaleString('en')} client-visible flags × ${ENVIRONMENTS} environments, every flag ` +
        'served each of its outcomes (a rule match, a miss, and for every tenth flag either side of a ' +
        `50/50 rollout) in client evaluate and OFREP bulk, over ${CONTEXTS} contexts: ` +
        `${fragments.toLocaleString('en')} client fragments and as many OFREP ones.`,
      '',
      'Remembered answers (design record 065) are held beside the fragments, at most 4 MiB per ' +
        'memo (here two per environment: client evaluate and OFREP with a client key); they are ' +
        'measured, then dropped before the fragments are.',
      '',
      '| V8 heap and buffers, before | after | fragments | per flag and environment | remembered answers |',
      '| --------------------------- | ----- | --------- | ------------------------ | ------------------ |',
      `| ${before.toFixed(1)} MiB | ${after.toFixed(1)} MiB | **${(after - before).toFixed(1)} MiB** | ${perFlag} B | ${(withAnswers - after).toFixed(1)} MiB |`,
    ].join('\n'),
  }),
);
