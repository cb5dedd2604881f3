// Two-factor sign-in (TOTP) in a real browser against a real `bootlane serve`: enrol on
// the Account page (QR code and secret shown), confirm with a code, sign out, sign in
// with password + code, a wrong code and a reused code refused, a recovery code works
// once, then turn it off. The codes are computed by oathtool (RFC 6238), independently of
// the server's totp-rs. Deterministic without waiting: the server accepts one step of
// clock skew, so the code of the next 30-second step (`oathtool --now`) is a fresh one.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startServer, launchBrowser, ADMIN_PASSWORD } from './server.mjs';

let server, browser;

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The TOTP code of `secret` (base32) for Unix time `at` seconds, by oathtool. */
function oathtool(secret, at) {
  const r = spawnSync('oathtool', ['--totp', '-b', '--now', `@${at}`, secret], { encoding: 'utf8' });
  if (r.error) throw new Error(`oathtool: ${r.error.message} (install the oathtool package: scripts/setup.sh)`);
  assert.equal(r.status, 0, r.stderr);
  const code = r.stdout.trim();
  assert.match(code, /^\d{6}$/);
  return code;
}

const now = () => Math.floor(Date.now() / 1000);

async function signIn(page, otp) {
  await page.goto(`${server.base}/login`);
  await page.fill('#password', ADMIN_PASSWORD);
  await page.click('form[data-testid=login] button[type=submit]');
  // The server answers `otp_required`: the form asks for the code.
  await page.locator('#otp').waitFor();
  await page.fill('#otp', otp);
  await page.click('form[data-testid=login] button[type=submit]');
}

async function signOut(page) {
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login/);
}

async function refused(page) {
  const err = page.getByTestId('login-error');
  await err.waitFor();
  assert.match(await err.innerText(), /one-time code/);
  assert.ok(page.url().includes('/login'), page.url());
}

test('TOTP: enrol with the QR code and secret, sign in with a code, wrong and reused codes refused, a recovery code once', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(10000);
  page.on('dialog', (d) => d.accept());

  // Sign in with the password alone (no second factor yet) and enrol.
  await page.goto(`${server.base}/login`);
  await page.fill('#password', ADMIN_PASSWORD);
  await page.click('form[data-testid=login] button[type=submit]');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await page.getByTestId('account').click();
  await page.getByRole('heading', { name: 'Account' }).waitFor();
  assert.match(await page.getByTestId('totp-state').innerText(), /off/);
  await page.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
  const secret = (await page.getByTestId('totp-secret').innerText()).trim();
  assert.match(secret, /^[A-Z2-7]{32}$/, 'a 160-bit base32 secret');
  const qr = page.getByTestId('totp-qr');
  await qr.waitFor();
  const size = await qr.evaluate((img) => (img.complete ? img.naturalWidth : 0));
  assert.ok(size > 0, 'the QR code PNG decodes in the browser');
  const confirmAt = now();
  const confirmCode = oathtool(secret, confirmAt);
  await page.fill('#totp-code', confirmCode);
  await page.getByRole('button', { name: 'Confirm' }).click();
  const box = page.getByTestId('recovery-codes');
  await box.waitFor();
  const recovery = (await box.locator('code').allInnerTexts()).map((c) => c.trim());
  assert.equal(recovery.length, 10);
  for (const c of recovery) assert.match(c, /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
  await page.getByRole('button', { name: 'Done' }).click();
  assert.match(await page.getByTestId('totp-state').innerText(), /on; 10 recovery codes left/);
  await signOut(page);

  // A wrong code: one that is none of the codes around now.
  const around = [-1, 0, 1, 2].map((k) => oathtool(secret, now() + 30 * k));
  let wrong = (Number(around[1]) + 500000) % 1000000;
  while (around.includes(String(wrong).padStart(6, '0'))) wrong = (wrong + 1) % 1000000;
  await signIn(page, String(wrong).padStart(6, '0'));
  await refused(page);

  // The code the confirmation spent: refused (a code is accepted once).
  await signIn(page, confirmCode);
  await refused(page);

  // The next step's code is fresh (one step of skew): it signs in.
  const fresh = oathtool(secret, now() + 30);
  await signIn(page, fresh);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await signOut(page);

  // The same code again: refused.
  await signIn(page, fresh);
  await refused(page);

  // A recovery code signs in once.
  await signIn(page, recovery[0]);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await signOut(page);
  await signIn(page, recovery[0]);
  await refused(page);

  // Sign in with another recovery code and turn the second factor off with a third.
  await signIn(page, recovery[1].toUpperCase());
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  // The users page shows whose second factor is on, with the admin's way to turn it off.
  await page.goto(`${server.base}/users`);
  const adminRow = page.getByTestId('users').locator('tr').filter({ has: page.locator('td:first-child', { hasText: /^admin$/ }) });
  await adminRow.getByRole('button', { name: 'Turn off two-factor' }).waitFor();
  await page.getByTestId('account').click();
  assert.match(await page.getByTestId('totp-state').innerText(), /on; 8 recovery codes left/);
  await page.fill('#totp-off-code', recovery[2]);
  await page.getByRole('button', { name: 'Turn off two-factor sign-in' }).click();
  await page.getByText('Two-factor sign-in is off.').first().waitFor();
  await signOut(page);
  await page.fill('#password', ADMIN_PASSWORD);
  await page.click('form[data-testid=login] button[type=submit]');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await ctx.close();
});
