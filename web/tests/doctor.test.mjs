// The doctor in a real browser against a real `bootlane serve`: an admin opens Doctor
// from the navigation, finds no report yet, runs it and sees the report (when, how long,
// the interfaces, counts per severity) and its findings (boot files, MTU); a viewer sees
// the same last report with Run disabled (the API refuses them 403), and a run made
// elsewhere reaches their open page live (`doctor.finished`); a second run while one is
// going is answered 409, over the API and on the page.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, apiClient, tracePage, ADMIN_PASSWORD } from './server.mjs';

let server, browser, api;
const VIEWER_PASSWORD = 'doctor-Viewer-Tm7qW2xK';

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
  api = await apiClient(server.base);
  await api('POST', '/users', { username: 'vera', password: VIEWER_PASSWORD, role: 'viewer' });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Signs in through the login page and opens Doctor from the navigation. */
async function openDoctor(user, password) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  // A run takes up to ~10 s per interface.
  page.setDefaultTimeout(20000);
  const trace = tracePage(page, server.base);
  try {
    await page.goto(`${server.base}/login`);
    await page.fill('#username', user);
    await page.fill('#password', password);
    await page.click('form[data-testid=login] button[type=submit]');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Doctor', exact: true }).click();
    await page.getByRole('heading', { name: 'Doctor' }).waitFor();
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  }
  return { ctx, page, trace };
}

/** `[check, severity]` of every finding row on the page, in order. */
async function rows(page) {
  return page
    .getByTestId('doctor-finding')
    .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-check'), tr.getAttribute('data-severity')]));
}

test('Doctor: an admin runs it and sees the report with its findings', { timeout: 90000 }, async () => {
  const { ctx, page, trace } = await openDoctor('admin', ADMIN_PASSWORD);
  try {
    await page.getByTestId('doctor-none').waitFor();
    assert.match(await page.locator('main').innerText(), /rival DHCP servers[\s\S]*Secure Boot[\s\S]*sends nothing off the served links/);
    const run = page.getByRole('button', { name: 'Run doctor' });
    assert.ok(await run.isEnabled());
    await run.click();
    // While the run goes (seconds: it listens for rival DHCP servers) the button waits.
    await page.getByText('Running… (up to 10 s per interface)').waitFor();
    assert.ok(await run.isDisabled(), 'Run is disabled while running');
    await page.getByTestId('doctor-report').waitFor();
    await page.getByTestId('doctor-running').waitFor({ state: 'detached' });
    assert.ok(await run.isEnabled());

    const report = await api('GET', '/doctor');
    assert.ok(report, 'the run is the last report');
    assert.equal(await page.getByTestId('doctor-report').getAttribute('data-started-at'), report.started_at);
    const summary = await page.getByTestId('doctor-summary').innerText();
    assert.match(summary, /^Last run .+, took \d+\.\d s, checked /);
    if (server.dhcpIface) assert.ok(summary.includes(server.dhcpIface), `the served interface is named: ${summary}`);

    const seen = await rows(page);
    assert.ok(
      seen.some(([check]) => check === 'boot_file' || check === 'mtu'),
      `a boot_file or mtu finding: ${JSON.stringify(seen)}`,
    );
    assert.deepEqual(
      seen,
      report.findings.map((f) => [f.check, f.severity]),
      'every finding, in the order the server sorted them',
    );
    for (const s of ['error', 'warning', 'info', 'ok']) {
      const n = Number(await page.getByTestId(`doctor-count-${s}`).locator('.n').innerText());
      assert.equal(n, report.findings.filter((f) => f.severity === s).length, `the ${s} count`);
    }
    // A finding with details opens them as JSON.
    const i = report.findings.findIndex((f) => f.details);
    if (i >= 0) {
      const row = page.getByTestId('doctor-finding').nth(i);
      await row.locator('summary', { hasText: 'details' }).click();
      assert.deepEqual(JSON.parse(await row.locator('pre.json').innerText()), report.findings[i].details);
    }

    // Run while a run made over the API is going (it listens seconds for rival DHCP
    // servers on the test's interface): the page shows the 409, then the other run's
    // report when it ends.
    if (server.dhcpIface) {
      const other = api('POST', '/doctor', {});
      await new Promise((r) => setTimeout(r, 1500));
      await run.click();
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.match(await alert.innerText(), /already going/);
      const fresh = await other;
      await page.locator(`[data-testid=doctor-report][data-started-at="${fresh.started_at}"]`).waitFor();
      await alert.waitFor({ state: 'detached' });
    }
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  } finally {
    await ctx.close();
  }
});

test('Doctor: a viewer sees the last report with Run disabled; a run elsewhere arrives live; a second concurrent run is 409', { timeout: 90000 }, async () => {
  const last = await api('GET', '/doctor');
  assert.ok(last, 'the previous test ran the doctor');
  const { ctx, page, trace } = await openDoctor('vera', VIEWER_PASSWORD);
  try {
    const shown = page.getByTestId('doctor-report');
    await shown.waitFor();
    assert.equal(await shown.getAttribute('data-started-at'), last.started_at, 'the same last report');
    assert.deepEqual(
      await rows(page),
      last.findings.map((f) => [f.check, f.severity]),
    );
    assert.ok(await page.getByRole('button', { name: 'Run doctor' }).isDisabled(), 'Run is disabled for a viewer');

    // The API refuses a viewer's run.
    const login = await fetch(`${server.base}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'vera', password: VIEWER_PASSWORD }),
    });
    assert.equal(login.status, 200);
    const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const refused = await fetch(`${server.base}/api/v1/doctor`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(refused.status, 403);

    // Two runs at once: one runs, the other is refused 409 (whichever arrives second).
    const [a, b] = await Promise.allSettled([api('POST', '/doctor', {}), api('POST', '/doctor', {})]);
    const done = [a, b].filter((r) => r.status === 'fulfilled');
    const busy = [a, b].filter((r) => r.status === 'rejected');
    assert.equal(done.length, 1, `one run went: ${JSON.stringify([a, b].map((r) => r.reason?.message ?? 'ok'))}`);
    assert.equal(busy.length, 1);
    assert.match(busy[0].reason.message, /POST \/doctor: 409 /);
    const fresh = done[0].value;
    assert.notEqual(fresh.started_at, last.started_at);

    // The viewer's open page follows (`doctor.finished`), without a reload.
    await page.locator(`[data-testid=doctor-report][data-started-at="${fresh.started_at}"]`).waitFor();
    assert.deepEqual(
      await rows(page),
      fresh.findings.map((f) => [f.check, f.severity]),
    );
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  } finally {
    await ctx.close();
  }
});
