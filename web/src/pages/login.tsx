// The login page. On success it goes back to `?next=` (where a 401 came from). The
// first-run hint explains where the initial admin password is: the server creates user
// `admin` on first start with `BOOTLANE_ADMIN_PASSWORD`, or a generated password that it
// logs and writes to `<data_dir>/initial-admin-password`.

import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiError } from '../api';
import type { Role } from '../ui';

// Why single sign-on sent the browser back here (`/login?sso_error=<code>`).
const SSO_ERRORS: Record<string, string> = {
  no_role: 'Single sign-on refused: your account is in no group that has access to Bootlane. Ask an administrator.',
  local_name: 'Single sign-on refused: your user name is taken by a local account here. Ask an administrator.',
  provider: 'Single sign-on was cancelled or refused by the identity provider.',
  state: 'Single sign-on expired or was started in another browser window. Try again.',
  token: 'Single sign-on failed: the identity provider’s answer did not pass the checks.',
  unavailable: 'Single sign-on is unavailable: the identity provider could not be reached.',
};

export function Login(props: { onDone: (user: string, role: Role) => void }) {
  const { query, route } = useLocation();
  const [username, setUsername] = useState('admin');
  const [password, setPassword] = useState('');
  // The one-time code: asked for once the server answers `otp_required` (a second factor).
  const [otp, setOtp] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // `[auth.oidc]`: the "Sign in with <provider>" link, when single sign-on is on.
  const [sso, setSso] = useState<string | null>(null);
  useEffect(() => {
    api<{ enabled: boolean; display_name?: string }>('GET', '/auth/oidc')
      .then((r) => setSso(r.enabled ? (r.display_name ?? 'SSO') : null))
      .catch(() => setSso(null));
  }, []);
  const ssoError = query.sso_error ? (SSO_ERRORS[query.sso_error] ?? 'Single sign-on failed.') : null;
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const r = await api<{ role: Role }>('POST', '/auth/login', otp === null ? { username, password } : { username, password, otp });
      props.onDone(username, r.role);
      const next = query.next && query.next.startsWith('/') && !query.next.startsWith('//') ? query.next : '/';
      route(next, true);
    } catch (x) {
      if (x instanceof ApiError && x.detail.otp_required === true && otp === null) {
        setOtp('');
        setError(null);
      } else {
        setError(x instanceof ApiError ? x.message : String(x));
      }
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="login-wrap">
      <form class="login form" onSubmit={submit} data-testid="login">
        <h1>Bootlane</h1>
        {ssoError && !error && (
          <p class="error" role="alert" data-testid="sso-error">
            {ssoError}
          </p>
        )}
        {error && (
          <p class="error" role="alert" data-testid="login-error">
            {error}
          </p>
        )}
        <div class="field">
          <label for="username">User</label>
          <input id="username" name="username" autocomplete="username" value={username} onInput={(e) => setUsername(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="current-password"
            autofocus
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </div>
        {otp !== null && (
          <div class="field">
            <label for="otp">One-time code</label>
            <input
              id="otp"
              name="otp"
              autocomplete="one-time-code"
              inputMode="numeric"
              autofocus
              value={otp}
              onInput={(e) => setOtp(e.currentTarget.value)}
            />
            <small>The 6-digit code of your authenticator app, or a recovery code.</small>
          </div>
        )}
        <button type="submit" class="primary" disabled={busy}>
          Log in
        </button>
        {sso && (
          // A full navigation (the provider's page), not a route of this app.
          <button type="button" class="sso" onClick={() => location.assign('/api/v1/auth/oidc/login')} data-testid="sso">
            Sign in with {sso}
          </button>
        )}
        <details class="hint">
          <summary>First run?</summary>
          <p>
            On its first start Bootlane creates the user <code>admin</code>. Its password is the value of{' '}
            <code>BOOTLANE_ADMIN_PASSWORD</code> if that was set; otherwise a generated one, printed in the server log
            and written to <code>&lt;data_dir&gt;/initial-admin-password</code> (readable by root only).
          </p>
        </details>
      </form>
    </div>
  );
}
