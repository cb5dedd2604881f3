// Users: who can log in and with which role. List, add (the password is sent once and
// stored as an argon2id hash; the role is viewer unless chosen), change a role (open
// sessions follow at once; not the last admin), change a password (that user's sessions
// end: your own too, which leads to the login page), delete (not the last user, nor the
// last admin), turn off a user's second factor (a lost authenticator). Live on `user.*`
// events.

import { useState } from 'preact/hooks';
import { api } from '../api';
import { Danger, Err, Form, Header, Table, useGet, when } from '../ui';

interface UserView {
  username: string;
  created_at: string;
  role: string;
  totp_enabled?: boolean;
}

const ROLES = ['viewer', 'operator', 'admin'];

export function Users() {
  const list = useGet<{ users: UserView[] }>('/users', ['user.']);
  const [adding, setAdding] = useState(false);
  const [pw, setPw] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  return (
    <section>
      <Header title="Users">
        <button class="primary" onClick={() => setAdding(true)}>
          Add user
        </button>
      </Header>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err ?? list.error} />
      {adding && (
        <div class="panel">
          <Form
            testid="user-form"
            fields={[
              { name: 'username', label: 'User name', required: true, hint: "1-64 letters, digits, '.', '_', '-' or '@'" },
              { name: 'password', label: 'Password', type: 'password', required: true },
              { name: 'role', label: 'Role', type: 'select', options: ROLES, hint: 'viewer reads; operator does the day-to-day work; admin also manages users, settings and services' },
            ]}
            initial={{ role: 'viewer' }}
            submitLabel="Add"
            cancel={() => setAdding(false)}
            submit={async (v) => {
              await api('POST', '/users', { username: String(v.username ?? ''), password: String(v.password ?? ''), role: String(v.role ?? 'viewer') });
              setAdding(false);
              setMsg(`Added ${v.username}.`);
              list.reload();
            }}
          />
        </div>
      )}
      {pw && (
        <div class="panel">
          <Form
            testid="password-form"
            fields={[{ name: 'password', label: `New password for ${pw}`, type: 'password', required: true }]}
            submitLabel="Change password"
            cancel={() => setPw(null)}
            submit={async (v) => {
              const r = await api<{ sessions_ended: number }>('PUT', `/users/${encodeURIComponent(pw)}/password`, { password: String(v.password ?? '') });
              setPw(null);
              setMsg(`Password of ${pw} changed; ${r.sessions_ended} session(s) ended.`);
            }}
          />
        </div>
      )}
      <Table
        testid="users"
        rows={list.data?.users}
        cols={[
          { h: 'User', f: (u) => u.username },
          {
            h: 'Role',
            f: (u) => (
              <select
                aria-label={`role of ${u.username}`}
                value={u.role}
                onChange={(e) =>
                  api('PUT', `/users/${encodeURIComponent(u.username)}/role`, { role: (e.target as HTMLSelectElement).value }).then(
                    () => (setMsg(`${u.username} is now ${(e.target as HTMLSelectElement).value}.`), list.reload()),
                    (x: Error) => (setErr(x.message), list.reload()),
                  )
                }
              >
                {ROLES.map((r) => (
                  <option value={r}>{r}</option>
                ))}
              </select>
            ),
          },
          { h: 'Created', f: (u) => when(u.created_at) },
          {
            h: 'Two-factor',
            f: (u) =>
              u.totp_enabled ? (
                <Danger
                  label="Turn off two-factor"
                  question={`Turn off the second factor of ${u.username}? They sign in with the password alone until they enrol again.`}
                  action={() =>
                    api('DELETE', `/users/${encodeURIComponent(u.username)}/totp`).then(
                      () => (setMsg(`Second factor of ${u.username} turned off.`), list.reload()),
                      (e: Error) => setErr(e.message),
                    )
                  }
                />
              ) : (
                'off'
              ),
          },
          { h: '', f: (u) => <button onClick={() => setPw(u.username)}>Change password</button> },
          {
            h: '',
            f: (u) => (
              <Danger
                label="Delete"
                question={`Delete user ${u.username}? Their sessions end.`}
                action={() => api('DELETE', `/users/${encodeURIComponent(u.username)}`).then(list.reload, (e: Error) => setErr(e.message))}
              />
            ),
          },
        ]}
      />
    </section>
  );
}
