// Account: the signed-in local user's two-factor sign-in (TOTP). Off: "Set up" starts an
// enrolment (the server makes a secret; the page shows its QR code and the secret for
// typing), then a code from the app confirms it and the recovery codes are shown this
// once. On: how many recovery codes are left, and turning it off with a current code
// (or a recovery code). Directory and single-sign-on users get the server's 403 text.
// Below it, the user's API tokens ([`ApiTokens`]).

import { useState } from 'preact/hooks';
import { api } from '../api';
import { Err, Header, useAction, useGet } from '../ui';
import { ApiTokens } from './tokens';

interface TotpState {
  enabled: boolean;
  pending: boolean;
  recovery_codes_left: number;
}

interface Enrolment {
  secret: string;
  otpauth_uri: string;
  qr_png: string;
}

export function Account() {
  const state = useGet<TotpState>('/auth/totp', ['user.totp_']);
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [code, setCode] = useState('');
  const { run, err, msg, setMsg } = useAction();
  const s = state.data;
  return (
    <section>
      <Header title="Account" />
      <h2>Two-factor sign-in</h2>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err ?? state.error} />
      {codes && (
        <div class="panel" data-testid="recovery-codes">
          <p>
            Two-factor sign-in is on. Keep these recovery codes somewhere safe: each signs in once in place of a code,
            and they are shown only now.
          </p>
          <ul>
            {codes.map((c) => (
              <li>
                <code>{c}</code>
              </li>
            ))}
          </ul>
          <button onClick={() => setCodes(null)}>Done</button>
        </div>
      )}
      {s && !s.enabled && !enrolment && (
        <div class="panel">
          <p data-testid="totp-state">Two-factor sign-in is off.</p>
          <button
            class="primary"
            onClick={() =>
              run(async () => {
                setEnrolment(await api<Enrolment>('POST', '/auth/totp/enrol'));
                setCode('');
              })
            }
          >
            Set up two-factor sign-in
          </button>
        </div>
      )}
      {enrolment && (
        <form
          class="panel form"
          data-testid="totp-enrol"
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              const r = await api<{ recovery_codes: string[] }>('POST', '/auth/totp/confirm', { code: code.trim() });
              setEnrolment(null);
              setCode('');
              setCodes(r.recovery_codes);
              state.reload();
            });
          }}
        >
          <p>Scan this code with an authenticator app, or type the secret into it, then enter the 6-digit code it shows.</p>
          <img src={enrolment.qr_png} alt="QR code of the two-factor secret" width={200} height={200} data-testid="totp-qr" />
          <p>
            Secret: <code data-testid="totp-secret">{enrolment.secret}</code>
          </p>
          <div class="field">
            <label for="totp-code">Code</label>
            <input id="totp-code" autocomplete="one-time-code" inputMode="numeric" value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          </div>
          <button type="submit" class="primary">
            Confirm
          </button>{' '}
          <button type="button" onClick={() => setEnrolment(null)}>
            Cancel
          </button>
        </form>
      )}
      {s && s.enabled && (
        <form
          class="panel form"
          data-testid="totp-disable"
          onSubmit={(e) => {
            e.preventDefault();
            run(async () => {
              await api('DELETE', '/auth/totp', { code: code.trim() });
              setCode('');
              setMsg('Two-factor sign-in is off.');
              state.reload();
            });
          }}
        >
          <p data-testid="totp-state">
            Two-factor sign-in is on; {s.recovery_codes_left} recovery code{s.recovery_codes_left === 1 ? '' : 's'} left.
          </p>
          <div class="field">
            <label for="totp-off-code">Current code or a recovery code</label>
            <input id="totp-off-code" autocomplete="one-time-code" value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          </div>
          <button type="submit">Turn off two-factor sign-in</button>
        </form>
      )}
      <ApiTokens />
    </section>
  );
}
