// Chromium loads the web UI over HTTPS and verifies the server's certificate chain as a
// user's browser does: against the trust anchors in its NSS database. Run by
// scripts/e2e-boot.sh --tls inside the server's network namespace:
//
//   node tests/https-check.mjs <https base URL> <root CA PEM> <admin password>
//
// 1. With an empty NSS database the page must not load (the certificate is refused).
// 2. With the root CA added to the database the UI loads, the login works, and the
//    about box shows the SHA-256 fingerprint of the very certificate Chromium was served.
// Prints `https-check: PASS ...` and exits 0, or prints why and exits 1.

import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, rootPem, password] = process.argv.slice(2);
if (!base || !rootPem || !password) {
  console.error('usage: node tests/https-check.mjs <https base URL> <root CA PEM> <admin password>');
  process.exit(2);
}
const host = new URL(base).hostname;

/** A home directory whose NSS database trusts `pem` (or nothing). */
function home(pem) {
  const dir = mkdtempSync(join(tmpdir(), 'bootlane-https-check-'));
  const db = join(dir, '.pki', 'nssdb');
  mkdirSync(db, { recursive: true });
  execFileSync('certutil', ['-N', '-d', `sql:${db}`, '--empty-password']);
  if (pem) execFileSync('certutil', ['-A', '-d', `sql:${db}`, '-n', 'test-root', '-t', 'C,,', '-i', pem]);
  return dir;
}

async function browse(homeDir, f) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    // The name resolves to the namespace's loopback, where the management listener is.
    args: ['--headless', '--no-sandbox', '--disable-gpu', `--host-resolver-rules=MAP ${host} 127.0.0.1`],
    env: { ...process.env, HOME: homeDir },
  });
  try {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    page.setDefaultTimeout(15000);
    return await f(page);
  } finally {
    await browser.close();
  }
}

const homes = [];
try {
  const untrusted = home(null);
  homes.push(untrusted);
  const refused = await browse(untrusted, (page) =>
    page.goto(`${base}/login`).then(
      () => null,
      (e) => String(e.message),
    ),
  );
  if (!refused || !/ERR_CERT/.test(refused)) {
    throw new Error(`without the root CA the page must be refused, got: ${refused ?? 'loaded'}`);
  }
  const trusted = home(rootPem);
  homes.push(trusted);
  const seen = await browse(trusted, async (page) => {
    const res = await page.goto(`${base}/`);
    const sec = await res.securityDetails();
    await page.waitForURL(/\/login/);
    await page.fill('#password', password);
    await page.click('form[data-testid=login] button[type=submit]');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('button', { name: 'About' }).click();
    const fingerprint = await page.getByTestId('tls-fingerprint').innerText();
    const hsts = res.headers()['strict-transport-security'];
    return { sec, fingerprint, hsts };
  });
  const status = JSON.parse(
    execFileSync('curl', ['-sS', '--cacert', rootPem, '--resolve', `${host}:${new URL(base).port}:127.0.0.1`, `${base}/api/v1/status`]).toString(),
  );
  const want = status.data.tls?.fingerprint_sha256;
  if (!want || seen.fingerprint !== want) throw new Error(`about box shows ${seen.fingerprint}, the server's certificate is ${want}`);
  if (!seen.hsts) throw new Error('no Strict-Transport-Security header');
  console.log(
    `https-check: PASS refused without the root (${refused.match(/ERR_CERT\w*/)[0]}); loaded with it over ${seen.sec?.protocol} ` +
      `(issuer ${seen.sec?.issuer}); about box fingerprint ${seen.fingerprint}`,
  );
} catch (e) {
  console.error(`https-check: FAIL ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  for (const d of homes) rmSync(d, { recursive: true, force: true });
}
