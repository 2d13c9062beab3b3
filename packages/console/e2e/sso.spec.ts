import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';
import { expect, expectAccessible, server, signIn, test } from './fixtures';

const CLIENT_SECRET = 'a-client-secret-that-is-long-enough-for-hs256';

/**
 * An OpenID Connect provider (`oidc-provider`) in the test process, over HTTPS with the
 * certificate the server under test trusts (global setup). Its login page signs in Grace at
 * once: the journey is Vexil's side of the round trip.
 */
async function startIdentityProvider(
  callbackUrl: string,
): Promise<{ issuer: string; server: Server }> {
  // The provider needs its issuer, which needs the port the server listens on.
  const started: { provider?: Provider } = {};
  const https = createServer(
    {
      key: readFileSync(process.env.VEXIL_E2E_IDP_KEY!),
      cert: readFileSync(process.env.VEXIL_E2E_IDP_CERT!),
    },
    (req, res) => {
      if (req.url?.startsWith('/interaction/')) {
        void started.provider!.interactionFinished(
          req,
          res,
          { login: { accountId: 'grace' } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      void started.provider!.callback()(req, res);
    },
  );
  await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
  const issuer = `https://127.0.0.1:${(https.address() as AddressInfo).port}`;
  started.provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'vexil',
        client_secret: CLIENT_SECRET,
        redirect_uris: [callbackUrl],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: (_ctx: KoaContextWithOIDC, sub: string) =>
      sub === 'grace'
        ? {
            accountId: sub,
            claims: () => ({
              sub,
              email: 'grace@acme.test',
              email_verified: true,
              name: 'Grace',
            }),
          }
        : undefined,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false } },
    // Consent is implied: every sign-in is granted the scopes asked for.
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client!.clientId,
        accountId: ctx.oidc.session!.accountId!,
      });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    cookies: { keys: ['console-test-cookie-key'] },
  });
  return { issuer, server: https };
}

test('an Owner adds an SSO connection, and a new person signs in through it', async ({
  page,
  browser,
}) => {
  const idp = await startIdentityProvider(`${server.url}/auth/sso/callback`);
  try {
    await signIn(page);
    await page.getByRole('link', { name: 'Settings' }).click();
    await expect(page.getByRole('heading', { name: 'Settings', level: 1 })).toBeVisible();
    await expectAccessible(page);

    await page.getByRole('button', { name: 'New SSO connection' }).click();
    const dialog = page.getByRole('dialog', { name: 'New SSO connection' });
    await dialog.getByLabel('Connection name').fill('Test IdP');
    await dialog.getByLabel('Issuer').fill('http://idp.acme.test');
    await dialog.getByLabel('Client ID').fill('vexil');
    await dialog.getByLabel('Client secret').fill(CLIENT_SECRET);
    await dialog.getByLabel('Allowed e-mail domains').fill('acme.test');
    await dialog.getByLabel('Add people who are not members yet').check();
    await dialog.getByLabel('Their role').selectOption('Member');
    await dialog.getByRole('button', { name: 'Create connection' }).click();
    // Not https: refused, and said at the field, with what was typed kept.
    await expect(dialog.getByLabel('Issuer')).toHaveAccessibleDescription(
      /must be an https:\/\/ address/,
    );
    await expect(dialog.getByLabel('Issuer')).toHaveAttribute('aria-invalid', 'true');
    await expect(dialog.getByLabel('Issuer')).toHaveValue('http://idp.acme.test');
    await expectAccessible(page);
    await dialog.getByLabel('Issuer').fill(idp.issuer);
    await dialog.getByRole('button', { name: 'Create connection' }).click();
    await expect(dialog).toHaveCount(0);
    const row = page.getByRole('row', { name: /Test IdP/ });
    await expect(row.getByRole('cell', { name: 'Join as Member (acme.test)' })).toBeVisible();
    // The first connection becomes the organization's.
    await expect(
      page.getByRole('combobox', { name: 'Single sign-on connection' }).locator('option:checked'),
    ).toHaveText('Test IdP');

    const other = await browser.newContext({ ignoreHTTPSErrors: true });
    const grace = await other.newPage();
    await grace.goto(`${server.url}/sign-in`);
    await grace.getByLabel('Organization').fill('no-such-org');
    await grace.getByRole('button', { name: 'Sign in with SSO' }).click();
    await expect(grace.getByLabel('Organization')).toHaveAccessibleDescription(
      /has no single sign-on connection/,
    );
    await grace.getByLabel('Organization').fill('acme');
    await grace.getByRole('button', { name: 'Sign in with SSO' }).click();
    await expect(grace.getByRole('heading', { name: 'Flags' })).toBeVisible();
    await grace.getByRole('link', { name: 'Your account' }).click();
    await expect(
      grace.getByText('Signed in as Grace (grace@acme.test), Member of acme.'),
    ).toBeVisible();
    await expect(grace.getByRole('cell', { name: /single sign-on/ })).toBeVisible();

    // Edited (the secret kept), then deleted: the sessions that came through it end.
    await page.getByRole('button', { name: 'Edit connection Test IdP' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Test IdP' });
    await expect(edit.getByLabel('Client secret')).toHaveValue('');
    await edit.getByLabel('Connection name').fill('Staff IdP');
    await edit.getByRole('button', { name: 'Save connection' }).click();
    await expect(page.getByRole('row', { name: /Staff IdP/ })).toBeVisible();
    await page.getByRole('button', { name: 'Delete connection Staff IdP' }).click();
    await expectAccessible(page);
    await page.getByRole('alertdialog').getByRole('button', { name: 'Delete connection' }).click();
    await expect(page.getByRole('row', { name: /Staff IdP/ })).toHaveCount(0);
    await grace.reload();
    await expect(grace.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
    await other.close();
  } finally {
    await new Promise((resolve) => idp.server.close(resolve));
  }
});

test('a refused single sign-on lands on the sign-in page, which says why', async ({ page }) => {
  // A callback this browser did not start, as a forwarded link (login CSRF) or a stale tab brings.
  await page.goto(`${server.url}/auth/sso/callback?state=never-issued&code=whatever`);
  await expect(page).toHaveURL(`${server.url}/sign-in?error=sso_other_browser`);
  await expect(page.getByRole('heading', { name: 'Sign in to Vexil' })).toBeVisible();
  await expect(page.getByRole('alert')).toHaveText(
    'That single sign-on was not started in this browser, or took too long. Start it again here.',
  );
  await expectAccessible(page);
});
