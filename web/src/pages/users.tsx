// Users: who can log in. List, add (the password is sent once and stored as an argon2id
// hash), change a password (that user's sessions end: your own too, which leads to the
// login page), delete (not the last user). Live on `user.*` events.

import { useState } from 'preact/hooks';
import { api } from '../api';
import { Danger, Err, Form, Header, Table, useGet, when } from '../ui';

interface UserView {
  username: string;
  created_at: string;
}

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
            ]}
            submitLabel="Add"
            cancel={() => setAdding(false)}
            submit={async (v) => {
              await api('POST', '/users', { username: String(v.username ?? ''), password: String(v.password ?? '') });
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
          { h: 'Created', f: (u) => when(u.created_at) },
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
