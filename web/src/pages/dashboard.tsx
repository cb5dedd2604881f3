// Dashboard: counts, activity charts (boot activity, DNS queries per second XDP vs
// userspace; a lazily loaded chunk with uPlot), services with their state and controls,
// lease pool usage per subnet (`GET /stats/pools`), and the most recent events, all
// kept current by the event stream (the charts poll every 10 s, the server's sample
// interval).

import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Header, Table, useGet, when } from '../ui';
import { ServiceTable } from './services';
import type { LiveEvent } from '../live';

/** The charts and uPlot: fetched after the dashboard renders, outside the initial bundle. */
function ActivityCharts() {
  const [C, setC] = useState<FunctionComponent | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    import('./charts').then(
      (m) => setC(() => m.default),
      (e: Error) => setErr(`the charts could not be loaded: ${e.message}`),
    );
  }, []);
  if (err) return <p class="error">{err}</p>;
  return C ? <C /> : <p class="muted">Loading charts…</p>;
}

interface PoolUsage {
  subnet: string;
  mode: string;
  total: number;
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
  const stats = useGet<PoolUsage[]>('/stats/pools', ['dhcp.', 'service.']);
  const events = useGet<{ events: LiveEvent[] }>('/events?size=10', ['']);
  return (
    <section>
      <Header title="Dashboard" />
      <div class="cards">
        <Count label="DNS records" path="/dns/records?size=1" live={['dns.']} href="/dns" />
        <Count label="Hosts" path="/hosts?size=1" live={['host.']} href="/hosts" />
        <Count label="Leases" path="/leases?size=1" live={['dhcp.']} href="/dhcp/leases" />
      </div>
      <h2>Activity</h2>
      <ActivityCharts />
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
                <meter min={0} max={s.total || 1} value={s.used} /> {s.used}/{s.total}
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
