// Dashboard: services with their state and controls, lease pool usage per subnet,
// counts, and the most recent events, all kept current by the event stream.

import { Header, Table, useGet, when } from '../ui';
import { ServiceTable } from './services';
import type { LiveEvent } from '../live';

interface SubnetStats {
  subnet: string;
  mode: string;
  size: number;
  used: number;
  reserved: number;
  free: number;
}

function Count(props: { label: string; path: string; live: string[]; href: string }) {
  const { data } = useGet<{ total: number }>(props.path, props.live);
  return (
    <a class="card count" href={props.href}>
      <span class="n">{data?.total ?? '…'}</span>
      <span class="l">{props.label}</span>
    </a>
  );
}

export function Dashboard() {
  const stats = useGet<SubnetStats[]>('/leases/stats', ['dhcp.']);
  const events = useGet<{ events: LiveEvent[] }>('/events?size=10', ['']);
  return (
    <section>
      <Header title="Dashboard" />
      <div class="cards">
        <Count label="DNS records" path="/dns/records?size=1" live={['dns.']} href="/dns" />
        <Count label="Hosts" path="/hosts?size=1" live={['host.']} href="/hosts" />
        <Count label="Leases" path="/leases?size=1" live={['dhcp.']} href="/dhcp/leases" />
      </div>
      <h2>Services</h2>
      <ServiceTable />
      <h2>Lease pools</h2>
      <Table
        rows={Array.isArray(stats.data) ? stats.data : undefined}
        empty="No DHCP subnets configured."
        cols={[
          { h: 'Subnet', f: (s) => s.subnet },
          { h: 'Mode', f: (s) => s.mode },
          {
            h: 'Used',
            f: (s) => (
              <span class="usage">
                <meter min={0} max={s.size || 1} value={s.used} /> {s.used}/{s.size}
              </span>
            ),
          },
          { h: 'Reserved', f: (s) => s.reserved },
          { h: 'Free', f: (s) => s.free },
        ]}
      />
      <h2>
        Recent events <a href="/events">all</a>
      </h2>
      <Table
        testid="recent-events"
        rows={events.data?.events}
        empty="No events yet."
        cols={[
          { h: 'Time', f: (e) => when(e.time) },
          { h: 'Kind', f: (e) => <code>{e.kind}</code> },
          { h: 'Summary', f: (e) => e.summary },
          { h: 'By', f: (e) => e.actor },
        ]}
      />
    </section>
  );
}
