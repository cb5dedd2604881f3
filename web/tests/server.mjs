// Test harness for the browser tests: starts a real `bootlane serve` (the binary in
// $BOOTLANE_BIN, else target/debug/bootlane) with a temporary data directory on free
// non-default ports (API, DNS on 127.0.0.1 only, TFTP), waits until the API answers,
// and launches Debian's Chromium through playwright-core (Playwright's own browser
// download cannot work here).
//
// DHCP: when the tests run as root, the server also gets an active DHCP subnet on a
// dummy interface of its own (`bl-ui-<pid>`, 10.213.0.1/24, and a DHCPv6 link
// fd00:213::/64 on it; a veth pair where the kernel
// has no dummy module), created here and removed
// when the server stops, when the test process exits, or when start-up fails. Without
// root (or without `ip`), no subnet is configured and `server.dhcpIface` is null.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { startUpdateSource } from './updates-source.mjs';

export const ADMIN_PASSWORD = 'ui-test-admin-Fz9wK3mT';

async function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

function binary() {
  if (process.env.BOOTLANE_BIN) return process.env.BOOTLANE_BIN;
  const root = resolve(import.meta.dirname, '../..');
  const target = process.env.CARGO_TARGET_DIR ?? join(root, 'target');
  return join(target, 'debug', 'bootlane');
}

function ip(...args) {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}

/**
 * Creates the dummy interface for the DHCP subnet; answers its name, or null (with the
 * reason on stderr) when it cannot (not root, no `ip`). Removed again on process exit.
 */
function dummyInterface() {
  const name = `bl-ui-${process.pid % 100000}`;
  try {
    spawnSync('ip', ['link', 'del', name]); // a leftover of a killed run with this pid
    try {
      ip('link', 'add', name, 'type', 'dummy');
    } catch {
      // Kernels without the dummy module: one end of a veth pair does as well (deleting
      // it deletes its peer).
      ip('link', 'add', name, 'type', 'veth', 'peer', 'name', `${name}p`);
      ip('link', 'set', `${name}p`, 'up');
    }
  } catch (e) {
    console.log(`# no DHCP subnet in the test server: cannot create a dummy interface (${e.message})`);
    return null;
  }
  const remove = () => spawnSync('ip', ['link', 'del', name]);
  process.once('exit', remove);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.once(sig, () => {
      remove();
      process.exit(130);
    });
  }
  try {
    ip('addr', 'add', '10.213.0.1/24', 'dev', name);
    // The DHCPv6 link (fd00:213::/64): an address without duplicate detection, and the
    // multicast flag a dummy lacks, so the server can join ff02::1:2 there.
    ip('link', 'set', name, 'multicast', 'on');
    ip('-6', 'addr', 'add', 'fd00:213::1/64', 'dev', name, 'nodad');
    ip('link', 'set', name, 'up');
  } catch (e) {
    remove();
    throw e;
  }
  return name;
}

const DHCP_SUBNET = (iface) =>
  `[[dhcp.subnets]]\nmode = "server"\ninterface = "${iface}"\ncidr = "10.213.0.0/24"\n` +
  `range_start = "10.213.0.100"\nrange_end = "10.213.0.199"\nrouter = "10.213.0.1"\n` +
  `server_address = "10.213.0.1"\n` +
  `[[dhcp.subnets6]]\nmode = "server"\ninterface = "${iface}"\nprefix = "fd00:213::/64"\n` +
  `range_start = "fd00:213::100"\nrange_end = "fd00:213::1ff"\nserver_address = "fd00:213::1"\n`;

/**
 * A running server: `base` is `http://127.0.0.1:PORT`, `dnsPort` its DNS port,
 * `dhcpIface` the dummy interface of its DHCP subnet (10.213.0.0/24) or null.
 */
export async function startServer(opts = {}) {
  const dhcpIface = dummyInterface();
  const dropIface = () => dhcpIface && spawnSync('ip', ['link', 'del', dhcpIface]);
  try {
    return await startWith(dhcpIface, dropIface, opts);
  } catch (e) {
    dropIface();
    throw e;
  }
}

async function startWith(dhcpIface, dropIface, opts) {
  const bin = binary();
  if (!existsSync(bin)) throw new Error(`no bootlane binary at ${bin}: build it (cargo build -p bootlane) or set BOOTLANE_BIN`);
  const dir = mkdtempSync(join(tmpdir(), 'bootlane-ui-'));
  const [api, dns, tftp] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'bootlane.toml');
  // The update source: a local HTTP server the tests publish signed releases on.
  const updates = await startUpdateSource();
  // More configuration from the test, made once the API's address is known
  // (`opts.extraConfig(base)`, e.g. an `[auth.oidc]` section naming the callback).
  const extra = opts.extraConfig ? await opts.extraConfig(`http://127.0.0.1:${api}`, dir) : '';
  writeFileSync(join(dir, 'exportfs'), `#!/bin/sh\necho "$@" >>"${join(dir, 'exportfs.log')}"\n`, { mode: 0o755 });
  writeFileSync(
    config,
    `data_dir = "${join(dir, 'data')}"\n` +
      `[server]\nnode_name = "ui-node-1"\n` +
      `[api]\nlisten = "127.0.0.1:${api}"\n` +
      `[dns]\nport = ${dns}\nlisten = ["127.0.0.1"]\nlocal_domain = "ui.test"\n` +
      `[dns.xdp]\nmode = "off"\n` +
      `[tftp]\nport = ${tftp}\n` +
      // Wake-on-LAN broadcasts only on the test's own interface (nothing leaves the
      // machine); without one, on none (loopback cannot broadcast).
      `[wol]\ninterfaces = ["${dhcpIface ?? 'lo'}"]\n` +
      // NFS exports go to a file of the test's own; exportfs is a recorder (this machine's
      // kernel may have no nfsd, and the host's export table is not the test's to change).
      `[nfs]\nexports_file = "${join(dir, 'bootlane.exports')}"\nexportfs = "${join(dir, 'exportfs')}"\n` +
      `[updates]\nmanifest_url = "${updates.url}/manifest.json"\npublic_key = "${updates.publicKey}"\ntimeout_secs = 5\n` +
      // The test's update source listens on 127.0.0.1, which outbound fetches refuse by
      // default.
      `[outbound]\nallow_loopback = true\n` +
      (dhcpIface ? DHCP_SUBNET(dhcpIface) : '') +
      extra,
  );
  const logPath = join(dir, 'server.log');
  const child = spawn(bin, ['serve', '--config', config], {
    env: { ...process.env, BOOTLANE_ADMIN_PASSWORD: ADMIN_PASSWORD, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  const base = `http://127.0.0.1:${api}`;
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`bootlane exited (${child.exitCode}):\n${log}`);
    if (Date.now() - t0 > 20000) {
      child.kill('SIGTERM');
      throw new Error(`bootlane did not come up:\n${log}`);
    }
    try {
      const r = await fetch(`${base}/api/v1/status`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    dir,
    dnsPort: dns,
    dhcpIface,
    updates,
    log: () => log,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      writeFileSync(logPath, log);
      await updates.close();
      rmSync(dir, { recursive: true, force: true });
      dropIface();
    },
  };
}

/** Logs in over the API and returns a `fetch` wrapper carrying the session cookie. */
export async function apiClient(base) {
  const r = await fetch(`${base}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  });
  if (!r.ok) throw new Error(`login failed: ${r.status} ${await r.text()}`);
  const cookie = r.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  return async (method, path, body) => {
    const resp = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { cookie, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const env = await resp.json();
    if (!env.success) throw new Error(`${method} ${path}: ${resp.status} ${env.error}`);
    return env.data;
  };
}

/**
 * Records what `page` does (API answers, failed requests, navigations, console errors),
 * with times from now; the returned function gives the record and the page's text, for a
 * failing test's diagnostic.
 */
export function tracePage(page, base) {
  const t0 = Date.now();
  const seen = [];
  const at = () => `${Date.now() - t0} ms`;
  page.on('response', (r) => r.url().includes('/api/') && seen.push(`${at()} ${r.status()} ${r.request().method()} ${r.url().replace(base, '')}`));
  page.on('requestfailed', (r) => seen.push(`${at()} failed ${r.url().replace(base, '')}: ${r.failure()?.errorText}`));
  page.on('framenavigated', (f) => f === page.mainFrame() && seen.push(`${at()} at ${f.url().replace(base, '')}`));
  page.on('console', (m) => m.type() === 'error' && seen.push(`${at()} console: ${m.text()}`));
  return async () => `page trace:\n${seen.join('\n')}\npage text: ${(await page.locator('body').innerText().catch((e) => String(e))).slice(0, 800)}`;
}

/** Debian's Chromium, headless. */
export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });
}

export { readFileSync };

/** A free UDP port on loopback. */
async function freeUdpPort() {
  const { createSocket } = await import('node:dgram');
  return new Promise((ok, fail) => {
    const s = createSocket('udp4');
    s.once('error', fail);
    s.bind(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * OpenIPMI's `ipmi_sim` on 127.0.0.1 (recipe in shared/notes/test-doubles.md) with a
 * chassis-control hook keeping the power and boot device in files and logging every
 * `set`; user `admin`, password `secret`. Answers `{port, power(), log(), stop()}`, or
 * null (with the reason on stderr) when `ipmi_sim` is not installed.
 */
export async function startIpmiSim() {
  if (spawnSync('sh', ['-c', 'command -v ipmi_sim']).status !== 0) {
    console.error('# ipmi_sim not installed (Debian openipmi): the BMC browser test is skipped');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'bootlane-ui-bmc-'));
  const port = await freeUdpPort();
  const hook = join(dir, 'chassis.sh');
  writeFileSync(
    hook,
    `#!/bin/sh
D=${dir}
dev=$1; op=$2; shift 2
case "$op" in
get) for k in "$@"; do case $k in
       power) echo "power:$(cat $D/power 2>/dev/null || echo 0)";;
       boot) echo "boot:$(cat $D/boot 2>/dev/null || echo default)";;
     esac; done;;
set) while [ $# -gt 0 ]; do k=$1; v=$2; shift 2; echo "set $k $v" >> $D/log
       case $k in power) echo $v > $D/power;; boot) echo $v > $D/boot;; reset) echo 1 > $D/power;; esac
     done;;
check) exit 1;;
esac
`,
    { mode: 0o755 },
  );
  writeFileSync(
    join(dir, 'lan.conf'),
    `name "bootlane-ui-bmc"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 ${port}
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "${hook} 0x20"
  user 2 true  "admin" "secret" admin 10 none md2 md5 straight
`,
  );
  writeFileSync(
    join(dir, 'bmc.emu'),
    'mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nsel_enable 0x20 1000 0x0a\nmc_enable 0x20\n',
  );
  const state = join(dir, 'state');
  spawnSync('mkdir', [state]);
  const child = spawn('ipmi_sim', ['-c', join(dir, 'lan.conf'), '-f', join(dir, 'bmc.emu'), '-s', state, '-n'], { stdio: 'ignore' });
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  // Ready when ipmitool gets an answer.
  for (let i = 0; i < 50; i++) {
    const r = spawnSync('ipmitool', ['-I', 'lanplus', '-C', '3', '-H', '127.0.0.1', '-p', String(port), '-U', 'admin', '-P', 'secret', '-N', '1', '-R', '1', 'chassis', 'power', 'status'], {
      encoding: 'utf8',
    });
    if (r.status === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  const read = (f) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), 'utf8').trim() : '');
  return { port, power: () => read('power') || '0', log: () => read('log').split('\n').filter(Boolean), stop };
}
