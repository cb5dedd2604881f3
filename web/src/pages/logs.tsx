// Logs: live tail of `GET /api/v1/logs/stream` (its own SSE connection, open only
// while this page is), level filter, log files and disk usage, cleanup.

import { useEffect, useRef, useState } from 'preact/hooks';
import { api, BASE, toLogin } from '../api';
import { readSse } from '../live';
import { bytes, Danger, Err, Header, Table, useGet, when } from '../ui';

interface LogLine {
  time: string;
  level: string;
  target: string;
  message: string;
  fields: Record<string, unknown>;
}

/** `crate::logging::files::LogFile`. */
interface LogFile {
  name: string;
  size_bytes: number;
  modified: string;
  current: boolean;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];
const MAX = 500;

export function Logs() {
  const [level, setLevel] = useState('info');
  const [lines, setLines] = useState<LogLine[]>([]);
  const [paused, setPaused] = useState(false);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const [err, setErr] = useState<string | null>(null);
  const files = useGet<{ dir: string; files: LogFile[] }>('/logs/files');
  const usage = useGet<{ total_bytes: number; volume_free_bytes: number; volume_total_bytes: number }>('/logs/disk-usage');
  useEffect(() => {
    const ctl = new AbortController();
    (async () => {
      try {
        const resp = await fetch(`${BASE}/logs/stream?level=${level}`, { credentials: 'same-origin', signal: ctl.signal });
        if (resp.status === 401) return toLogin();
        if (!resp.ok || !resp.body) throw new Error(`log stream answered ${resp.status}`);
        await readSse(resp, (ev) => {
          if (ev.event !== 'log' || pausedRef.current) return;
          try {
            const l = JSON.parse(ev.data) as LogLine;
            setLines((old) => [...old.slice(-(MAX - 1)), l]);
          } catch {
            /* skip */
          }
        });
      } catch (e) {
        if (!ctl.signal.aborted) setErr((e as Error).message);
      }
    })();
    return () => ctl.abort();
  }, [level]);
  return (
    <section>
      <Header title="Logs">
        <select aria-label="level" value={level} onChange={(e) => (setLines([]), setLevel(e.currentTarget.value))}>
          {LEVELS.map((l) => (
            <option>{l}</option>
          ))}
        </select>
        <button onClick={() => setPaused(!paused)}>{paused ? 'Resume' : 'Pause'}</button>
        <button onClick={() => setLines([])}>Clear</button>
      </Header>
      <Err msg={err} />
      <div class="logview" data-testid="logview" role="log" aria-live="off">
        {lines.map((l) => (
          <div class={`logline ${l.level}`}>
            <span class="t">{l.time.slice(11, 23)}</span> <span class="lv">{l.level.toUpperCase()}</span> <span class="tg">{l.target}</span> {l.message}
            {Object.keys(l.fields).length > 0 && <span class="fields"> {Object.entries(l.fields).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(' ')}</span>}
          </div>
        ))}
        {!lines.length && <span class="muted">Waiting for log lines at {level} or above…</span>}
      </div>
      <h2>Files</h2>
      <Err msg={files.error ?? usage.error} />
      {files.data && (
        <p class="muted">
          In <code>{files.data.dir}</code>
          {usage.data &&
            `: ${bytes(usage.data.total_bytes)} used by logs; ${bytes(usage.data.volume_free_bytes)} free of ${bytes(usage.data.volume_total_bytes)} on the volume`}
          .
        </p>
      )}
      <Table
        testid="log-files"
        rows={files.data?.files}
        empty="No log files."
        cols={[
          { h: 'File', f: (f) => <code>{f.name}</code> },
          { h: 'Size', f: (f) => bytes(f.size_bytes) },
          { h: 'Modified', f: (f) => when(f.modified) },
          { h: '', f: (f) => (f.current ? <span class="state running">current</span> : '') },
        ]}
      />
      <div class="logs-actions">
        <Danger
          label="Clean up old files"
          question="Delete rotated log files beyond the retention?"
          action={() => api('POST', '/logs/cleanup', {}).then(() => (files.reload(), usage.reload()), (e: Error) => setErr(e.message))}
        />
      </div>
    </section>
  );
}
