// Service Config > DHCP (`/services/dhcp`) and > TFTP (`/services/tftp`) as forms (arch
// map, TFTP and DHCP settings): one form per configured subnet
// (`PUT /services/dhcp` with `DhcpSettingsPatch`), the TFTP settings (`TftpPatch`), and
// the architecture map as rows of code -> boot file (`PUT /services/archmap` replaces the
// whole map; reset from `GET /services/archmap/defaults`). Changes that restart a service
// and removals ask first; the API's `error` text is shown beside the field (or row) it
// names. Live on `dhcp.settings`, `dhcp.archmap`, `tftp.settings` and `service.` events.

import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { Danger, Err, Header, useGet } from '../ui';
import { appliedText, SettingsForm } from './settings';

/** `crate::dhcp::control::SubnetView`. */
interface SubnetView {
  mode: 'server' | 'proxy' | 'off';
  interface: string;
  cidr: string;
  range_start?: string | null;
  range_end?: string | null;
  router?: string | null;
  dns?: string[] | null;
  lease_time_secs: number;
  server_address?: string | null;
  server?: string | null;
  reservations: number;
}

/** `crate::dhcp::v6::control::Subnet6View`. */
interface Subnet6View {
  mode: 'server' | 'proxy' | 'off';
  interface: string;
  prefix: string;
  range_start?: string | null;
  range_end?: string | null;
  dns?: string[] | null;
  lease_time_secs: number;
  server_address?: string | null;
  server?: string | null;
}

/** `crate::dhcp::control::DhcpSettingsView`. */
interface DhcpView {
  running: boolean;
  applied?: string;
  subnets: SubnetView[];
  subnets6: Subnet6View[];
}

/** Subnet keys whose change gives the DHCP service new sockets (a restart). */
const RESTART_KEYS = ['mode', 'interface', 'server_address'];

function SubnetForm(props: { s: SubnetView; i: number; running: boolean; ifaces?: string[]; saved: () => void }) {
  const s = props.s;
  return (
    <div class="panel" data-testid={`subnet-${props.i}`}>
      <h2>
        Subnet {s.cidr}{' '}
        <span class="muted">
          ({s.reservations} reservation{s.reservations === 1 ? '' : 's'}
          {s.server ? `; serving as ${s.server}` : ''})
        </span>
      </h2>
      <SettingsForm
        testid={`dhcp-subnet-${props.i}`}
        fields={[
          {
            name: 'mode',
            label: 'Mode',
            type: 'select',
            options: ['server', 'proxy', 'off'],
            hint: 'server: addresses from the pool; proxy: boot options only, beside another DHCP server; off. A change restarts DHCP.',
          },
          { name: 'interface', label: 'Interface', list: props.ifaces, hint: 'A change restarts DHCP.' },
          { name: 'server_address', label: 'Server address', placeholder: 'from the interface', hint: 'Bootlane’s address on the subnet. A change restarts DHCP.' },
          { name: 'range_start', label: 'Pool start', placeholder: '10.0.0.100' },
          { name: 'range_end', label: 'Pool end', placeholder: '10.0.0.200' },
          { name: 'router', label: 'Gateway (option 3)', placeholder: 'none' },
          { name: 'dns', label: 'DNS servers (option 6)', placeholder: 'Bootlane’s own address', hint: 'Comma separated.' },
          { name: 'lease_time_secs', label: 'Lease time (s)', type: 'number', hint: 'At least 60. Applies to the next lease.' },
        ]}
        values={{
          mode: s.mode,
          interface: s.interface,
          server_address: s.server_address ?? '',
          range_start: s.range_start ?? '',
          range_end: s.range_end ?? '',
          router: s.router ?? '',
          dns: s.dns?.join(', ') ?? '',
          lease_time_secs: String(s.lease_time_secs),
        }}
        kinds={{
          mode: 'text',
          interface: 'text',
          server_address: 'opt',
          range_start: 'opt',
          range_end: 'opt',
          router: 'opt',
          dns: 'list',
          lease_time_secs: 'int',
        }}
        confirm={(p) => {
          if (p.mode === 'off') return `Turn DHCP off on ${s.cidr}? Clients there get no answers any more.`;
          if (props.running && RESTART_KEYS.some((k) => k in p)) return `This restarts the DHCP service (all subnets) to apply it. Continue?`;
          return null;
        }}
        put={async (p) => {
          const r = await api<DhcpView>('PUT', '/services/dhcp', { subnets: [{ cidr: s.cidr, ...p }] });
          props.saved();
          return appliedText(r.applied);
        }}
      />
    </div>
  );
}

/** One `[[dhcp.subnets6]]` link (DHCPv6): `PUT /services/dhcp` with `subnets6`. */
function Subnet6Form(props: { s: Subnet6View; i: number; running: boolean; ifaces?: string[]; saved: () => void }) {
  const s = props.s;
  return (
    <div class="panel" data-testid={`subnet6-${props.i}`}>
      <h2>
        IPv6 link {s.prefix} <span class="muted">{s.server ? `(serving as ${s.server})` : ''}</span>
      </h2>
      <SettingsForm
        testid={`dhcp-subnet6-${props.i}`}
        fields={[
          {
            name: 'mode',
            label: 'Mode',
            type: 'select',
            options: ['server', 'proxy', 'off'],
            hint: 'server: IA_NA addresses from the pool and the boot-file URL; proxy: boot-file URL only, beside another DHCPv6 server; off. A change restarts DHCP.',
          },
          { name: 'interface', label: 'Interface', list: props.ifaces, hint: 'A change restarts DHCP.' },
          { name: 'server_address', label: 'Server address', placeholder: 'a global address of the interface', hint: 'Put in boot-file URLs. A change restarts DHCP.' },
          { name: 'range_start', label: 'Pool start', placeholder: 'fd00::100' },
          { name: 'range_end', label: 'Pool end', placeholder: 'fd00::1ff' },
          { name: 'dns', label: 'DNS servers (option 23)', placeholder: 'Bootlane’s own address', hint: 'Comma separated.' },
          { name: 'lease_time_secs', label: 'Valid lifetime (s)', type: 'number', hint: 'At least 60; T1 and T2 are half and four fifths of it.' },
        ]}
        values={{
          mode: s.mode,
          interface: s.interface,
          server_address: s.server_address ?? '',
          range_start: s.range_start ?? '',
          range_end: s.range_end ?? '',
          dns: s.dns?.join(', ') ?? '',
          lease_time_secs: String(s.lease_time_secs),
        }}
        kinds={{
          mode: 'text',
          interface: 'text',
          server_address: 'opt',
          range_start: 'opt',
          range_end: 'opt',
          dns: 'list',
          lease_time_secs: 'int',
        }}
        confirm={(p) => {
          if (p.mode === 'off') return `Turn DHCPv6 off on ${s.prefix}? Clients there get no answers any more.`;
          if (props.running && RESTART_KEYS.some((k) => k in p)) return `This restarts the DHCP service (all subnets) to apply it. Continue?`;
          return null;
        }}
        put={async (p) => {
          const r = await api<DhcpView>('PUT', '/services/dhcp', { subnets6: [{ prefix: s.prefix, ...p }] });
          props.saved();
          return appliedText(r.applied);
        }}
      />
    </div>
  );
}

export function DhcpSettings() {
  const { data, error, reload } = useGet<DhcpView>('/services/dhcp', ['dhcp.settings', 'service.']);
  const ifaces = useGet<{ name: string }[]>('/interfaces');
  return (
    <>
      <section>
        <Header title="Service Config › DHCP" />
        <Err msg={error} />
        {data && (
          <p>
            DHCP is <span class={`state ${data.running ? 'running' : 'stopped'}`}>{data.running ? 'running' : 'not running'}</span>. Pool,
            gateway, DNS servers and lease time apply live; subnets are added or removed in the configuration file (
            <code>[[dhcp.subnets]]</code>, and <code>[[dhcp.subnets6]]</code> for DHCPv6).
          </p>
        )}
        {data && !data.subnets.length && <p class="muted">No subnets are configured.</p>}
        {data?.subnets.map((s, i) => (
          <SubnetForm s={s} i={i} running={data.running} ifaces={ifaces.data?.map((x) => x.name)} saved={reload} />
        ))}
        {data?.subnets6.map((s, i) => (
          <Subnet6Form s={s} i={i} running={data.running} ifaces={ifaces.data?.map((x) => x.name)} saved={reload} />
        ))}
      </section>
      <ArchMap />
    </>
  );
}

/** `crate::dhcp::control::ArchEntry`. */
interface ArchEntry {
  arch_code: number;
  boot_file: string;
  arch_name: string;
}

interface Row {
  code: string;
  file: string;
  name: string;
}

/** Where an arch map error points: the row (by `entries[N]` or the code it names) and key. */
function locate(msg: string, rows: Row[]): { row?: number; field?: string } {
  const field = new ApiError(400, msg).field(['arch_code', 'boot_file']);
  const at = /entries\[(\d+)\]/.exec(msg);
  if (at) return { row: Number(at[1]), field };
  const code = /\barch(?:_code)? (\d+)/.exec(msg)?.[1];
  if (code === undefined) return { field };
  const idx = rows.map((r, i) => (r.code.trim() === code ? i : -1)).filter((i) => i >= 0);
  // "appears twice": the later row is the duplicate.
  return { row: /twice/.test(msg) ? idx[idx.length - 1] : idx[0], field };
}

function ArchRows(props: { entries: ArchEntry[]; saved: (note: string | null) => void }) {
  const [rows, setRows] = useState<Row[]>(props.entries.map((e) => ({ code: String(e.arch_code), file: e.boot_file, name: e.arch_name })));
  const [err, setErr] = useState<{ msg: string; row?: number; field?: string } | null>(null);
  const upd = (i: number, patch: Partial<Row>) => setRows((rs) => rs.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const putMap = async (entries: { arch_code: number; boot_file: string }[]) => {
    try {
      await api('PUT', '/services/archmap', { entries });
      setErr(null);
      props.saved('Saved: applies to the next DHCP request.');
    } catch (x) {
      const msg = x instanceof Error ? x.message : String(x);
      props.saved(null);
      setErr({ msg, ...locate(msg, rows) });
    }
  };
  const save = async (e: Event) => {
    e.preventDefault();
    const bad = rows.findIndex((r) => !/^\d+$/.test(r.code.trim()));
    if (bad >= 0) {
      setErr({ msg: `'arch_code' must be a whole number 0-65535`, row: bad, field: 'arch_code' });
      return;
    }
    const kept = new Set(rows.map((r) => r.code.trim()));
    const gone = props.entries.filter((x) => !kept.has(String(x.arch_code)));
    if (gone.length && !confirm(`Remove the boot file of ${gone.map((x) => `${x.arch_code}${x.arch_name ? ` (${x.arch_name})` : ''}`).join(', ')}? Those clients get no boot file.`)) {
      return;
    }
    await putMap(rows.map((r) => ({ arch_code: Number(r.code.trim()), boot_file: r.file.trim() })));
  };
  const errAt = (i: number, f: string) => err && err.row === i && (err.field ?? 'boot_file') === f;
  return (
    <form class="panel" onSubmit={save} data-testid="archmap-form" noValidate>
      {err && err.row === undefined && <Err msg={err.msg} />}
      <div class="table-wrap">
        <table data-testid="archmap">
          <thead>
            <tr>
              <th>Code</th>
              <th>Architecture</th>
              <th>Boot file or URL</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr data-testid={`arch-row-${i}`} class={err?.row === i ? 'bad-row' : ''}>
                <td>
                  <input
                    class="code"
                    aria-label={`code of row ${i + 1}`}
                    inputMode="numeric"
                    value={r.code}
                    aria-invalid={!!errAt(i, 'arch_code')}
                    onInput={(e) => upd(i, { code: e.currentTarget.value })}
                  />
                  {errAt(i, 'arch_code') && (
                    <span class="field-error" role="alert">
                      {err!.msg}
                    </span>
                  )}
                </td>
                <td>{r.name || <span class="muted">-</span>}</td>
                <td>
                  <input
                    class="wide"
                    aria-label={`boot file of row ${i + 1}`}
                    placeholder="ipxe.efi or http://{server}:{http_port}/boot/ipxe.efi"
                    value={r.file}
                    aria-invalid={!!errAt(i, 'boot_file')}
                    onInput={(e) => upd(i, { file: e.currentTarget.value })}
                  />
                  {errAt(i, 'boot_file') && (
                    <span class="field-error" role="alert">
                      {err!.msg}
                    </span>
                  )}
                </td>
                <td>
                  <button type="button" class="danger" aria-label={`remove row ${i + 1}`} onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!rows.length && <p class="muted">No entries: no client gets a boot file.</p>}
      <div class="form-actions">
        <button type="button" onClick={() => setRows((rs) => [...rs, { code: '', file: '', name: '' }])}>
          Add row
        </button>
        <button type="submit" class="primary">
          Save map
        </button>
        <Danger
          label="Reset to defaults"
          question="Replace the architecture map with the built-in defaults?"
          action={async () => {
            const d = await api<{ entries: ArchEntry[] }>('GET', '/services/archmap/defaults');
            await putMap(d.entries.map((x) => ({ arch_code: x.arch_code, boot_file: x.boot_file })));
          }}
        />
      </div>
    </form>
  );
}

/** The architecture map (RFC 4578 client architecture code -> boot file). */
export function ArchMap() {
  const { data, error, reload } = useGet<{ entries: ArchEntry[] }>('/services/archmap', ['dhcp.archmap']);
  // Kept here: the rows start over (a new key) when the saved map comes back.
  const [note, setNote] = useState<string | null>(null);
  return (
    <section>
      <Header title="Architecture map" />
      <p class="muted">
        Which boot file a PXE client gets, by the architecture code it sends (RFC 4578, DHCP option 93). <code>{'{server}'}</code> and{' '}
        <code>{'{http_port}'}</code> in a URL are filled in per client.
      </p>
      <Err msg={error} />
      {data && (
        <ArchRows
          key={JSON.stringify(data.entries)}
          entries={data.entries}
          saved={(n) => {
            setNote(n);
            if (n) reload();
          }}
        />
      )}
      {note && (
        <p class="ok" role="status" data-testid="archmap-note">
          {note}
        </p>
      )}
    </section>
  );
}

/** `crate::api::dhcp::TftpView`. */
interface TftpView {
  enabled: boolean;
  running: boolean;
  applied?: string;
  port: number;
  listen: string;
  root: string;
  timeout_ms: number;
  retries: number;
  max_transfers: number;
}

const TFTP_RESTART = ['enabled', 'port', 'listen', 'root', 'max_transfers'];

export function TftpSettings() {
  const { data, error, reload } = useGet<TftpView>('/services/tftp', ['tftp.settings', 'service.']);
  return (
    <section>
      <Header title="Service Config › TFTP" />
      <Err msg={error} />
      {data && (
        <>
          <p>
            TFTP is <span class={`state ${data.running ? 'running' : 'stopped'}`}>{data.running ? 'running' : 'not running'}</span>.
          </p>
          <div class="panel">
            <SettingsForm
              testid="tftp-settings"
              fields={[
                { name: 'timeout_ms', label: 'Retransmission timeout (ms)', type: 'number', hint: '10-60000; applies live to new transfers.' },
                { name: 'retries', label: 'Retries', type: 'number', hint: '0-100; applies live to new transfers.' },
                { name: 'enabled', label: 'Enabled', type: 'checkbox', hint: 'Off: TFTP does not start (restarts TFTP).' },
                { name: 'port', label: 'Port', type: 'number', hint: 'A change restarts TFTP.' },
                { name: 'listen', label: 'Listen address', placeholder: '0.0.0.0', hint: 'A change restarts TFTP.' },
                { name: 'root', label: 'Directory served', hint: 'Absolute path of an existing directory. A change restarts TFTP.' },
                { name: 'max_transfers', label: 'Most concurrent transfers', type: 'number', hint: '1-65536. A change restarts TFTP.' },
              ]}
              values={{
                timeout_ms: String(data.timeout_ms),
                retries: String(data.retries),
                enabled: data.enabled,
                port: String(data.port),
                listen: data.listen,
                root: data.root,
                max_transfers: String(data.max_transfers),
              }}
              kinds={{ timeout_ms: 'int', retries: 'int', enabled: 'bool', port: 'int', listen: 'text', root: 'text', max_transfers: 'int' }}
              confirm={(p) => (data.running && TFTP_RESTART.some((k) => k in p) ? 'This restarts the TFTP service (running transfers are cut). Continue?' : null)}
              put={async (p) => {
                const r = await api<TftpView>('PUT', '/services/tftp', p);
                reload();
                return appliedText(r.applied);
              }}
            />
          </div>
        </>
      )}
    </section>
  );
}
