// Boot sessions in a real browser against a real `bootlane serve`: the Boots page is open
// while a machine fetches its iPXE script over HTTP exactly as iPXE does
// (`GET /boot/ipxe?mac=...`) and then asks for a boot file the server does not have; the
// machine's session appears live (no reload) with its `ipxe` step, and a session shows
// the missing file as the reason it stalled. The session opens to its timeline (steps,
// their details as JSON text); a file name with markup reaches the page as text. Then a
// registered host boots, and its Recent boots on the hosts page show the timeline with
// the iPXE step.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, apiClient, tracePage, ADMIN_PASSWORD } from './server.mjs';

let server, browser, api;
const MAC = '52:54:00:12:34:56';
const HOST_MAC = '52:54:00:12:34:57';
const NOT_FOUND = 'asked for "debian/linux" over HTTP: not found';

before(async () => {
  server = await startServer();
  browser = await launchBrowser();
  api = await apiClient(server.base);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Signs in through the login page and opens `link` from the navigation. */
async function open(link, heading) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(15000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const trace = tracePage(page, server.base);
  try {
    await page.goto(`${server.base}/login`);
    await page.fill('#username', 'admin');
    await page.fill('#password', ADMIN_PASSWORD);
    await page.click('form[data-testid=login] button[type=submit]');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: link, exact: true }).click();
    await page.getByRole('heading', { name: heading, exact: true }).waitFor();
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  }
  return { ctx, page, trace, errors };
}

/** What a machine's firmware does: a plain GET of the boot server, no session. */
async function boot(path) {
  const r = await fetch(`${server.base}${path}`);
  return { status: r.status, text: await r.text() };
}

/** Polls `cond` (every 100 ms, up to 10 s) until it answers a truthy value. */
async function until(cond, what) {
  const t0 = Date.now();
  for (;;) {
    const v = await cond();
    if (v) return v;
    assert.ok(Date.now() - t0 < 10000, `timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('Boots: a machine that fetches its iPXE script and then a missing kernel shows up live, stalled on the missing file; its timeline opens', { timeout: 90000 }, async () => {
  const { ctx, page, trace, errors } = await open('Boots', 'Boots');
  try {
    // Following the stream, nothing recorded yet.
    await page.getByTestId('boots-live').filter({ hasText: 'following' }).waitFor();
    await page.getByTestId('boots-none').waitFor();
    const loads = [];
    page.on('framenavigated', (f) => f === page.mainFrame() && loads.push(f.url()));

    // The machine boots while the page is open.
    const script = await boot(`/boot/ipxe?mac=${MAC}`);
    assert.equal(script.status, 200, script.text);
    assert.match(script.text, /^#!ipxe/);
    const missing = await boot('/boot/debian/linux');
    assert.equal(missing.status, 404);

    const row = page.locator(`[data-testid=boot-session][data-mac="${MAC}"]`);
    await row.waitFor();
    // Some session (the machine's, or one of its address when the 404 could not be tied
    // to the MAC) stalled on the missing file.
    const stalled = page.getByTestId('boot-session').filter({ hasText: NOT_FOUND });
    await stalled.waitFor();
    assert.equal(await stalled.first().getAttribute('data-verdict'), 'stalled');
    assert.equal(await stalled.first().getByTestId('verdict').innerText(), 'stalled');
    assert.deepEqual(loads, [], 'no reload: the sessions came over the stream');

    // What the page shows is what the API has.
    const listed = await api('GET', `/boot-sessions?mac=${MAC}`);
    assert.equal(listed.length, 1, JSON.stringify(listed));
    const s = listed[0];
    assert.equal(await row.getAttribute('data-id'), String(s.id));
    assert.equal(await row.getAttribute('data-verdict'), s.verdict);
    assert.equal(await row.getByTestId('boot-session-reason').innerText(), s.reason);
    assert.ok((await api('GET', '/boot-sessions')).some((x) => x.verdict === 'stalled' && x.reason === NOT_FOUND));

    // Filters: stalled only, then by MAC, then a MAC that never booted.
    await page.getByLabel('verdict').selectOption('stalled');
    await stalled.first().waitFor();
    assert.ok((await page.getByTestId('boot-session').evaluateAll((rs) => rs.map((r) => r.dataset.verdict))).every((v) => v === 'stalled'));
    await page.getByLabel('verdict').selectOption('');
    await page.getByLabel('machine').fill('12:34:56');
    await row.waitFor();
    assert.equal(await page.getByTestId('boot-session').count(), 1);
    await page.getByLabel('machine').fill('52:54:00:99:99:99');
    await page.getByText('No boot matches the filters.').waitFor();
    await page.getByLabel('machine').fill('');
    await row.waitFor();

    // The session's timeline: verdict and reason on top, the iPXE step, its details.
    await row.locator('td').nth(2).click();
    await page.waitForURL(`${server.base}/boots/${s.id}`);
    await page.getByRole('heading', { name: `Boot session ${s.id}` }).waitFor();
    const full = await api('GET', `/boot-sessions/${s.id}`);
    const tl = page.getByTestId('boot-timeline');
    await tl.waitFor();
    assert.equal(await tl.getByTestId('boot-reason').innerText(), full.reason);
    assert.equal(await tl.getByTestId('boot-verdict').getByTestId('verdict').getAttribute('data-verdict'), full.verdict);
    const steps = tl.getByTestId('boot-step');
    assert.equal(await steps.count(), full.steps.length);
    const ipxe = tl.locator('[data-testid=boot-step][data-kind=ipxe]');
    await ipxe.waitFor();
    assert.match(await ipxe.getByTestId('boot-step-summary').innerText(), /^iPXE script of profile .+ served/);
    assert.equal(await ipxe.getAttribute('data-ok'), 'true');
    const i = full.steps.findIndex((st) => st.kind === 'ipxe');
    await ipxe.getByRole('button', { name: 'show details' }).click();
    assert.deepEqual(JSON.parse(await ipxe.locator('pre.json').innerText()), full.steps[i].details);
    await ipxe.getByRole('button', { name: 'hide details' }).click();
    await ipxe.getByTestId('boot-step-details').waitFor({ state: 'detached' });
    // The 404 tied to the machine (the address it fetched its script from): a failed row.
    const http = full.steps.findIndex((st) => st.kind === 'http' && !st.ok);
    if (http >= 0) {
      assert.equal(full.verdict, 'stalled');
      assert.equal(await steps.nth(http).getAttribute('data-ok'), 'false');
      assert.match(await steps.nth(http).getAttribute('class'), /\bfailed\b/);
    }

    // The open timeline follows the session: a file with markup in its name, asked
    // from the same address, is a step shown as text.
    const marked = await boot('/boot/%3Cb%3Ebold%3C%2Fb%3E.efi');
    assert.equal(marked.status, 404);
    const grown = await until(async () => {
      const all = await api('GET', '/boot-sessions');
      for (const x of all) {
        const f = await api('GET', `/boot-sessions/${x.id}`);
        const st = f.steps.find((y) => y.summary.includes('<b>bold</b>'));
        if (st) return { session: f, step: st };
      }
    }, 'the step with markup recorded');
    if (grown.session.id !== s.id) await page.goto(`${server.base}/boots/${grown.session.id}`);
    const markedRow = page.getByTestId('boot-step').filter({ hasText: '<b>bold</b>' });
    await markedRow.waitFor();
    assert.equal(await markedRow.getByTestId('boot-step-summary').innerText(), grown.step.summary);
    assert.equal(await page.locator('main b').count(), 0, 'no markup from a client became an element');

    // Back to the list.
    await page.getByRole('link', { name: '← All boots' }).click();
    await page.getByRole('heading', { name: 'Boots', exact: true }).waitFor();
    await row.waitFor();
    assert.deepEqual(errors, []);
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  } finally {
    await ctx.close();
  }
});

test('Boots: a registered host boots; its Recent boots on the hosts page show the timeline with the iPXE step', { timeout: 60000 }, async (t) => {
  const host = await api('POST', '/hosts', { name: 'boots-host-1', mac: HOST_MAC });
  t.after(async () => {
    await api('DELETE', `/hosts/${host.id}`).catch(() => undefined);
  });
  const script = await boot(`/boot/ipxe?mac=${HOST_MAC}`);
  assert.equal(script.status, 200, script.text);
  const [s] = await until(async () => {
    const l = await api('GET', `/hosts/${host.id}/boot-sessions`);
    return l.length ? l : null;
  }, "the host's session");
  assert.equal(s.mac, HOST_MAC);
  assert.equal(s.host, 'boots-host-1');

  const { ctx, page, trace, errors } = await open('Hosts', 'Hosts');
  try {
    await page.getByTestId('hosts').locator('tr', { hasText: 'boots-host-1' }).getByRole('button', { name: 'Boots', exact: true }).click();
    const panel = page.getByTestId('host-boots');
    await panel.getByRole('heading', { name: /Recent boots of boots-host-1/ }).waitFor();
    const row = panel.locator(`[data-testid=boot-session][data-id="${s.id}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute('aria-selected'), 'true', 'the newest is shown');
    const tl = panel.locator(`[data-testid=boot-timeline][data-session="${s.id}"]`);
    await tl.waitFor();
    const ipxe = tl.locator('[data-testid=boot-step][data-kind=ipxe]');
    await ipxe.waitFor();
    assert.match(await ipxe.getByTestId('boot-step-summary').innerText(), /^iPXE script of profile .+ served/);
    const full = await api('GET', `/boot-sessions/${s.id}`);
    assert.equal(await tl.getByTestId('boot-reason').innerText(), full.reason);

    // The host boots again while the panel is open: the list follows.
    await boot(`/boot/ipxe?mac=${HOST_MAC}`);
    const after = await until(async () => {
      const l = await api('GET', `/hosts/${host.id}/boot-sessions`);
      return l.length > 1 || l[0].step_count > s.step_count ? l : null;
    }, 'the second boot recorded');
    const newest = after.reduce((a, b) => (Date.parse(b.started) > Date.parse(a.started) || (b.started === a.started && b.id > a.id) ? b : a));
    await panel.locator(`[data-testid=boot-session][data-id="${newest.id}"][data-verdict="${newest.verdict}"]`).waitFor();
    await panel.locator(`[data-testid=boot-timeline][data-session="${newest.id}"] [data-testid=boot-step][data-kind=ipxe]`).first().waitFor();
    assert.deepEqual(errors, []);
  } catch (e) {
    e.message += `\n${await trace()}`;
    throw e;
  } finally {
    await ctx.close();
  }
});
