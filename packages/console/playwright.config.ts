import { defineConfig } from '@playwright/test';

/**
 * Browser journeys against the real server on SQLite (design record 023), and the webhook journey
 * on PostgreSQL too (design record 025), in Debian's Chromium:
 * Playwright's own browser download is not reachable from CI. Under CI a JSON report is written
 * for `.ci/run`'s pass/fail line.
 */
export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/server.ts',
  workers: 1,
  timeout: 90_000,
  expect: { timeout: 5_000 },
  reporter: process.env.PLAYWRIGHT_JSON_OUTPUT_FILE ? [['list'], ['json']] : 'list',
  use: {
    browserName: 'chromium',
    launchOptions: { executablePath: process.env.VEXIL_CHROMIUM ?? '/usr/bin/chromium' },
    trace: 'retain-on-failure',
  },
  projects: [
    // Every journey on SQLite, the default store.
    { name: 'sqlite' },
    // The webhook journey again with the server on PostgreSQL (design record 025), and the
    // change-request journeys, whose scheduled apply is claimed in the database (record 043).
    { name: 'postgres', testMatch: ['webhooks.spec.ts', 'change-requests.spec.ts'] },
  ],
});
