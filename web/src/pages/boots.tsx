// Boots: one session per boot attempt of a machine, newest first, with where it got to
// (the verdict and its reason), filterable by verdict, state and machine, and live: the
// list follows `GET /boot-sessions/stream` as machines boot. A session opens at
// `/boots/<id>` to its timeline. The hosts page shows a host's recent boots
// ([`RecentBoots`]).

import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, ApiError, qs } from '../api';
import { Err, Header, when } from '../ui';
import {
  type BootSession,
  type Verdict,
  Machine,
  SessionTimeline,
  VERDICT_NAMES,
  VERDICTS,
  VerdictBadge,
  fresher,
  ms,
  useBootStream,
} from './boot_timeline';

/** How many sessions a list asks for, and keeps while following the stream. */
const LIMIT = 200;

/** A complete MAC: asked of the server; anything else filters the list here. */
const FULL_MAC = /^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/i;

export function Boots() {
  const { params } = useRoute();
  const id = params.id ? Number(params.id) : null;
  return id !== null && Number.isFinite(id) ? <BootDetail id={id} /> : <BootList />;
}

function BootDetail(props: { id: number }) {
  return (
    <section>
      <Header title={`Boot session ${props.id}`}>
        <a href="/boots">← All boots</a>
      </Header>
      <SessionTimeline id={props.id} />
    </section>
  );
}

/** Sessions by id, merged from a list and stream updates (the fresher copy wins). */
function merge(into: Map<number, BootSession>, s: BootSession) {
  const old = into.get(s.id);
  if (!old || fresher(s, old)) into.set(s.id, { ...s, steps: undefined });
}

/** At most [`LIMIT`] sessions: the oldest go. */
function bounded(m: Map<number, BootSession>): Map<number, BootSession> {
  if (m.size <= LIMIT) return m;
  return new Map([...m.values()].sort(newestFirst).slice(0, LIMIT).map((s) => [s.id, s]));
}

/** Newest first: by start, then by id. */
function newestFirst(a: BootSession, b: BootSession) {
  return Date.parse(b.started) - Date.parse(a.started) || b.id - a.id;
}

function BootList() {
  const { route } = useLocation();
  const [verdict, setVerdict] = useState<Verdict | ''>('');
  const [state, setState] = useState<'' | 'open' | 'ended'>('');
  const [text, setText] = useState('');
  const [sessions, setSessions] = useState<Map<number, BootSession> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const mac = FULL_MAC.test(text.trim()) ? text.trim() : '';
  const path = `/boot-sessions${qs({ verdict, state, mac, limit: LIMIT })}`;
  const seq = useRef(0);
  // The list the sessions shown came from: a list of other filters replaces them, a
  // reload of the same list adds to them (the stream may have brought a session the
  // list's answer was too early to have).
  const from = useRef('');
  const load = () => {
    const n = ++seq.current;
    api<BootSession[]>('GET', path).then(
      (list) => {
        if (n !== seq.current) return;
        const same = from.current === path;
        from.current = path;
        setSessions((cur) => {
          const next = new Map<number, BootSession>();
          for (const s of list) merge(next, s);
          if (cur && same) for (const s of cur.values()) merge(next, s);
          return bounded(next);
        });
        setError(null);
      },
      (e: ApiError) => n === seq.current && setError(e.message),
    );
  };
  useEffect(load, [path]);
  const up = useBootStream(
    (u) =>
      setSessions((cur) => {
        const next = new Map(cur ?? []);
        merge(next, u.session);
        return bounded(next);
      }),
    load,
  );

  const needle = text.trim().toLowerCase();
  const shown = sessions
    ? [...sessions.values()]
        .filter(
          (s) =>
            (!verdict || s.verdict === verdict) &&
            (!state || s.state === state) &&
            (!needle || [s.mac, s.host, s.ip].some((x) => x?.toLowerCase().includes(needle))),
        )
        .sort(newestFirst)
    : undefined;

  return (
    <section>
      <Header title="Boots">
        <span class={`live ${up ? 'up' : 'down'}`} data-testid="boots-live" title={up ? 'new boot steps appear as they happen' : 'reconnecting'}>
          {up ? '● following' : '○ reconnecting'}
        </span>
      </Header>
      <p class="muted">
        Every boot attempt of a machine, from its first DHCP request to the installer or the local disk, with where it got to and why it
        stopped. Open one to see its steps.
      </p>
      <div class="filters">
        <select aria-label="verdict" value={verdict} onChange={(e) => setVerdict(e.currentTarget.value as Verdict | '')}>
          <option value="">any verdict</option>
          {VERDICTS.map((v) => (
            <option value={v}>{VERDICT_NAMES[v]}</option>
          ))}
        </select>
        <select aria-label="state" value={state} onChange={(e) => setState(e.currentTarget.value as '' | 'open' | 'ended')}>
          <option value="">open or ended</option>
          <option value="open">open</option>
          <option value="ended">ended</option>
        </select>
        <input type="search" placeholder="MAC, host or address" aria-label="machine" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </div>
      <Err msg={error} />
      {!shown ? (
        !error && <p class="muted">Loading…</p>
      ) : !shown.length ? (
        <p class="muted" data-testid="boots-none">
          {sessions?.size ? 'No boot matches the filters.' : 'No boots recorded yet.'}
        </p>
      ) : (
        <SessionTable rows={shown} open={(s) => route(`/boots/${s.id}`)} />
      )}
    </section>
  );
}

/** Sessions as a table; a row (or its link) opens the session. */
function SessionTable(props: { rows: BootSession[]; open: (s: BootSession) => void; selected?: number | null; machine?: boolean }) {
  const machine = props.machine ?? true;
  return (
    <div class="table-wrap">
      <table data-testid="boot-sessions" class="boot-sessions">
        <thead>
          <tr>
            <th>#</th>
            {machine && <th>Machine</th>}
            <th>Started</th>
            <th>State</th>
            <th>Verdict</th>
            <th>Reason</th>
            <th>Kernel after</th>
            <th>Steps</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((s) => (
            <tr
              data-testid="boot-session"
              data-id={s.id}
              data-mac={s.mac ?? ''}
              data-verdict={s.verdict}
              class={`clickable${props.selected === s.id ? ' selected' : ''}`}
              aria-selected={props.selected === undefined ? undefined : props.selected === s.id}
              onClick={(e) => {
                // A click on the link is the link's (it opens the session itself).
                if (!(e.target as HTMLElement).closest('a')) props.open(s);
              }}
            >
              <td>
                <a
                  href={`/boots/${s.id}`}
                  onClick={(e) => {
                    if (props.selected !== undefined) {
                      e.preventDefault();
                      props.open(s);
                    }
                  }}
                >
                  {s.id}
                </a>
              </td>
              {machine && (
                <td>
                  <Machine s={s} />
                </td>
              )}
              <td>{when(s.started)}</td>
              <td>
                <span class={`state ${s.state === 'open' ? 'running' : 'stopped'}`}>{s.state}</span>
              </td>
              <td>
                <VerdictBadge v={s.verdict} />
              </td>
              <td class="boot-reason" data-testid="boot-session-reason">
                {s.reason}
              </td>
              <td>{s.kernel_ms === null ? <span class="muted">-</span> : ms(s.kernel_ms)}</td>
              <td>
                {s.step_count}
                {s.steps_dropped > 0 && <span class="muted"> (+{s.steps_dropped})</span>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The recent boots of one host (`GET /hosts/{id}/boot-sessions`), live, with the
 * timeline of the newest one, or of the one picked in the list.
 */
export function RecentBoots(props: { hostId: number; name: string; mac: string }) {
  const [rows, setRows] = useState<BootSession[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState<number | null>(null);
  const seq = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const load = () => {
    const n = ++seq.current;
    api<BootSession[]>('GET', `/hosts/${props.hostId}/boot-sessions?limit=20`).then(
      (d) => {
        if (n !== seq.current) return;
        setRows([...d].sort(newestFirst));
        setError(null);
      },
      (e: ApiError) => n === seq.current && setError(e.message),
    );
  };
  useEffect(() => {
    setRows(null);
    setPicked(null);
    load();
    return () => clearTimeout(timer.current);
  }, [props.hostId]);
  const mac = props.mac.toLowerCase();
  useBootStream((u) => {
    const s = u.session;
    if (s.mac?.toLowerCase() === mac || (s.host !== null && s.host === props.name) || rows?.some((r) => r.id === s.id)) {
      clearTimeout(timer.current);
      timer.current = setTimeout(load, 150);
    }
  }, load);
  const shown = picked !== null && rows?.some((r) => r.id === picked) ? picked : (rows?.[0]?.id ?? null);
  return (
    <div data-testid="recent-boots">
      <Err msg={error} />
      {!rows ? (
        !error && <p class="muted">Loading…</p>
      ) : !rows.length ? (
        <p class="muted" data-testid="recent-boots-none">
          No boots of this host recorded yet.
        </p>
      ) : (
        <>
          <SessionTable rows={rows} machine={false} selected={shown} open={(s) => setPicked(s.id)} />
          {shown !== null && (
            <>
              <h3>
                Boot session <a href={`/boots/${shown}`}>{shown}</a>
                {shown === rows[0].id && <span class="muted"> (newest)</span>}
              </h3>
              <SessionTimeline id={shown} />
            </>
          )}
        </>
      )}
    </div>
  );
}
