// The one live connection of the UI: the event stream `GET /api/v1/events/stream`
// (server-sent events), shared by every open view. Views subscribe with a predicate on
// the event kind and reload what they show when a matching event arrives.
//
// Why not `EventSource`: the server names each SSE event after its kind
// (`event: dns.record.created`), and `EventSource` hands named events only to listeners
// registered for that exact name; there is no wildcard, and new kinds come with new
// features. So this reads the stream with `fetch` and parses it per the WHATWG SSE
// rules, which also lets a 401 lead to the login page. It keeps what `EventSource`
// gives: it reconnects after a drop (after the server's `retry:` or 2 s) and sends the
// last seen id as `Last-Event-ID`, so the server replays what was missed.

import { useEffect, useRef } from 'preact/hooks';
import { BASE, toLogin } from './api';

/** One event as the server sends it (`crate::events::Event`). */
export interface LiveEvent {
  id: number;
  time: string;
  kind: string;
  resource?: string | null;
  resource_id?: string | null;
  actor: string;
  remote_addr?: string | null;
  summary: string;
  data: unknown;
  /** The node that published it ([server] node_name). */
  node?: string;
}

type Listener = (e: LiveEvent) => void;
const listeners = new Set<Listener>();
const statusListeners = new Set<(up: boolean) => void>();
let lastId: string | null = null;
let running = false;
let abort: AbortController | null = null;
let retryMs = 2000;

/** Whether the stream is connected now. */
export let connected = false;

function setConnected(up: boolean) {
  if (connected === up) return;
  connected = up;
  statusListeners.forEach((f) => f(up));
}

/** Parses SSE text into events; returns the unparsed tail. Exported for tests. */
export function parseSse(
  buf: string,
  emit: (ev: { id?: string; event: string; data: string }) => void,
  onRetry?: (ms: number) => void,
): string {
  const blocks = buf.split(/\r\n\r\n|\n\n|\r\r/);
  const tail = blocks.pop() ?? '';
  for (const block of blocks) {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) onRetry?.(Number(value));
    }
    if (data.length || id !== undefined) emit({ id, event, data: data.join('\n') });
  }
  return tail;
}

/** One parsed SSE message. */
export type SseMessage = { id?: string; event: string; data: string };

/**
 * Reads a `text/event-stream` response to its end, calling `emit` per message (and
 * `onRetry` for a `retry:` field). Shared by the event stream, the log tail and the
 * streamed diagnostics.
 */
export async function readSse(resp: Response, emit: (ev: SseMessage) => void, onRetry?: (ms: number) => void): Promise<void> {
  if (!resp.body) throw new Error(`the stream answered ${resp.status} without a body`);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf = parseSse(buf + value, emit, onRetry);
  }
}

async function loop() {
  while (running) {
    abort = new AbortController();
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastId !== null) headers['last-event-id'] = lastId;
      const resp = await fetch(`${BASE}/events/stream`, { credentials: 'same-origin', headers, signal: abort.signal });
      if (resp.status === 401) {
        setConnected(false);
        stop();
        toLogin();
        return;
      }
      if (!resp.ok || !resp.body) throw new Error(`stream answered ${resp.status}`);
      setConnected(true);
      await readSse(
        resp,
        (ev) => {
          if (ev.id !== undefined) lastId = ev.id;
          if (ev.event === 'lagged' || !ev.data) return;
          try {
            const e = JSON.parse(ev.data) as LiveEvent;
            listeners.forEach((f) => f(e));
          } catch {
            /* not an event body */
          }
        },
        (ms) => (retryMs = ms),
      );
    } catch {
      /* dropped or aborted: retry below */
    }
    setConnected(false);
    if (running) await new Promise((r) => setTimeout(r, retryMs));
  }
}

/** Opens the shared stream (idempotent); called once the user is logged in. */
export function start() {
  if (running) return;
  running = true;
  void loop();
}

/** Closes the stream (logout, 401). */
export function stop() {
  running = false;
  abort?.abort();
}

/** Calls `f` for every live event. Returns the unsubscribe function. */
export function subscribe(f: Listener): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** Calls `f` whenever the connection goes up or down. */
export function onStatus(f: (up: boolean) => void): () => void {
  statusListeners.add(f);
  return () => statusListeners.delete(f);
}

/**
 * Re-runs `reload` (debounced, 150 ms) when an event whose kind starts with one of
 * `prefixes` arrives: how every view stays current without a page reload.
 */
export function useLive(prefixes: string[], reload: () => void) {
  const ref = useRef(reload);
  ref.current = reload;
  const key = prefixes.join(',');
  useEffect(() => {
    let t: ReturnType<typeof setTimeout> | undefined;
    const off = subscribe((e) => {
      if (prefixes.some((p) => e.kind.startsWith(p))) {
        clearTimeout(t);
        t = setTimeout(() => ref.current(), 150);
      }
    });
    return () => {
      off();
      clearTimeout(t);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
}
