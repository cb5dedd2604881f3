// The dashboard's activity charts: boot activity (DHCP offers and acks, TFTP transfers,
// iPXE scripts served) and DNS queries per second split XDP vs userspace, from
// `GET /api/v1/stats/activity` (per-interval counts, sampled every 10 s by the server),
// refreshed every 10 s. Drawn with uPlot (about 20 KB gzip); the dashboard loads this
// module lazily, so uPlot is not part of the initial bundle.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { Err } from '../ui';

interface Point {
  time: number;
  secs: number;
  dhcp_offers: number;
  dhcp_acks: number;
  tftp_completed: number;
  ipxe_scripts: number;
  dns_userspace: number;
  dns_xdp: number;
}

interface History {
  minutes: number;
  sample_secs: number;
  step_secs: number;
  points: Point[];
}

const WINDOWS: [number, string][] = [
  [15, '15 min'],
  [60, '1 h'],
  [360, '6 h'],
  [1440, '24 h'],
];

const REFRESH_MS = 10_000;

type Series = { label: string; color: string; f: (p: Point) => number };

const BOOT: Series[] = [
  { label: 'DHCP offers', color: '#1f6feb', f: (p) => p.dhcp_offers },
  { label: 'DHCP acks', color: '#2e7d32', f: (p) => p.dhcp_acks },
  { label: 'TFTP transfers', color: '#b26a00', f: (p) => p.tftp_completed },
  { label: 'iPXE scripts', color: '#8e24aa', f: (p) => p.ipxe_scripts },
];

const rate = (n: number, p: Point) => (p.secs > 0 ? n / p.secs : 0);

const DNS: Series[] = [
  { label: 'XDP', color: '#c62828', f: (p) => rate(p.dns_xdp, p) },
  { label: 'Userspace', color: '#1f6feb', f: (p) => rate(p.dns_userspace, p) },
];

/** One uPlot chart that follows its container's width and takes new data in place. */
function Chart(props: { title: string; series: Series[]; points: Point[]; minutes: number; testid: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // The x axis always spans the whole window (ending now), however few points there are.
  const windowSecs = useRef(props.minutes * 60);
  windowSecs.current = props.minutes * 60;
  const data = (): uPlot.AlignedData => [props.points.map((p) => p.time), ...props.series.map((s) => props.points.map(s.f))];

  useEffect(() => {
    const el = box.current!;
    const width = () => Math.max(260, el.clientWidth);
    const u = new uPlot(
      {
        width: width(),
        height: 200,
        series: [{}, ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5 }))],
        axes: [{}, { size: 50 }],
        scales: {
          x: {
            time: true,
            range: () => {
              const now = Date.now() / 1000;
              return [now - windowSecs.current, now];
            },
          },
          y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
        },
        legend: { live: true },
      },
      data(),
      el,
    );
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: width(), height: 200 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(data());
  }, [props.points]);

  return (
    <figure class="chart card" data-testid={props.testid}>
      <figcaption>{props.title}</figcaption>
      <div ref={box} />
    </figure>
  );
}

/** The two activity charts with a window selector; polls every 10 s. */
export default function ActivityCharts() {
  const [minutes, setMinutes] = useState(60);
  const [hist, setHist] = useState<History | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    let alive = true;
    const load = () =>
      api<History>('GET', `/stats/activity?minutes=${minutes}`).then(
        (h) => {
          if (!alive) return;
          setHist(h);
          setErr(null);
        },
        (e: Error) => alive && setErr(e.message),
      );
    load();
    const t = setInterval(load, REFRESH_MS);
    return () => {
      alive = false;
      clearInterval(t);
    };
  }, [minutes]);
  const step = hist ? `${hist.step_secs} s` : '…';
  return (
    <div class="charts" data-testid="charts">
      <div class="chart-controls" role="group" aria-label="time window">
        {WINDOWS.map(([m, l]) => (
          <button class={m === minutes ? 'primary' : ''} aria-pressed={m === minutes} onClick={() => setMinutes(m)}>
            {l}
          </button>
        ))}
        <span class="muted">{hist && hist.points.length < 6 ? 'collecting samples (one every 10 s since the server started)…' : ''}</span>
      </div>
      <Err msg={err} />
      {hist && (
        <div class="chart-grid">
          <Chart testid="chart-boot" title={`Boot activity (per ${step})`} series={BOOT} points={hist.points} minutes={hist.minutes} />
          <Chart testid="chart-dns" title="DNS queries per second" series={DNS} points={hist.points} minutes={hist.minutes} />
        </div>
      )}
    </div>
  );
}
