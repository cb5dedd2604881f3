// API tokens in a real browser against a real `bootlane serve`: on the Account page an
// admin creates a token, sees its secret once, the secret works as a Bearer credential
// with the token's role (and is named by the session check), the list shows its last use,
// revoking it refuses it at once; a viewer is offered only the viewer role and manages
// their own tokens.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, apiClient, tracePage, ADMIN_PASSWORD } from './server.mjs';

let server, browser, api;
const VIEWER_PASSWORD = 'tokens-Viewer-Rq4mX8vL';

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
  api = await apiClient(server.base);
  await api('POST', '/users', { username: 'vic', password: VIEWER_PASSWORD, role: 'viewer' });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** `GET path` with `secret` as the Bearer credential: the status and the envelope. */
async function bearer(secret, path) {
  const r = await fetch(`${server.base}/api/v1${path}`, { headers: { authorization: `Bearer ${secret}` } });
  return [r.status, await r.json()];
}

async function signIn(page, user, password) {
  const trace = tracePage(page, server.base);
  await page.goto(`${server.base}/login`);
  await page.fill('#username', user);
  await page.fill('#password', password);
  await page.click('form[data-testid=login] button[type=submit]');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  try {
    await page.getByTestId('account').click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  }
}

async function create(page, name, role) {
  await page.getByRole('button', { name: 'Create token' }).click();
  const form = page.getByTestId('token-form');
  await form.locator('input').first().fill(name);
  await form.locator('select').selectOption(role);
  await form.getByRole('button', { name: 'Create' }).click();
  const secret = (await page.getByTestId('token-secret-value').innerText()).trim();
  assert.match(secret, /^blt_[A-Za-z0-9]{10}_[A-Za-z0-9]{40}$/);
  await page.getByTestId('token-secret').getByRole('button', { name: 'Done' }).click();
  return secret;
}

test('API tokens: created with the secret shown once, used as Bearer, last use listed, revoked at once', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(10000);
  page.on('dialog', (d) => d.accept());
  await signIn(page, 'admin', ADMIN_PASSWORD);
  const secret = await create(page, 'nightly backup', 'operator');
  const row = page.getByTestId('tokens').locator('tr', { hasText: 'nightly backup' });
  await row.waitFor();
  assert.match(await row.innerText(), /operator[\s\S]*admin[\s\S]*never/);
  assert.ok(!(await page.content()).includes(secret), 'the secret is gone once dismissed');

  const [s, v] = await bearer(secret, '/auth/session');
  assert.equal(s, 200);
  assert.deepEqual([v.data.username, v.data.role, v.data.token], ['admin', 'operator', 'nightly backup']);
  assert.equal((await bearer(secret, '/users'))[0], 403, 'an operator token is refused an admin route');
  assert.equal((await bearer(secret, '/hosts'))[0], 200);

  await page.reload();
  await page.getByRole('heading', { name: 'API tokens' }).waitFor();
  await row.waitFor();
  assert.match(await row.innerText(), /from 127\.0\.0\.1/, 'the last use is listed with its address');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await page.getByTestId('tokens').locator('tr', { hasText: 'nightly backup' }).waitFor({ state: 'detached' });
  const [gone, env] = await bearer(secret, '/hosts');
  assert.equal(gone, 401);
  assert.match(env.error, /revoked/);
  await ctx.close();
});

test('API tokens: a viewer is offered only viewer, makes and revokes their own, and sees none of the others', async () => {
  await api('POST', '/tokens', { name: 'admin only', role: 'admin', expires_in_days: 1 });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(10000);
  page.on('dialog', (d) => d.accept());
  await signIn(page, 'vic', VIEWER_PASSWORD);
  await page.getByRole('button', { name: 'Create token' }).click();
  const options = await page.getByTestId('token-form').locator('select option').allInnerTexts();
  assert.deepEqual(options, ['viewer']);
  await page.getByTestId('token-form').getByRole('button', { name: 'Cancel' }).click();
  const secret = await create(page, 'dashboard reader', 'viewer');
  const table = page.getByTestId('tokens');
  await table.locator('tr', { hasText: 'dashboard reader' }).waitFor();
  assert.ok(!(await table.innerText()).includes('admin only'), "another user's token is not listed");
  assert.equal((await bearer(secret, '/hosts'))[0], 200);
  await table.locator('tr', { hasText: 'dashboard reader' }).getByRole('button', { name: 'Revoke' }).click();
  await table.locator('tr', { hasText: 'dashboard reader' }).waitFor({ state: 'detached' });
  assert.equal((await bearer(secret, '/hosts'))[0], 401);
  await ctx.close();
});
