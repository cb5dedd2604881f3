// Entry point of the Bootlane web UI: the shell (navigation, user, live indicator),
// the login page, and the client-side routes. The server answers every non-API path
// with index.html, so a deep link or a reload lands here and the router picks the
// page.

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Router, Route, useLocation } from 'preact-iso';
import { api, ApiError, setNavigate } from './api';
import * as live from './live';
import { currentRole, setRole, type Role } from './ui';
import { Login } from './pages/login';
import { Dashboard } from './pages/dashboard';
import { DnsRecords, DnsSettings } from './pages/dns';
import { Leases, Reservations } from './pages/dhcp';
import { DhcpSettings, TftpSettings } from './pages/dhcpsettings';
import { Hosts } from './pages/hosts';
import { Profiles } from './pages/profiles';
import { Services } from './pages/services';
import { Settings } from './pages/settings';
import { Events, Audit } from './pages/events';
import { Logs } from './pages/logs';
import { Wol } from './pages/wol';
import { Network } from './pages/network';
import { Doctor } from './pages/doctor';
import { Boots } from './pages/boots';
import { Access } from './pages/access';
import { Power } from './pages/power';
import { Users } from './pages/users';
import { Account } from './pages/account';
import { OsImages, NetbootCatalog } from './pages/media';
import { Nfs } from './pages/nfs';
import { InstallTasks } from './pages/install';
import { AnswerTemplates } from './pages/answers';
import { Scripts, Baselines } from './pages/scripts';
import { Store } from './pages/store';
import './style.css';

/** Navigation: label and UI path (the spec names "Service Config > DNS" = /services/dns). */
const NAV: [string, [string, string][]][] = [
  ['Overview', [['Dashboard', '/']]],
  [
    'Boot',
    [
      ['Hosts', '/hosts'],
      ['Boots', '/boots'],
      ['Profiles', '/profiles'],
      ['Leases', '/dhcp/leases'],
      ['Reservations', '/dhcp/reservations'],
      ['OS images', '/os-images'],
      ['Netboot catalog', '/netboot'],
      ['Answer templates', '/answer-templates'],
      ['Install tasks', '/install-tasks'],
      ['Scripts', '/scripts'],
      ['Baselines', '/baselines'],
      ['Store', '/store'],
      ['Wake-on-LAN', '/wol'],
      ['Power (BMC)', '/power'],
      ['Access control', '/access'],
    ],
  ],
  ['DNS', [['Records', '/dns']]],
  [
    'Tools',
    [
      ['Diagnostics', '/network'],
      ['Doctor', '/doctor'],
    ],
  ],
  [
    'Service Config',
    [
      ['Services', '/services'],
      ['DNS', '/services/dns'],
      ['DHCP', '/services/dhcp'],
      ['TFTP', '/services/tftp'],
      ['NFS', '/services/nfs'],
      ['Settings', '/settings'],
      ['Users', '/users'],
    ],
  ],
  [
    'Activity',
    [
      ['Events', '/events'],
      ['Audit log', '/audit'],
      ['Logs', '/logs'],
    ],
  ],
];

interface Status {
  version: string;
  node: string;
  uptime_secs: number;
  store_backend: string;
  tls: { source: string; fingerprint_sha256: string; not_before: string; not_after: string } | null;
}

/** The about box: version, node, and the management certificate an operator compares
 * with the one the browser shows (`GET /api/v1/status`, field `tls`). */
function About(props: { onClose: () => void }) {
  const [s, setS] = useState<Status | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    api<Status>('GET', '/status').then(setS, (e) => setErr(String(e)));
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && props.onClose();
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="about-backdrop" onClick={props.onClose}>
      <div class="panel about" role="dialog" aria-modal="true" aria-labelledby="about-title" data-testid="about" onClick={(e) => e.stopPropagation()}>
        <h2 id="about-title">About Bootlane</h2>
        {err && <p class="error">{err}</p>}
        {s && (
          <dl>
            <dt>Version</dt>
            <dd>{s.version}</dd>
            <dt>Node</dt>
            <dd>{s.node}</dd>
            <dt>Store</dt>
            <dd>{s.store_backend}</dd>
            <dt>Connection</dt>
            {s.tls ? (
              <>
                <dd>HTTPS, certificate from {s.tls.source === 'self-signed' ? 'a self-signed certificate made by this server' : s.tls.source === 'acme' ? 'ACME' : 'files'}</dd>
                <dt>Certificate SHA-256</dt>
                <dd>
                  <code data-testid="tls-fingerprint">{s.tls.fingerprint_sha256}</code>
                </dd>
                <dt>Valid until</dt>
                <dd>{new Date(s.tls.not_after).toLocaleString()}</dd>
              </>
            ) : (
              <dd>plain HTTP (no TLS on this listener)</dd>
            )}
          </dl>
        )}
        <div class="actions">
          <button onClick={props.onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}

function Shell(props: { user: string; onLogout: () => void }) {
  const { path, route } = useLocation();
  const [up, setUp] = useState(live.connected);
  const [open, setOpen] = useState(false);
  const [about, setAbout] = useState(false);
  useEffect(() => {
    const off = live.onStatus(setUp);
    setUp(live.connected); // it may have connected between the first render and now
    return off;
  }, []);
  useEffect(() => setOpen(false), [path]);
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="topbar">
        <button class="menu-toggle" aria-label="menu" aria-expanded={open} onClick={() => setOpen(!open)}>
          ☰
        </button>
        <a href="/" class="brand">
          Bootlane
        </a>
        <span class={`live ${up ? 'up' : 'down'}`} title={up ? 'live updates on' : 'live updates reconnecting'} data-testid="live">
          {up ? '● live' : '○ offline'}
        </span>
        <span class="user" data-testid="whoami">
          {props.user} · {currentRole()}
        </span>
        <button onClick={() => route('/account')} data-testid="account">
          Account
        </button>
        <button onClick={() => setAbout(true)}>About</button>
        <button
          onClick={async () => {
            const r = await api<{ logout_url?: string }>('POST', '/auth/logout').catch(() => undefined);
            live.stop();
            props.onLogout();
            // A single-sign-on session: end it at the provider too (RP-initiated logout).
            if (r?.logout_url) location.assign(r.logout_url);
            else route('/login');
          }}
        >
          Log out
        </button>
      </header>
      <nav class={`sidebar${open ? ' open' : ''}`} aria-label="main">
        {NAV.map(([group, items]) => (
          <div class="nav-group">
            <div class="nav-title">{group}</div>
            {items
              .filter(([, href]) => currentRole() === 'admin' || !ADMIN_PAGES.includes(href))
              .map(([label, href]) => (
              <a href={href} class={path === href ? 'active' : ''} aria-current={path === href ? 'page' : undefined}>
                {label}
              </a>
            ))}
          </div>
        ))}
      </nav>
      <main class="content" id="main" tabIndex={-1}>
        <Router>
          <Route path="/" component={Dashboard} />
          <Route path="/dns" component={DnsRecords} />
          <Route path="/services/dns" component={DnsSettings} />
          <Route path="/services/dhcp" component={DhcpSettings} />
          <Route path="/services/tftp" component={TftpSettings} />
          <Route path="/services/nfs" component={Nfs} />
          <Route path="/services" component={Services} />
          <Route path="/dhcp/leases" component={Leases} />
          <Route path="/dhcp/reservations" component={Reservations} />
          <Route path="/hosts" component={Hosts} />
          <Route path="/profiles" component={Profiles} />
          <Route path="/settings" component={Settings} />
          <Route path="/events" component={Events} />
          <Route path="/audit" component={Audit} />
          <Route path="/logs" component={Logs} />
          <Route path="/wol" component={Wol} />
          <Route path="/network" component={Network} />
          <Route path="/doctor" component={Doctor} />
          <Route path="/boots/:id?" component={Boots} />
          <Route path="/access" component={Access} />
          <Route path="/power" component={Power} />
          <Route path="/users" component={Users} />
          <Route path="/account" component={Account} />
          <Route path="/os-images" component={OsImages} />
          <Route path="/netboot" component={NetbootCatalog} />
          <Route path="/answer-templates" component={AnswerTemplates} />
          <Route path="/scripts" component={Scripts} />
          <Route path="/baselines" component={Baselines} />
          <Route path="/store" component={Store} />
          <Route path="/install-tasks" component={InstallTasks} />
          <Route default component={NotFound} />
        </Router>
      </main>
      {about && <About onClose={() => setAbout(false)} />}
    </div>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page here. <a href="/">Back to the dashboard</a>.
      </p>
    </section>
  );
}

interface Session {
  authenticated: boolean;
  username?: string | null;
  role?: Role | null;
}

/** Pages only admins can use (the API answers others 403): hidden from other roles. */
const ADMIN_PAGES = ['/services', '/services/dns', '/services/dhcp', '/services/tftp', '/services/nfs', '/settings', '/users', '/store', '/updates'];

function App() {
  const loc = useLocation();
  const [user, setUser] = useState<string | null | undefined>(undefined);
  // Why the session check has not answered yet (the server is unreachable or failing).
  const [waiting, setWaiting] = useState<string | null>(null);
  setNavigate((u) => loc.route(u));
  const onLogin = loc.path === '/login';
  useEffect(() => {
    // On the login page, or signed in just now (the login answer named the user and
    // role): nothing to check.
    if (onLogin || user) return;
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const check = () =>
      api<Session>('GET', '/auth/session').then(
        (s) => {
          if (cancelled) return;
          setWaiting(null);
          if (s.authenticated) {
            setRole(s.role ?? 'viewer');
            setUser(s.username ?? 'admin');
            live.start();
          } else {
            setUser(null);
            loc.route(`/login?next=${encodeURIComponent(loc.url)}`);
          }
        },
        (e) => {
          // A 401 has already led to the login page; anything else (no answer, 5xx) is
          // transient: say so and ask again, never leave the page blank.
          if (cancelled || (e instanceof ApiError && e.status === 401)) return;
          setWaiting(e instanceof Error ? e.message : String(e));
          timer = setTimeout(check, 2000);
        },
      );
    void check();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, [onLogin]);
  if (onLogin) {
    return (
      <Login
        onDone={(u, r) => {
          setRole(r);
          setUser(u);
          live.start();
        }}
      />
    );
  }
  if (!user)
    return (
      <p class="muted center" data-testid="session-check">
        {waiting ? `Waiting for the server (${waiting})…` : 'Loading…'}
      </p>
    );
  return <Shell user={user} onLogout={() => setUser(null)} />;
}

render(
  <LocationProvider>
    <App />
  </LocationProvider>,
  document.getElementById('app')!,
);
