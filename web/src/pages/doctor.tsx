// The doctor: one button that checks every network Bootlane serves for what keeps a
// machine from booting (rival DHCP servers, proxyDHCP, relays, boot files, TFTP, MTU,
// the HTTP boot URL, DNS, Secure Boot files). Run POSTs `/doctor` and waits for the
// report (up to ~10 s per interface; 409 while another run is going); the page shows the
// last report (`GET /doctor`, null before the first run) with its findings, most severe
// first. Live on `doctor.finished`, so a run started elsewhere shows up here too.

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { useLive } from '../live';
import { Err, Header, Json, canWrite, when } from '../ui';

type Severity = 'ok' | 'info' | 'warning' | 'error';

/** One finding of a run. */
interface Finding {
  check: string;
  severity: Severity;
  interface: string | null;
  summary: string;
  fix: string | null;
  details: Record<string, unknown> | null;
}

/** `GET /doctor`, `POST /doctor`. */
interface Report {
  started_at: string;
  duration_ms: number;
  interfaces: string[];
  findings: Finding[];
}

/** Most severe first, as the server sorts findings. */
const SEVERITIES: Severity[] = ['error', 'warning', 'info', 'ok'];

/** What each check looks at, for people. */
const CHECKS: Record<string, string> = {
  rival_dhcp: 'Rival DHCP',
  proxy_dhcp: 'ProxyDHCP',
  relay: 'DHCP relay',
  boot_file: 'Boot file',
  tftp: 'TFTP',
  mtu: 'MTU',
  http: 'HTTP boot',
  dns: 'DNS',
  secure_boot: 'Secure Boot',
};

/** The newer of two reports (the run's own answer or the last `GET /doctor`). */
function newer(a: Report | null | undefined, b: Report | null | undefined) {
  if (!a) return b;
  if (!b) return a;
  return Date.parse(a.started_at) >= Date.parse(b.started_at) ? a : b;
}

export function Doctor() {
  // undefined: not loaded yet; null: no run since the server started.
  const [last, setLast] = useState<Report | null | undefined>(undefined);
  const [ran, setRan] = useState<Report | null>(null);
  const [running, setRunning] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const seq = useRef(0);
  const load = useCallback(() => {
    const n = ++seq.current;
    api<Report | null>('GET', '/doctor').then(
      (r) => {
        if (n !== seq.current) return;
        setLast(r ?? null);
        // A report arrived (a run elsewhere ended): a "run already going" is old news.
        setErr(null);
      },
      (e: ApiError) => n === seq.current && setErr(e.message),
    );
  }, []);
  useEffect(load, [load]);
  useLive(['doctor.finished'], load);

  async function run() {
    setErr(null);
    setRunning(true);
    try {
      setRan(await api<Report>('POST', '/doctor', {}));
    } catch (e) {
      // 409: a run (from another browser or the API) is already going.
      setErr((e as ApiError).message);
    } finally {
      setRunning(false);
    }
  }

  const report = newer(ran, last);
  const may = canWrite();
  return (
    <section>
      <Header title="Doctor">
        <button
          class="primary"
          data-testid="doctor-run"
          disabled={running || !may}
          title={may ? undefined : 'read only: your role is viewer'}
          onClick={run}
        >
          Run doctor
        </button>
      </Header>
      <p class="muted">
        Checks the networks Bootlane serves for rival DHCP servers, proxyDHCP, DHCP relays, the boot files, TFTP, the MTU, the HTTP boot
        URL, DNS and the Secure Boot files. It sends nothing off the served links.
      </p>
      {running && (
        <p role="status" data-testid="doctor-running">
          Running… (up to 10 s per interface)
        </p>
      )}
      <Err msg={err} />
      {report === undefined ? (
        !err && <p class="muted">Loading…</p>
      ) : report === null ? (
        <p class="muted" data-testid="doctor-none">
          No report yet: the doctor has not run since the server started.
        </p>
      ) : (
        <ReportView r={report} />
      )}
    </section>
  );
}

function ReportView(props: { r: Report }) {
  const r = props.r;
  const count = (s: Severity) => r.findings.filter((f) => f.severity === s).length;
  return (
    <div data-testid="doctor-report" data-started-at={r.started_at}>
      <p data-testid="doctor-summary">
        Last run {when(r.started_at)}, took {(r.duration_ms / 1000).toFixed(1)} s, checked{' '}
        {r.interfaces.length ? r.interfaces.map((i, n) => [n ? ', ' : '', <code>{i}</code>]) : 'no interfaces'}.
      </p>
      <div class="cards doctor-counts">
        {SEVERITIES.map((s) => (
          <div class={`card count sev-${s}`} data-testid={`doctor-count-${s}`}>
            <span class="n">{count(s)}</span>
            <span class="l">{s === 'ok' ? 'ok' : s === 'info' ? 'info' : `${s}${count(s) === 1 ? '' : 's'}`}</span>
          </div>
        ))}
      </div>
      <h2>Findings</h2>
      {r.findings.length ? (
        <div class="table-wrap">
          <table data-testid="doctor-findings">
            <thead>
              <tr>
                <th>Severity</th>
                <th>Check</th>
                <th>Interface</th>
                <th>Finding</th>
                <th>Fix</th>
              </tr>
            </thead>
            <tbody>
              {r.findings.map((f) => (
                <tr data-testid="doctor-finding" data-severity={f.severity} data-check={f.check}>
                  <td>
                    <span class={`state sev-${f.severity}`}>{f.severity}</span>
                  </td>
                  <td title={f.check}>{CHECKS[f.check] ?? f.check}</td>
                  <td>{f.interface ?? <span class="muted">all</span>}</td>
                  <td>
                    {f.summary}
                    {f.details && (
                      <details class="doctor-details">
                        <summary>details</summary>
                        <Json v={f.details} />
                      </details>
                    )}
                  </td>
                  <td>{f.fix ?? <span class="muted">-</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="muted">No findings.</p>
      )}
    </div>
  );
}
