// DHCP: leases (filters by MAC, state and subnet, pool stats, delete, prune), DHCPv6
// leases (by DUID and IA, delete) and reservations (create/delete). Live on `dhcp.*`
// events. The DHCP, TFTP and arch map settings are in `dhcpsettings.tsx`.

import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { Danger, Err, Form, Header, Pager, Table, useGet, when } from '../ui';

interface Lease {
  id: number;
  mac: string;
  ip: string;
  subnet: string;
  hostname?: string | null;
  arch?: number | null;
  expires_at: number;
  declined: boolean;
  state: string;
}

interface PoolUsage {
  subnet: string;
  mode: string;
  total: number;
  used: number;
  reserved: number;
  free: number;
}

/** Pool usage per subnet (`GET /stats/pools`), live on `dhcp.*` events. */
export function PoolCards() {
  const { data } = useGet<PoolUsage[]>('/stats/pools', ['dhcp.']);
  if (!data?.length) return null;
  return (
    <div class="cards" data-testid="pool-stats">
      {data.map((p) => (
        <div class="card pool">
          <span class="l">
            {p.subnet} ({p.mode})
          </span>
          {p.mode === 'server' ? (
            <>
              <meter min={0} max={p.total || 1} value={p.used} aria-label={`${p.subnet} usage`} />
              <span class="l">
                {p.used} used · {p.free} free · {p.reserved} reserved · {p.total} in the pool
              </span>
            </>
          ) : (
            <span class="l">proxy: no pool</span>
          )}
        </div>
      ))}
    </div>
  );
}

export function Leases() {
  const [mac, setMac] = useState('');
  const [state, setState] = useState('');
  const [subnet, setSubnet] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const pools = useGet<PoolUsage[]>('/stats/pools', []);
  const { data, error, reload } = useGet<{ leases: Lease[]; total: number }>(`/leases${qs({ mac, state, subnet, page, size })}`, ['dhcp.']);
  const [msg, setMsg] = useState<string | null>(null);
  return (
    <section>
      <Header title="DHCP leases">
        <Danger
          label="Prune expired"
          question="Remove every expired lease?"
          action={() => api<{ removed: number }>('POST', '/leases/prune').then((r) => (setMsg(`Removed ${r.removed}.`), reload()))}
        />
      </Header>
      <div class="filters">
        <input type="search" placeholder="MAC (whole)" aria-label="mac" value={mac} onInput={(e) => (setMac(e.currentTarget.value), setPage(1))} />
        <select aria-label="state" value={state} onChange={(e) => (setState(e.currentTarget.value), setPage(1))}>
          <option value="">All states</option>
          <option>active</option>
          <option>expired</option>
        </select>
        <select aria-label="subnet" value={subnet} onChange={(e) => (setSubnet(e.currentTarget.value), setPage(1))}>
          <option value="">All subnets</option>
          {pools.data
            ?.filter((p) => !p.subnet.includes(':'))
            .map((p) => (
              <option>{p.subnet}</option>
            ))}
        </select>
      </div>
      <PoolCards />
      <Err msg={error} />
      {msg && <p class="ok">{msg}</p>}
      <Table
        testid="leases"
        rows={data?.leases}
        empty="No leases."
        cols={[
          { h: 'MAC', f: (l) => <code>{l.mac}</code> },
          { h: 'IP', f: (l) => l.ip },
          { h: 'Host name', f: (l) => l.hostname ?? '-' },
          { h: 'Subnet', f: (l) => l.subnet },
          { h: 'Arch', f: (l) => l.arch ?? '-' },
          { h: 'State', f: (l) => <span class={`state ${l.state}`}>{l.state}</span> },
          { h: 'Expires', f: (l) => when(l.expires_at) },
          {
            h: '',
            f: (l) => (
              <Danger label="Delete" question={`Delete the lease of ${l.mac}?`} action={() => api('DELETE', `/leases/${l.mac}`).then(reload, (e: Error) => setMsg(e.message))} />
            ),
          },
        ]}
      />
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
      <Leases6 />
    </section>
  );
}

/** `crate::dhcp::v6::leases::Lease6` with its state. */
interface Lease6 {
  id: number;
  duid: string;
  iaid: number;
  ip: string;
  subnet: string;
  mac?: string | null;
  arch?: number | null;
  expires_at: number;
  declined: boolean;
  state: string;
}

/** DHCPv6 leases (`GET /leases6`), live on `dhcp6.` events; delete by DUID. */
function Leases6() {
  const [page, setPage] = useState(1);
  const size = 50;
  const { data, error, reload } = useGet<{ leases: Lease6[]; total: number }>(`/leases6${qs({ page, size })}`, ['dhcp6.']);
  const [msg, setMsg] = useState<string | null>(null);
  return (
    <div data-testid="leases6-section">
      <h2>DHCPv6 leases</h2>
      <Err msg={error ?? msg} />
      <Table
        testid="leases6"
        rows={data?.leases}
        empty="No DHCPv6 leases."
        cols={[
          { h: 'DUID', f: (l) => <code title={l.duid}>{l.duid.length > 24 ? `${l.duid.slice(0, 24)}…` : l.duid}</code> },
          { h: 'IAID', f: (l) => l.iaid },
          { h: 'IPv6 address', f: (l) => l.ip },
          { h: 'MAC', f: (l) => (l.mac ? <code>{l.mac}</code> : '-') },
          { h: 'Prefix', f: (l) => l.subnet },
          { h: 'Arch', f: (l) => l.arch ?? '-' },
          { h: 'State', f: (l) => <span class={`state ${l.state}`}>{l.state}</span> },
          { h: 'Expires', f: (l) => when(l.expires_at) },
          {
            h: '',
            f: (l) => (
              <Danger label="Delete" question={`Delete every DHCPv6 lease of DUID ${l.duid}?`} action={() => api('DELETE', `/leases6/${l.duid}`).then(reload, (e: Error) => setMsg(e.message))} />
            ),
          },
        ]}
      />
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
    </div>
  );
}

interface Reservation {
  id: number;
  mac: string;
  ip: string;
  hostname?: string | null;
  description: string;
  subnet: string;
  source: string;
}

export function Reservations() {
  const [page, setPage] = useState(1);
  const size = 50;
  const { data, error, reload } = useGet<{ reservations: Reservation[]; total: number }>(`/dhcp/reservations${qs({ page, size })}`, ['dhcp.']);
  const [adding, setAdding] = useState(false);
  const [delErr, setDelErr] = useState<string | null>(null);
  return (
    <section>
      <Header title="DHCP reservations">
        <button class="primary" onClick={() => setAdding(true)}>
          New reservation
        </button>
      </Header>
      {adding && (
        <div class="panel">
          <Form
            testid="reservation-form"
            fields={[
              { name: 'mac', label: 'MAC', placeholder: '52:54:00:12:34:56' },
              { name: 'ip', label: 'IP', placeholder: '10.0.0.50' },
              { name: 'hostname', label: 'Host name' },
              { name: 'subnet', label: 'Subnet (CIDR, optional when only one)' },
              { name: 'description', label: 'Description' },
            ]}
            submitLabel="Create"
            cancel={() => setAdding(false)}
            submit={async (v) => {
              const body: Record<string, unknown> = { mac: v.mac, ip: v.ip, description: v.description ?? '' };
              if (v.hostname) body.hostname = v.hostname;
              if (v.subnet) body.subnet = v.subnet;
              await api('POST', '/dhcp/reservations', body);
              setAdding(false);
              reload();
            }}
          />
        </div>
      )}
      <Err msg={error ?? delErr} />
      <Table
        testid="reservations"
        rows={data?.reservations}
        empty="No reservations."
        cols={[
          { h: 'MAC', f: (r) => <code>{r.mac}</code> },
          { h: 'IP', f: (r) => r.ip },
          { h: 'Host name', f: (r) => r.hostname ?? '-' },
          { h: 'Subnet', f: (r) => r.subnet },
          { h: 'Source', f: (r) => r.source },
          { h: 'Description', f: (r) => r.description },
          {
            h: '',
            f: (r) =>
              r.source === 'api' || r.source === 'store' ? (
                <Danger label="Delete" question={`Delete the reservation of ${r.mac}?`} action={() => api('DELETE', `/dhcp/reservations/${r.id}`).then(reload, (e: Error) => setDelErr(e.message))} />
              ) : (
                <span class="muted">config</span>
              ),
          },
        ]}
      />
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
    </section>
  );
}
