import AxeBuilder from '@axe-core/playwright';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';

/** True inside a test of the `postgres` project (playwright.config.ts). */
function onPostgres(): boolean {
  return test.info().project.name === 'postgres';
}

/**
 * The server started by global setup for the running test's project (SQLite, or PostgreSQL in
 * the `postgres` project), and its first (Owner) token.
 */
export const server = {
  get url(): string {
    return (onPostgres() ? process.env.VEXIL_E2E_POSTGRES_URL : process.env.VEXIL_E2E_URL)!;
  },
  get token(): string {
    return (onPostgres() ? process.env.VEXIL_E2E_POSTGRES_TOKEN : process.env.VEXIL_E2E_TOKEN)!;
  },
  /** The Owner's address and password, for password sign-in. */
  get email(): string {
    return process.env.VEXIL_E2E_EMAIL!;
  },
  get password(): string {
    return process.env.VEXIL_E2E_PASSWORD!;
  },
};

/** A management API call as a script would make it, with the Owner token. */
export async function apiCall<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${server.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * Fails on serious or critical axe-core violations of the page once its animations have ended,
 * with the experimental `label-content-name-mismatch` (WCAG 2.5.3: a control's name contains its
 * visible text, so speech users can say what they see) enabled.
 */
export async function expectAccessible(page: Page): Promise<void> {
  // Axe measures colours as they are painted: a dialog still fading in fails colour contrast. So
  // wait for every finite animation and transition to end (spinners run forever).
  await page.waitForFunction(() =>
    document
      .getAnimations()
      .every(
        (animation) =>
          animation.playState !== 'running' ||
          animation.effect?.getComputedTiming().endTime === Infinity,
      ),
  );
  const { violations } = await new AxeBuilder({ page })
    .options({ rules: { 'label-content-name-mismatch': { enabled: true } } })
    .analyze();
  const severe = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    severe.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
  ).toEqual([]);
}

/**
 * Signs in through the sign-in page by pasting a token ("Use an API token"; the Owner's unless
 * given), as a person does.
 */
export async function signIn(page: Page, token: string = server.token): Promise<void> {
  await page.goto(`${server.url}/sign-in`);
  await page.getByRole('button', { name: 'Use an API token' }).click();
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in with token' }).click();
  await expect(page.getByRole('heading', { name: 'Flags' })).toBeVisible();
}

/** Signs in with e-mail and password on the sign-in page (a session cookie). */
export async function signInWithPassword(
  page: Page,
  email: string,
  password: string,
): Promise<void> {
  await page.goto(`${server.url}/sign-in`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Flags' })).toBeVisible();
}

/**
 * The text of the newest e-mail the servers sent to `to` (global setup's SMTP server keeps them
 * as files), waiting for it to arrive; quoted-printable is undone.
 */
export async function mailTo(to: string): Promise<string> {
  const directory = process.env.VEXIL_E2E_MAIL_DIR!;
  const newest = () =>
    readdirSync(directory)
      .sort((a, b) => parseInt(b) - parseInt(a))
      .map((file) => readFileSync(join(directory, file), 'utf8'))
      .find((mail) => mail.includes(`\nTo: ${to}\r\n`));
  await expect.poll(newest).toBeDefined();
  return newest()!
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

export { expect, test };
