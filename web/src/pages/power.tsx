// BMC power: every BMC config with its live power state (from the last refresh or power
// action; `bmc.*` events reload the table), power buttons (on, on into PXE, off,
// restart, refresh), the boot device, a form to add a BMC (the password is write-only),
// and a CSV import whose per-row results are shown.

import { useState } from 'preact/hooks';
import { api, ApiError, BASE, qs, toLogin } from '../api';
import { Danger, Err, Form, Header, Pager, Table, useGet, when } from '../ui';

/** `crate::bmc::model::BmcView`. */
interface Bmc {
  id: number;
  host_id?: number | null;
  name: string;
  address: string;
  port: number;
  protocol: string;
  user: string;
  has_password: boolean;
  cipher_suite: number;
  system_id?: string | null;
  verify_tls: boolean;
  status: { power_state?: string | null; last_checked?: string | null; last_error?: string | null };
  identity: { manufacturer?: string | null; model?: string | null; serial?: string | null };
}

/** `crate::bmc::service::PowerOutcome`. */
interface PowerOutcome {
  action: string;
  sent?: string | null;
  power_state_before: string;
  power_state: string;
  settled: boolean;
}

interface ImportReport {
  imported: number;
  failed: number;
  rows: { row: number; ok: boolean; name?: string | null; error?: string | null }[];
}

function PowerState(props: { s?: string | null }) {
  const s = props.s ?? 'unknown';
  return <span class={`power ${s}`} data-testid="power-state">{s}</span>;
}

function Actions(props: { b: Bmc; done: (msg: string, ok: boolean) => void }) {
  const [busy, setBusy] = useState(false);
  const [dev, setDev] = useState('pxe');
  const run = async (label: string, f: () => Promise<string>) => {
    setBusy(true);
    try {
      props.done(`${props.b.name}: ${await f()}`, true);
    } catch (e) {
      props.done(`${props.b.name}: ${label} failed: ${(e as Error).message}`, false);
    } finally {
      setBusy(false);
    }
  };
  const power = (path: string, label: string, body?: unknown) =>
    run(label, async () => {
      const o = await api<PowerOutcome>('POST', `/bmc/${props.b.id}/${path}`, body);
      return `${label}: ${o.power_state_before} → ${o.power_state}${o.settled ? '' : ' (not settled yet)'}`;
    });
  return (
    <div class="btn-row">
      <button disabled={busy} onClick={() => power('power-on', 'power on')}>
        On
      </button>
      <button disabled={busy} onClick={() => power('power-on', 'power on into PXE', { pxe: true })}>
        On → PXE
      </button>
      <button disabled={busy} class="danger" onClick={() => confirm(`Power off ${props.b.name}?`) && power('power-off', 'power off')}>
        Off
      </button>
      <button disabled={busy} onClick={() => confirm(`Restart ${props.b.name}?`) && power('restart', 'restart')}>
        Restart
      </button>
      <button disabled={busy} onClick={() => run('refresh', async () => `refreshed: ${(await api<Bmc>('POST', `/bmc/${props.b.id}/refresh`)).status.power_state}`)}>
        Refresh
      </button>
      <select aria-label={`boot device of ${props.b.name}`} value={dev} onChange={(e) => setDev(e.currentTarget.value)}>
        {['pxe', 'disk', 'cdrom', 'bios'].map((d) => (
          <option>{d}</option>
        ))}
      </select>
      <button
        disabled={busy}
        onClick={() =>
          run('boot device', async () => {
            const o = await api<{ matches: boolean; message: string }>('POST', `/bmc/${props.b.id}/boot-device`, { device: dev });
            return o.matches ? `next boot from ${dev}` : `boot device ${dev} asked, but ${o.message}`;
          })
        }
      >
        Set boot
      </button>
    </div>
  );
}

async function importCsv(text: string): Promise<ImportReport> {
  const resp = await fetch(`${BASE}/bmc/configs/import`, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'text/csv' }, body: text });
  if (resp.status === 401) toLogin();
  const env = await resp.json().catch(() => ({}));
  if (!resp.ok || env.success === false) throw new ApiError(resp.status, env.error ?? `the import answered ${resp.status}`);
  return env.data as ImportReport;
}

export function Power() {
  const [q, setQ] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const list = useGet<{ configs: Bmc[]; total: number }>(`/bmc/configs${qs({ q, page, size })}`, ['bmc.']);
  const [adding, setAdding] = useState(false);
  const [importing, setImporting] = useState(false);
  const [csv, setCsv] = useState('name,address,protocol,user,password,port\n');
  const [report, setReport] = useState<ImportReport | null>(null);
  const [msg, setMsg] = useState<{ text: string; ok: boolean } | null>(null);
  return (
    <section>
      <Header title="Power (BMC)">
        <input type="search" placeholder="Search name, address, model, serial" aria-label="search BMCs" value={q} onInput={(e) => (setQ(e.currentTarget.value), setPage(1))} />
        <button onClick={() => setImporting(!importing)}>Import CSV</button>
        <button class="primary" onClick={() => setAdding(true)}>
          Add BMC
        </button>
      </Header>
      {msg && (
        <p class={msg.ok ? 'ok' : 'error'} role={msg.ok ? 'status' : 'alert'} data-testid="power-msg">
          {msg.text}
        </p>
      )}
      {adding && (
        <div class="panel">
          <Form
            testid="bmc-form"
            fields={[
              { name: 'name', label: 'Name', required: true },
              { name: 'protocol', label: 'Protocol', type: 'select', options: ['ipmi', 'redfish'] },
              { name: 'address', label: 'Address', placeholder: '10.0.0.20 or bmc1.lab', required: true },
              { name: 'port', label: 'Port', type: 'number', hint: 'empty: 623 (IPMI) or 443 (Redfish)' },
              { name: 'user', label: 'User', required: true },
              { name: 'password', label: 'Password', type: 'password', hint: 'stored encrypted; never shown again' },
              { name: 'cipher_suite', label: 'IPMI cipher suite', type: 'number', hint: 'default 3' },
              { name: 'system_id', label: 'Redfish system id', hint: 'empty: the first system' },
              { name: 'host_id', label: 'Host id', type: 'number', hint: 'link to a host (for its Power button)' },
              { name: 'verify_tls', label: 'Verify TLS (Redfish)', type: 'checkbox' },
            ]}
            initial={{ protocol: 'ipmi', verify_tls: true }}
            submitLabel="Add"
            cancel={() => setAdding(false)}
            submit={async (v) => {
              const num = (k: string) => (v[k] === undefined || v[k] === '' ? undefined : Number(v[k]));
              const str = (k: string) => (v[k] ? String(v[k]) : undefined);
              await api('POST', '/bmc/configs', {
                name: str('name'),
                protocol: str('protocol') ?? 'ipmi',
                address: str('address'),
                port: num('port'),
                user: str('user'),
                password: str('password'),
                cipher_suite: num('cipher_suite'),
                system_id: str('system_id'),
                host_id: num('host_id'),
                verify_tls: !!v.verify_tls,
              });
              setAdding(false);
              list.reload();
            }}
          />
        </div>
      )}
      {importing && (
        <div class="panel" data-testid="bmc-import">
          <p class="muted">Header row first: name, address, protocol, user required; port, password, cipher_suite, system_id, verify_tls, host_id optional.</p>
          <textarea aria-label="CSV" rows={6} value={csv} onInput={(e) => setCsv(e.currentTarget.value)} />
          <div class="form-actions">
            <button
              class="primary"
              onClick={() =>
                importCsv(csv).then(
                  (r) => (setReport(r), list.reload()),
                  (e: Error) => setMsg({ text: e.message, ok: false }),
                )
              }
            >
              Import
            </button>
          </div>
          {report && (
            <div data-testid="import-report">
              <p>
                {report.imported} imported, {report.failed} refused.
              </p>
              <ul>
                {report.rows
                  .filter((r) => !r.ok)
                  .map((r) => (
                    <li class="failed">
                      line {r.row}
                      {r.name ? ` (${r.name})` : ''}: {r.error}
                    </li>
                  ))}
              </ul>
            </div>
          )}
        </div>
      )}
      <Err msg={list.error} />
      <Table
        testid="bmc-table"
        rows={list.data?.configs}
        empty="No BMC yet: add one, or import a CSV."
        cols={[
          { h: 'Name', f: (b) => b.name },
          { h: 'BMC', f: (b) => <code>{`${b.protocol}://${b.address}:${b.port}`}</code> },
          { h: 'Host', f: (b) => (b.host_id != null ? `#${b.host_id}` : '-') },
          { h: 'Machine', f: (b) => [b.identity.manufacturer, b.identity.model, b.identity.serial].filter(Boolean).join(' / ') || '-' },
          {
            h: 'Power',
            f: (b) => (
              <span title={b.status.last_error ?? undefined}>
                <PowerState s={b.status.power_state} />
                {b.status.last_error ? <span class="failed"> ({b.status.last_error})</span> : ''}
                <br />
                <span class="muted">{when(b.status.last_checked)}</span>
              </span>
            ),
          },
          { h: '', f: (b) => <Actions b={b} done={(text, ok) => (setMsg({ text, ok }), list.reload())} /> },
          {
            h: '',
            f: (b) => <Danger label="Delete" question={`Delete the BMC config ${b.name}?`} action={() => api('DELETE', `/bmc/configs/${b.id}`).then(list.reload, (e: Error) => setMsg({ text: e.message, ok: false }))} />,
          },
        ]}
      />
      {list.data && <Pager page={page} size={size} total={list.data.total} go={setPage} />}
    </section>
  );
}
