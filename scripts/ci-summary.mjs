// Prints `.ci/run`'s closing lines: a "N passed, N failed, N skipped" line for each Node.js run and
// for both, then, when a run failed, why: the failed tests by name, the errors that belong to no
// test (vitest's unhandled errors, Playwright's global errors) and the lines that say which step
// stopped. CI keeps only the end of a run's output, so the reason has to be there.
//
//   node scripts/ci-summary.mjs <node20 log> <node24 log>
import console from 'node:console';
import { existsSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { stripVTControlCharacters } from 'node:util';

/** @typedef {{ status: string, fullName: string, failureMessages?: string[] }} UnitTest */
/** @typedef {{ name: string, status: string, message?: string, assertionResults?: UnitTest[] }} UnitFile */
/**
 * @typedef {{ numPassedTests: number, numFailedTests: number, numPendingTests: number,
 *   numTodoTests: number, testResults?: UnitFile[] }} UnitReport
 */
/** @typedef {{ projectName: string, status: string, results?: { error?: { message?: string } }[] }} BrowserTest */
/** @typedef {{ specs?: { file: string, title: string, tests?: BrowserTest[] }[], suites?: BrowserSuite[] }} BrowserSuite */
/**
 * @typedef {BrowserSuite & { errors?: { message?: string }[],
 *   stats: { expected: number, flaky: number, unexpected: number, skipped: number } }} BrowserReport
 */

const [node20Log, node24Log] = process.argv.slice(2);

/** @param {string} file @returns {unknown} */
const readJson = (file) => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null);
/** @param {string | undefined} file */
const readLog = (file) => (file && existsSync(file) ? readFileSync(file, 'utf8') : '');

const node20Unit = /** @type {UnitReport | null} */ (readJson('test-results.json'));
const node20Browser = /** @type {BrowserReport | null} */ (readJson('playwright-results.json'));
const node24Unit = /** @type {UnitReport | null} */ (readJson('test-results-node24.json'));

/** @param {UnitReport | null} unit @param {BrowserReport | null} browser */
function count(unit, browser) {
  const stats = browser?.stats;
  return {
    passed: (unit?.numPassedTests ?? 0) + (stats ? stats.expected + stats.flaky : 0),
    failed: (unit?.numFailedTests ?? 0) + (stats?.unexpected ?? 0),
    skipped: (unit ? unit.numPendingTests + unit.numTodoTests : 0) + (stats?.skipped ?? 0),
  };
}
/** @param {{passed: number, failed: number, skipped: number}} c */
const line = (c) => `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`;

const node20 = count(node20Unit, node20Browser);
const node24 = count(node24Unit, null);
console.log(`node20: ${line(node20)}`);
console.log(`node24: ${line(node24)}`);
console.log(
  line({
    passed: node20.passed + node24.passed,
    failed: node20.failed + node24.failed,
    skipped: node20.skipped + node24.skipped,
  }),
);

/** @param {UnitReport | null} unit @returns {string[]} */
function failedUnitTests(unit) {
  const failed = [];
  for (const file of unit?.testResults ?? []) {
    const tests = file.assertionResults ?? [];
    for (const test of tests.filter((t) => t.status === 'failed')) {
      failed.push(`${file.name}: ${test.fullName}\n    ${firstLine(test.failureMessages?.[0])}`);
    }
    // A file that failed to load or whose hooks failed has no failed test, only a message.
    if (file.status === 'failed' && !tests.some((t) => t.status === 'failed')) {
      failed.push(`${file.name}: ${firstLine(file.message)}`);
    }
  }
  return failed;
}

/** @param {BrowserSuite | null} suite @returns {string[]} */
function failedBrowserTests(suite) {
  const failed = [];
  for (const spec of suite?.specs ?? []) {
    for (const test of spec.tests ?? []) {
      if (test.status !== 'unexpected') continue;
      const error = test.results?.at(-1)?.error?.message;
      failed.push(`${spec.file}: ${spec.title} [${test.projectName}]\n    ${firstLine(error)}`);
    }
  }
  for (const child of suite?.suites ?? []) failed.push(...failedBrowserTests(child));
  return failed;
}

/** @param {string | undefined} text */
function firstLine(text) {
  return (
    stripVTControlCharacters(text ?? '')
      .trim()
      .split('\n')[0]
      ?.slice(0, 300) ?? ''
  );
}

/** Vitest's block of errors that no test owns, and the lines that name a failed step. */
function logReasons(/** @type {string} */ log) {
  const lines = stripVTControlCharacters(log).split('\n');
  const reasons = [];
  const unhandled = lines.findIndex((l) => /Unhandled (Error|Rejection)/.test(l));
  if (unhandled >= 0) reasons.push(...lines.slice(unhandled, unhandled + 30));
  reasons.push(
    ...lines.filter((l) =>
      /^(test-all:|npm error|npm ERR!|the Node\.js 24 run failed)|Errors\s+\d+ error/.test(
        l.trim(),
      ),
    ),
  );
  return reasons;
}

const failedRun = process.env.CI_STATUS !== '0' || process.env.CI_NODE24_STATUS !== '0';
if (failedRun) {
  console.log('---- why this run failed ----');
  console.log(`node20 exit ${process.env.CI_STATUS}, node24 exit ${process.env.CI_NODE24_STATUS}`);
  const failedTests = [
    ...failedUnitTests(node20Unit).map((t) => `node20 ${t}`),
    ...failedBrowserTests(node20Browser).map((t) => `node20 browser ${t}`),
    ...failedUnitTests(node24Unit).map((t) => `node24 ${t}`),
  ];
  for (const failed of failedTests.slice(0, 20)) console.log(failed);
  for (const error of node20Browser?.errors ?? []) {
    console.log(`node20 browser, outside any test: ${firstLine(error.message)}`);
  }
  for (const [name, log] of [
    ['node20', readLog(node20Log)],
    ['node24', readLog(node24Log)],
  ]) {
    const reasons = [...new Set(logReasons(log))].slice(0, 40);
    if (reasons.length > 0) console.log(`${name} log:\n${reasons.join('\n')}`);
  }
}
