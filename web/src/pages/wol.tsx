// Wake-on-LAN: the interfaces a wake can broadcast on, the wake history (server paging,
// delete one, clear all) and the wake schedules (cron in a time zone, targets as host
// ids and MACs). Live on `wol.*` events. The per-host Wake button is on the hosts page
// (`WakeButton` below).

import { useState } from 'preact/hooks';
import { api, ApiError, qs } from '../api';
import { Danger, Err, Form, Header, Pager, Table, useGet, when } from '../ui';

/** A wake history record (`GET /wol/history`). */
export interface WolRecord {
  id: number;
  time: string;
  mac: string;
  host_id?: number | null;
  host_name?: string | null;
  interfaces: string[];
  broadcasts: string[];
  repeat: number;
  secureon: boolean;
  packets_sent: number;
  actor: string;
  source: string;
  ok: boolean;
  error?: string | null;
}

/** `GET /wol/interfaces`. */
export interface WolInterfaces {
  interfaces: { name: string; addresses: { address: string; prefix: number; broadcast: string }[] }[];
  ports: number[];
}

interface Schedule {
  id: number;
  name: string;
  cron: string;
  timezone: string;
  host_ids: number[];
  macs: string[];
  enabled: boolean;
  created_at: string;
  last_run?: string | null;
  last_status?: string | null;
  last_error?: string | null;
  missed: number;
  next_run?: string | null;
}

/** A time the server wrote in the schedule's zone, shown as wall-clock time there. */
function zoned(t: string | null | undefined, tz: string): string {
  const m = t?.match(/^(\d{4}-\d\d-\d\d)T(\d\d:\d\d(?::\d\d)?)/);
  return m ? `${m[1]} ${m[2]} ${tz}` : (t ?? '-');
}

/** Splits a comma/space separated list, dropping empty items. */
function items(v: string | boolean | undefined): string[] {
  return String(v ?? '')
    .split(/[\s,]+/)
    .filter((s) => s);
}

/** Host ids from the form; a token that is not an id is refused beside the field. */
function hostIds(v: string | boolean | undefined): number[] {
  return items(v).map((s) => {
    if (!/^\d+$/.test(s)) throw new ApiError(400, `'host_ids': ${JSON.stringify(s)} is not a host id (a positive integer)`);
    return Number(s);
  });
}

export function Wol() {
  const ifs = useGet<WolInterfaces>('/wol/interfaces');
  const [q, setQ] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const hist = useGet<{ history: WolRecord[]; total: number }>(`/wol/history${qs({ q, page, size })}`, ['wol.']);
  const sched = useGet<{ schedules: Schedule[] }>('/wol/schedules', ['wol.']);
  const [creating, setCreating] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const act = (p: Promise<unknown>, after: () => void) => p.then(after, (e: Error) => setErr(e.message));
  return (
    <section>
      <Header title="Wake-on-LAN" />
      <Err msg={err} />

      <h2>Interfaces</h2>
      <Err msg={ifs.error} />
      <Table
        testid="wol-interfaces"
        rows={ifs.data?.interfaces}
        empty="No interface can broadcast (up, with IFF_BROADCAST, allowed by [wol] interfaces): wakes fail until one can."
        cols={[
          { h: 'Interface', f: (i) => <code>{i.name}</code> },
          {
            h: 'Addresses → broadcast',
            f: (i) => (i.addresses.length ? i.addresses.map((a) => `${a.address}/${a.prefix} → ${a.broadcast}`).join(', ') : 'none (255.255.255.255 only)'),
          },
        ]}
      />
      {ifs.data && <p class="muted">UDP ports: {ifs.data.ports.join(', ')}</p>}

      <div class="page-head">
        <h2>Schedules</h2>
        <div class="actions">
          <button class="primary" onClick={() => setCreating(true)}>
            New schedule
          </button>
        </div>
      </div>
      {creating && (
        <div class="panel">
          <Form
            testid="schedule-form"
            fields={[
              { name: 'name', label: 'Name' },
              { name: 'cron', label: 'Cron', placeholder: '30 6 * * MON-FRI', hint: 'min hour day month weekday, or six fields with seconds first' },
              { name: 'timezone', label: 'Time zone', placeholder: 'UTC', hint: 'IANA name, e.g. Europe/Berlin; empty: UTC' },
              { name: 'host_ids', label: 'Host ids', placeholder: '1, 2', hint: 'comma or space separated' },
              { name: 'macs', label: 'MACs', placeholder: '52:54:00:12:34:56', hint: 'comma or space separated' },
              { name: 'enabled', label: 'Enabled', type: 'checkbox' },
            ]}
            initial={{ enabled: true }}
            submitLabel="Create"
            cancel={() => setCreating(false)}
            submit={async (v) => {
              await api('POST', '/wol/schedule', {
                name: String(v.name ?? ''),
                cron: String(v.cron ?? ''),
                timezone: v.timezone ? String(v.timezone) : null,
                host_ids: hostIds(v.host_ids),
                macs: items(v.macs),
                enabled: !!v.enabled,
              });
              setCreating(false);
              sched.reload();
            }}
          />
        </div>
      )}
      <Err msg={sched.error} />
      <Table
        testid="wol-schedules"
        rows={sched.data?.schedules}
        empty="No schedules."
        cols={[
          { h: 'Name', f: (s) => s.name },
          { h: 'Cron', f: (s) => <code>{s.cron}</code> },
          { h: 'Time zone', f: (s) => s.timezone },
          { h: 'Targets', f: (s) => [...s.host_ids.map((h) => `host ${h}`), ...s.macs].join(', ') },
          { h: 'Enabled', f: (s) => (s.enabled ? 'yes' : 'no') },
          { h: 'Next run', f: (s) => <span data-testid="next-run">{zoned(s.next_run, s.timezone)}</span> },
          { h: 'Last run', f: (s) => when(s.last_run) },
          {
            h: 'Last status',
            f: (s) => (
              <span title={s.last_error ?? undefined}>
                {s.last_status ?? '-'}
                {s.missed ? ` (${s.missed} missed)` : ''}
                {s.last_error ? `: ${s.last_error}` : ''}
              </span>
            ),
          },
          {
            h: '',
            f: (s) => <Danger label="Delete" question={`Delete schedule ${s.name}?`} action={() => act(api('DELETE', `/wol/schedule/${s.id}`), sched.reload)} />,
          },
        ]}
      />

      <div class="page-head">
        <h2>History</h2>
        <div class="actions">
          <Danger label="Clear history" question="Delete the whole wake history?" action={() => act(api('DELETE', '/wol/history'), hist.reload)} />
        </div>
      </div>
      <div class="filters">
        <input type="search" placeholder="Search (MAC, host, interface, source, error)" aria-label="search history" value={q} onInput={(e) => (setQ(e.currentTarget.value), setPage(1))} />
      </div>
      <Err msg={hist.error} />
      <Table
        testid="wol-history"
        rows={hist.data?.history}
        empty="No wakes yet."
        cols={[
          { h: 'Time', f: (r) => when(r.time) },
          { h: 'MAC', f: (r) => <code>{r.mac}</code> },
          { h: 'Host', f: (r) => r.host_name ?? (r.host_id != null ? `#${r.host_id}` : '-') },
          { h: 'Interfaces', f: (r) => r.interfaces.join(', ') || '-' },
          { h: 'Packets', f: (r) => `${r.packets_sent} (x${r.repeat}${r.secureon ? ', SecureOn' : ''})` },
          { h: 'Source', f: (r) => `${r.source} by ${r.actor}` },
          { h: 'Result', f: (r) => (r.ok ? <span class="ok">sent</span> : <span class="failed">failed{r.error ? `: ${r.error}` : ''}</span>) },
          { h: '', f: (r) => <Danger label="Delete" question={`Delete the wake record of ${r.mac}?`} action={() => act(api('DELETE', `/wol/history/${r.id}`), hist.reload)} /> },
        ]}
      />
      {hist.data && <Pager page={page} size={size} total={hist.data.total} go={setPage} />}
    </section>
  );
}

/** The interface picker of the hosts page: "" lets the server choose. */
export function WakeVia(props: { value: string; set: (v: string) => void }) {
  const { data } = useGet<WolInterfaces>('/wol/interfaces');
  return (
    <label class="inline">
      Wake via{' '}
      <select aria-label="wake interface" value={props.value} onChange={(e) => props.set(e.currentTarget.value)}>
        <option value="">any (server picks)</option>
        {data?.interfaces.map((i) => (
          <option value={i.name}>{i.name}</option>
        ))}
      </select>
    </label>
  );
}

/** Wakes one host through `iface` ("": the server picks); answers what to show: the record's
 * summary, or the server's error (a failed wake is recorded in the history too). */
export async function wakeHost(id: number, iface: string): Promise<{ ok: boolean; text: string }> {
  try {
    const r = await api<WolRecord>('POST', `/hosts/${id}/wake`, iface ? { interface: iface } : undefined);
    return { ok: r.ok, text: `Wake sent to ${r.mac}: ${r.packets_sent} packets via ${r.interfaces.join(', ')}` };
  } catch (e) {
    return { ok: false, text: `Wake failed: ${(e as Error).message}` };
  }
}
