// Network diagnostics: ping and traceroute from the server, shown live. A run POSTs to
// `/network/ping/stream` or `/network/traceroute/stream` and reads the server-sent
// events as they come (`reply` / `hop` lines, then `summary`); Stop aborts the request,
// which ends the run on the server. Below: the server's interfaces
// (`GET /network/interfaces`).

import { useRef, useState } from 'preact/hooks';
import { ApiError, BASE, toLogin } from '../api';
import { readSse } from '../live';
import { Err, Header, Table, useGet } from '../ui';

/** `crate::netdiag::PingReply`. */
interface PingReply {
  seq: number;
  status: string;
  from?: string | null;
  bytes?: number | null;
  ttl?: number | null;
  rtt_ms?: number | null;
  error?: string | null;
}

/** `crate::netdiag::TraceHop`. */
interface TraceHop {
  ttl: number;
  addresses: string[];
  sent: number;
  received: number;
  last_ms?: number | null;
  best_ms?: number | null;
  avg_ms?: number | null;
  reached: boolean;
}

/** `crate::net::InterfaceInfo`. */
interface Iface {
  name: string;
  mac?: string | null;
  mtu?: number | null;
  oper_state: string;
  addresses: { address: string; prefix: number }[];
}

const ms = (v?: number | null) => (v === null || v === undefined ? '-' : `${v.toFixed(2)} ms`);

/** One output line of a run, as text (what `ping` / `traceroute` would print). */
function line(tool: string, kind: string, d: any): string {
  if (tool === 'ping' && kind === 'reply') {
    const r = d as PingReply;
    if (r.status === 'reply') return `${r.bytes} bytes from ${r.from}: icmp_seq=${r.seq} ttl=${r.ttl ?? '?'} time=${ms(r.rtt_ms)}`;
    if (r.status === 'timeout') return `icmp_seq=${r.seq}: no reply (timeout)`;
    return `icmp_seq=${r.seq}: ${r.error}`;
  }
  if (kind === 'hop') {
    const h = d as TraceHop;
    return `${String(h.ttl).padStart(2)}  ${h.addresses.length ? h.addresses.join(', ') : '*'}  ${h.received ? ms(h.best_ms) : ''}${h.reached ? '  (target)' : ''}`;
  }
  if (tool === 'ping') {
    const s = d;
    const rtt = s.received ? `, rtt min/avg/max/mdev = ${[s.min_ms, s.avg_ms, s.max_ms, s.mdev_ms].map((v: number) => v.toFixed(2)).join('/')} ms` : '';
    return `--- ${s.target} (${s.address}): ${s.sent} sent, ${s.received} received, ${s.loss_pct.toFixed(0)}% loss${rtt}${s.error ? ` — ${s.error}` : ''}`;
  }
  return `--- ${d.target} (${d.address}): ${d.reached ? `reached in ${d.hops.length} hops` : 'not reached'}${d.error ? ` — ${d.error}` : ''}`;
}

export function Network() {
  const [tool, setTool] = useState('ping');
  const [target, setTarget] = useState('');
  const [count, setCount] = useState('4');
  const [lines, setLines] = useState<{ kind: string; text: string }[]>([]);
  const [err, setErr] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const ctl = useRef<AbortController | null>(null);
  const ifaces = useGet<Iface[]>('/network/interfaces');

  async function run(e: Event) {
    e.preventDefault();
    setErr(null);
    setLines([]);
    const n = Number(count);
    const body = tool === 'ping' ? { target, count: n } : { target, max_hops: n };
    const c = new AbortController();
    ctl.current = c;
    setRunning(true);
    try {
      const resp = await fetch(`${BASE}/network/${tool}/stream`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify(body),
        signal: c.signal,
      });
      if (resp.status === 401) return toLogin();
      if (!resp.ok || !resp.body) {
        const env = await resp.json().catch(() => ({}));
        throw new ApiError(resp.status, env.error ?? `the ${tool} answered ${resp.status}`);
      }
      await readSse(resp, (ev) => {
        try {
          const d = JSON.parse(ev.data);
          setLines((old) => [...old, { kind: ev.event, text: line(tool, ev.event, d) }]);
        } catch {
          /* a heartbeat or a broken line: skip */
        }
      });
    } catch (e) {
      if (!c.signal.aborted) setErr((e as Error).message);
    } finally {
      setRunning(false);
    }
  }

  return (
    <section>
      <Header title="Network diagnostics" />
      <form class="inline-form" onSubmit={run} aria-label="diagnostic">
        <label>
          Tool
          <select name="tool" value={tool} onChange={(e) => setTool(e.currentTarget.value)} disabled={running}>
            <option value="ping">ping</option>
            <option value="traceroute">traceroute</option>
          </select>
        </label>
        <label>
          Target
          <input name="target" required placeholder="10.0.0.5 or host.lab" value={target} onInput={(e) => setTarget(e.currentTarget.value)} />
        </label>
        <label>
          {tool === 'ping' ? 'Count (1-20)' : 'Max hops (1-30)'}
          <input name="count" type="number" min="1" max={tool === 'ping' ? 20 : 30} value={count} onInput={(e) => setCount(e.currentTarget.value)} />
        </label>
        {running ? (
          <button type="button" onClick={() => ctl.current?.abort()}>
            Stop
          </button>
        ) : (
          <button type="submit" class="primary">
            Run
          </button>
        )}
      </form>
      <Err msg={err} />
      <pre class="logview short" data-testid="diag-output" role="log" aria-live="polite">
        {lines.map((l) => (
          <div class={`diag-${l.kind}`}>{l.text}</div>
        ))}
        {running && <div class="muted">…</div>}
      </pre>
      <h2>Interfaces</h2>
      <Err msg={ifaces.error} />
      <Table
        rows={ifaces.data ?? undefined}
        testid="net-interfaces"
        cols={[
          { h: 'Name', f: (i) => i.name },
          { h: 'State', f: (i) => i.oper_state },
          { h: 'MAC', f: (i) => i.mac ?? '-' },
          { h: 'MTU', f: (i) => i.mtu ?? '-' },
          { h: 'Addresses', f: (i) => i.addresses.map((a) => `${a.address}/${a.prefix}`).join(', ') || '-' },
        ]}
      />
    </section>
  );
}
