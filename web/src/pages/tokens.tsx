// API tokens (on the Account page): the signed-in user's tokens for automation, or every
// user's for an admin. Create one (a name, a role no higher than yours, days until it
// expires): its secret is shown this once, to copy into the script or pipeline that sends
// it as `Authorization: Bearer`. The list shows each token's role, owner, expiry and last
// use (time and address); revoking one refuses it at once. Live on `token.*` events.

import { useState } from 'preact/hooks';
import { api } from '../api';
import { Err, Form, Table, currentRole, useGet, when } from '../ui';

interface TokenView {
  id: string;
  name: string;
  role: string;
  owner: string;
  created_at: string;
  expires_at: string;
  expired: boolean;
  last_used_at: string | null;
  last_used_from: string | null;
}

const ROLES = ['viewer', 'operator', 'admin'];

export function ApiTokens() {
  const list = useGet<{ tokens: TokenView[] }>('/tokens', ['token.']);
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const mine = ROLES.slice(0, ROLES.indexOf(currentRole()) + 1);
  return (
    <div>
      <h2>API tokens</h2>
      <p class="muted">For scripts and automation: sent as <code>Authorization: Bearer</code> instead of a password.</p>
      <Err msg={err ?? list.error} />
      {secret && (
        <div class="panel" data-testid="token-secret">
          <p>
            The secret of <b>{secret.name}</b>, shown only now: copy it into what will use it.
          </p>
          <p>
            <code data-testid="token-secret-value">{secret.secret}</code>
          </p>
          <button onClick={() => setSecret(null)}>Done</button>
        </div>
      )}
      {adding ? (
        <div class="panel">
          <Form
            testid="token-form"
            own
            fields={[
              { name: 'name', label: 'Name', required: true, hint: "1-64 letters, digits, spaces or '. _ - : @ /'" },
              { name: 'role', label: 'Role', type: 'select', options: mine, hint: 'no higher than your own role' },
              { name: 'expires_in_days', label: 'Expires in (days)', type: 'number', required: true, hint: '1 to 365' },
            ]}
            initial={{ role: 'viewer', expires_in_days: '90' }}
            submitLabel="Create"
            cancel={() => setAdding(false)}
            submit={async (v) => {
              const r = await api<{ token: TokenView; secret: string }>('POST', '/tokens', {
                name: String(v.name ?? ''),
                role: String(v.role ?? 'viewer'),
                expires_in_days: Number(v.expires_in_days),
              });
              setAdding(false);
              setSecret({ name: r.token.name, secret: r.secret });
              list.reload();
            }}
          />
        </div>
      ) : (
        <button class="primary" onClick={() => (setErr(null), setAdding(true))}>
          Create token
        </button>
      )}
      <Table
        testid="tokens"
        rows={list.data?.tokens}
        empty="No API tokens."
        cols={[
          { h: 'Name', f: (t) => t.name },
          { h: 'Role', f: (t) => t.role },
          { h: 'Owner', f: (t) => t.owner },
          { h: 'Created', f: (t) => when(t.created_at) },
          { h: 'Expires', f: (t) => (t.expired ? `expired ${when(t.expires_at)}` : when(t.expires_at)) },
          { h: 'Last used', f: (t) => (t.last_used_at ? `${when(t.last_used_at)} from ${t.last_used_from ?? '?'}` : 'never') },
          {
            h: '',
            f: (t) => (
              // Not `Danger`: a viewer revokes their own tokens too.
              <button
                class="danger"
                onClick={() => {
                  if (confirm(`Revoke the token ${t.name} of ${t.owner}? What uses it is refused at once.`))
                    api('DELETE', `/tokens/${encodeURIComponent(t.id)}`).then(list.reload, (e: Error) => setErr(e.message));
                }}
              >
                Revoke
              </button>
            ),
          },
        ]}
      />
    </div>
  );
}
