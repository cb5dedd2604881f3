// Single sign-on in a real browser against a real `bootlane serve` and a real OpenID
// provider: the certified `oidc-provider` package, started here on loopback with two
// accounts (`olga` in the `bootlane-ops` group, mapped to operator; `nina` in no mapped
// group), a confidential client with Bootlane's callback as redirect URI and PKCE
// required. "Sign in with Lab IdP" goes to the provider's login page; olga lands on the
// dashboard as an operator and logging out reaches the provider's end-session page; nina
// is sent back to the login page with a clear refusal.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { startServer, launchBrowser } from './server.mjs';

const SECRET = 'oidc-test-client-secret-Kw3pZ9';
const ACCOUNTS = {
  olga: { groups: ['bootlane-ops', 'staff'] },
  nina: { groups: ['staff'] },
};

let server, browser, idp, issuer;

async function startProvider(base) {
  const http = createServer();
  await new Promise((ok) => http.listen(0, '127.0.0.1', ok));
  issuer = `http://127.0.0.1:${http.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'bootlane',
        client_secret: SECRET,
        redirect_uris: [`${base}/api/v1/auth/oidc/callback`],
        post_logout_redirect_uris: [`${base}/login`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], profile: ['preferred_username'], email: ['email'], groups: ['groups'] },
    // The scope's claims in the ID token itself (Bootlane also reads userinfo).
    conformIdTokenClaims: false,
    findAccount: async (_ctx, id) =>
      ACCOUNTS[id] && {
        accountId: id,
        claims: async () => ({ sub: id, preferred_username: id, groups: ACCOUNTS[id].groups }),
      },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: ['oidc-test-cookie-key-7f3a'] },
  });
  http.on('request', provider.callback());
  idp = http;
  return issuer;
}

before(async () => {
  server = await startServer({
    extraConfig: async (base, dir) => {
      const iss = await startProvider(base);
      const secretFile = join(dir, 'oidc-secret');
      writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
      return (
        `[auth.oidc]\nissuer = "${iss}"\nclient_id = "bootlane"\nclient_secret_file = "${secretFile}"\n` +
        `redirect_url = "${base}/api/v1/auth/oidc/callback"\ndisplay_name = "Lab IdP"\n` +
        `[auth.oidc.group_roles]\n"bootlane-ops" = "operator"\n`
      );
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  idp?.closeAllConnections?.();
  await new Promise((r) => (idp ? idp.close(r) : r()));
});

/** From Bootlane's login page through the provider's login (and consent) pages. */
async function signInAt(page, user) {
  await page.goto(`${server.base}/login`);
  await page.getByRole('button', { name: 'Sign in with Lab IdP' }).click();
  await page.waitForURL((u) => u.href.startsWith(issuer));
  await page.fill('input[name=login]', user);
  await page.fill('input[name=password]', 'any');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  // The consent page, when the provider asks.
  const consent = page.getByRole('button', { name: 'Continue' });
  await Promise.race([page.waitForURL((u) => !u.href.startsWith(issuer)), consent.waitFor()]);
  if (page.url().startsWith(issuer)) await consent.click();
}

test('a user in a mapped group signs in with the provider, gets the mapped role, and logs out at the provider', async () => {
  const page = await browser.newPage();
  await signInAt(page, 'olga');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal((await page.getByTestId('whoami').innerText()).trim(), 'olga · operator');
  // The session is real: the API answers it as an operator's.
  const cookies = await page.context().cookies(server.base);
  const sess = cookies.find((c) => c.name === 'bootlane_session');
  assert.ok(sess?.httpOnly, 'HttpOnly session cookie');
  const r = await fetch(`${server.base}/api/v1/auth/session`, { headers: { cookie: `bootlane_session=${sess.value}` } });
  const s = (await r.json()).data;
  assert.equal(s.username, 'olga');
  assert.equal(s.role, 'operator');

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL((u) => u.href.startsWith(`${issuer}/session/end`));
  // The Bootlane session is gone.
  const after = await fetch(`${server.base}/api/v1/auth/session`, { headers: { cookie: `bootlane_session=${sess.value}` } });
  assert.equal((await after.json()).data.authenticated, false);
  await page.close();
});

test('a user in no mapped group is refused with a clear message', async () => {
  const page = await browser.newPage();
  await signInAt(page, 'nina');
  await page.getByTestId('sso-error').waitFor();
  assert.equal(new URL(page.url()).pathname, '/login');
  assert.match(await page.getByTestId('sso-error').innerText(), /no group that has access/);
  const cookies = await page.context().cookies(server.base);
  assert.equal(cookies.find((c) => c.name === 'bootlane_session'), undefined);
  await page.close();
});

test('a replayed or forged callback is refused, never a 500', async () => {
  for (const q of ['state=forged&code=x', 'error=access_denied&state=x', '', 'code=only']) {
    const r = await fetch(`${server.base}/api/v1/auth/oidc/callback?${q}`, { redirect: 'manual' });
    assert.equal(r.status, 302, q);
    assert.match(r.headers.get('location'), /^\/login\?sso_error=/, q);
    assert.equal(r.headers.getSetCookie().some((c) => c.startsWith('bootlane_session=') && !c.startsWith('bootlane_session=;')), false);
  }
});
