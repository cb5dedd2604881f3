// Boot sessions, shared by the Boots page and the hosts page: the session and step
// types, the verdict badge, the live stream of session updates, and the timeline
// waterfall of one session (one row per step, a bar placed by when the step began and
// sized by how long it took, each row opening to its details).
//
// Everything a booting machine sent (file names, vendor classes, installer messages)
// reaches the page inside summaries and details: it is rendered as text only.

import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, BASE, toLogin } from '../api';
import { readSse } from '../live';
import { Err, Json, when } from '../ui';

/** Where a boot attempt got to. */
export type Verdict = 'in_progress' | 'handed_to_installer' | 'installed' | 'booted_local_disk' | 'stalled';

/** Every verdict, in the order a boot goes through them (stalled last). */
export const VERDICTS: Verdict[] = ['in_progress', 'handed_to_installer', 'installed', 'booted_local_disk', 'stalled'];

/** The verdicts in words. */
export const VERDICT_NAMES: Record<Verdict, string> = {
  in_progress: 'in progress',
  handed_to_installer: 'handed to installer',
  installed: 'installed',
  booted_local_disk: 'booted local disk',
  stalled: 'stalled',
};

/** One step of a boot (`GET /boot-sessions/{id}`, the live stream). */
export interface BootStep {
  at: string;
  offset_ms: number;
  duration_ms: number | null;
  kind: string;
  ok: boolean;
  summary: string;
  details: unknown;
}

/** One boot attempt of one machine; `steps` is empty in lists. */
export interface BootSession {
  id: number;
  mac: string | null;
  ip: string | null;
  host: string | null;
  started: string;
  updated: string;
  state: 'open' | 'ended';
  verdict: Verdict;
  reason: string;
  kernel_ms: number | null;
  step_count: number;
  steps_dropped: number;
  steps?: BootStep[];
}

/** What the live stream carries per update. */
export interface SessionUpdate {
  session: BootSession;
  step: BootStep | null;
}

/** `850 ms`, `1.25 s`, `12.3 s`, `2 min 05 s`. */
export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined) return '-';
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60000) return `${+(n / 1000).toFixed(n < 10000 ? 2 : 1)} s`;
  const s = Math.round(n / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** The verdict as a badge. */
export function VerdictBadge(props: { v: Verdict }) {
  return (
    <span class={`state verdict verdict-${props.v}`} data-testid="verdict" data-verdict={props.v}>
      {VERDICT_NAMES[props.v] ?? props.v}
    </span>
  );
}

/** The machine of a session: MAC, registered host name, address. */
export function Machine(props: { s: BootSession }) {
  const s = props.s;
  return (
    <span class="boot-machine">
      {s.mac ? <code>{s.mac}</code> : <span class="muted">MAC not known</span>}
      {s.host && <strong> {s.host}</strong>}
      {s.ip && <span class="muted"> {s.ip}</span>}
    </span>
  );
}

/** True when `a` is at least as recent as `b` (a later update, more steps, or ended). */
export function fresher(a: BootSession, b: BootSession): boolean {
  const ta = Date.parse(a.updated);
  const tb = Date.parse(b.updated);
  if (ta !== tb) return ta > tb;
  if (a.step_count !== b.step_count) return a.step_count > b.step_count;
  return a.state === 'ended' || b.state === 'open';
}

/** A view following the stream: its update and (re)connect callbacks. */
interface Follower {
  onUpdate: (u: SessionUpdate) => void;
  onConnect?: () => void;
  onStatus: (up: boolean) => void;
}

// One connection to `GET /boot-sessions/stream` shared by every view following it (a
// page and the timeline in it), open while at least one is shown.
const followers = new Set<Follower>();
let streamCtl: AbortController | null = null;
let streamUp = false;

function setStreamUp(up: boolean) {
  streamUp = up;
  followers.forEach((f) => f.onStatus(up));
}

async function follow(ctl: AbortController) {
  let retryMs = 2000;
  while (!ctl.signal.aborted) {
    try {
      const resp = await fetch(`${BASE}/boot-sessions/stream`, {
        credentials: 'same-origin',
        headers: { accept: 'text/event-stream' },
        signal: ctl.signal,
      });
      if (resp.status === 401) return toLogin();
      if (!resp.ok || !resp.body) throw new Error(`the boot session stream answered ${resp.status}`);
      setStreamUp(true);
      followers.forEach((f) => f.onConnect?.());
      await readSse(
        resp,
        (ev) => {
          // This connection fell behind and updates were skipped: every view reloads.
          if (ev.event === 'lagged') return followers.forEach((f) => f.onConnect?.());
          if (ev.event !== 'session' || !ev.data) return;
          let u: SessionUpdate;
          try {
            u = JSON.parse(ev.data) as SessionUpdate;
          } catch {
            return; /* not an update: skip */
          }
          followers.forEach((f) => f.onUpdate(u));
        },
        (n) => (retryMs = n),
      );
    } catch {
      /* dropped or aborted: retry below */
    }
    if (streamCtl === ctl) setStreamUp(false);
    if (!ctl.signal.aborted) await new Promise((r) => setTimeout(r, retryMs));
  }
}

/**
 * Follows `GET /boot-sessions/stream` while the calling view is shown: `onUpdate` per
 * session update, `onConnect` each time the stream (re)connects (the view reloads what it
 * shows then, so nothing that happened while it was away is missed; also when the server
 * says this connection fell behind and skipped updates). The connection is
 * shared, and reconnects after a drop (after the server's `retry:` or 2 s). Answers
 * whether the stream is connected.
 */
export function useBootStream(onUpdate: (u: SessionUpdate) => void, onConnect?: () => void): boolean {
  const ref = useRef({ onUpdate, onConnect });
  ref.current = { onUpdate, onConnect };
  const [up, setUp] = useState(streamUp);
  useEffect(() => {
    const me: Follower = {
      onUpdate: (u) => ref.current.onUpdate(u),
      onConnect: () => ref.current.onConnect?.(),
      onStatus: setUp,
    };
    followers.add(me);
    setUp(streamUp);
    if (!streamCtl) {
      streamCtl = new AbortController();
      void follow(streamCtl);
    }
    return () => {
      followers.delete(me);
      // The last one gone: close the connection (after the next view had its chance to
      // take it over, when one page replaces another).
      setTimeout(() => {
        if (!followers.size && streamCtl) {
          streamCtl.abort();
          streamCtl = null;
          streamUp = false;
        }
      }, 0);
    };
  }, []);
  return up;
}

/**
 * One session with its steps (`GET /boot-sessions/{id}`), reloaded (debounced) when the
 * live stream reports a change of it. `null` while loading.
 */
export function useSession(id: number | null) {
  const [s, setS] = useState<BootSession | null>(null);
  const [error, setError] = useState<string | null>(null);
  const seq = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const load = () => {
    if (id === null) return;
    const n = ++seq.current;
    api<BootSession>('GET', `/boot-sessions/${id}`).then(
      (d) => {
        if (n !== seq.current) return;
        setS(d);
        setError(null);
      },
      (e: ApiError) => n === seq.current && setError(e.message),
    );
  };
  useEffect(() => {
    setS(null);
    setError(null);
    load();
    return () => clearTimeout(timer.current);
  }, [id]);
  useBootStream(
    (u) => {
      if (u.session.id !== id) return;
      clearTimeout(timer.current);
      timer.current = setTimeout(load, 150);
    },
    // On (re)connecting: what changed while the stream was not there.
    load,
  );
  return { session: s, error };
}

/** Ticks of the time axis: about five round steps over `total` ms. */
function ticks(total: number): number[] {
  const raw = total / 5;
  const mag = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((x) => x >= raw) ?? raw;
  const out: number[] = [];
  for (let t = 0; t <= total + 1e-9; t += step) out.push(t);
  return out;
}

/**
 * The timeline of one session: its verdict and reason, then a waterfall with one row per
 * step on the scale of the whole session (a step without a duration gets a thin mark).
 * A row opens to the step's details.
 */
export function Timeline(props: { s: BootSession }) {
  const s = props.s;
  const steps = s.steps ?? [];
  const [open, setOpen] = useState<Set<number>>(new Set());
  const total = Math.max(1, ...steps.map((st) => st.offset_ms + (st.duration_ms ?? 0)));
  const pct = (n: number) => `${Math.min(100, (n / total) * 100)}%`;
  const toggle = (i: number) =>
    setOpen((cur) => {
      const next = new Set(cur);
      if (!next.delete(i)) next.add(i);
      return next;
    });
  return (
    <div class="boot-timeline" data-testid="boot-timeline" data-session={s.id}>
      <div class={`boot-verdict verdict-${s.verdict}`} data-testid="boot-verdict">
        <VerdictBadge v={s.verdict} />
        <span class="boot-reason" data-testid="boot-reason">
          {s.reason || (s.state === 'open' ? 'waiting for the first steps' : '')}
        </span>
      </div>
      <p class="muted boot-facts">
        <Machine s={s} /> · started {when(s.started)} · {s.state === 'open' ? 'open' : `ended, last step ${when(s.updated)}`}
        {s.kernel_ms !== null && <> · kernel after {ms(s.kernel_ms)}</>} · {s.step_count} step{s.step_count === 1 ? '' : 's'}
        {s.steps_dropped > 0 && <> ({s.steps_dropped} later steps not kept)</>}
      </p>
      {steps.length === 0 ? (
        <p class="muted">No steps recorded.</p>
      ) : (
        <div class="waterfall">
          <div class="wf-row wf-head" aria-hidden="true">
            <span>Offset</span>
            <span>Step</span>
            <span>What happened</span>
            <span class="wf-track wf-axis">
              {ticks(total).map((t) => (
                <span class={`wf-tick${t / total > 0.9 ? ' end' : ''}`} style={{ left: pct(t) }}>
                  {ms(t)}
                </span>
              ))}
            </span>
          </div>
          <ol class="wf-steps" aria-label="boot steps">
            {steps.map((st, i) => {
              const isOpen = open.has(i);
              return (
                <li class={`wf-step${st.ok ? '' : ' failed'}`} data-testid="boot-step" data-kind={st.kind} data-ok={String(st.ok)}>
                  <div class="wf-row">
                    <span class="wf-offset" title={when(st.at)}>
                      +{ms(st.offset_ms)}
                    </span>
                    <span>
                      <span class={`state wf-kind${st.ok ? '' : ' failed'}`}>{st.kind}</span>
                    </span>
                    <span class="wf-summary">
                      <button class="wf-toggle" aria-expanded={isOpen} aria-label={isOpen ? 'hide details' : 'show details'} onClick={() => toggle(i)}>
                        {isOpen ? '▾' : '▸'}
                      </button>{' '}
                      {!st.ok && <span class="failed">✗ </span>}
                      <span data-testid="boot-step-summary">{st.summary}</span>
                    </span>
                    <span class="wf-track" aria-hidden="true">
                      <span
                        class={`wf-bar${st.duration_ms === null ? ' instant' : ''}`}
                        style={{ left: `min(${pct(st.offset_ms)}, calc(100% - 4px))`, width: st.duration_ms === null ? undefined : pct(st.duration_ms) }}
                        title={st.duration_ms === null ? `at +${ms(st.offset_ms)}` : `+${ms(st.offset_ms)}, took ${ms(st.duration_ms)}`}
                      />
                    </span>
                  </div>
                  {isOpen && (
                    <div class="wf-details" data-testid="boot-step-details">
                      <p class="muted">
                        {when(st.at)}
                        {st.duration_ms !== null && <>, took {ms(st.duration_ms)}</>}
                      </p>
                      <Json v={st.details} />
                    </div>
                  )}
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </div>
  );
}

/** A session loaded by id with its timeline (live). */
export function SessionTimeline(props: { id: number }) {
  const { session, error } = useSession(props.id);
  if (error) return <Err msg={error} />;
  if (!session) return <p class="muted">Loading…</p>;
  return <Timeline s={session} />;
}
