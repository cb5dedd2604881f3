// Small shared building blocks of the pages: data loading, tables, paging, forms that
// put the API's `error` text next to the field it names, and confirmation of
// destructive actions.

import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { useLive } from './live';

/** Loads `GET path` and reloads it when `path` changes or a live event matches `live`. */
export function useGet<T>(path: string, live: string[] = []) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Only the latest request's answer is shown: typing in a search box sends one request
  // per key, and their answers may arrive out of order.
  const seq = useRef(0);
  const load = useCallback(() => {
    const n = ++seq.current;
    api<T>('GET', path).then(
      (d) => {
        if (n !== seq.current) return;
        setData(d);
        setError(null);
      },
      (e: ApiError) => {
        if (n === seq.current) setError(e.message);
      },
    );
  }, [path]);
  useEffect(load, [load]);
  useLive(live, load);
  return { data, error, reload: load };
}

/** A page's title bar with optional actions on the right. */
export function Header(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-head">
      <h1>{props.title}</h1>
      <div class="actions">{props.children}</div>
    </div>
  );
}

/** A red box with the API's error text (role=alert, so screen readers announce it). */
export function Err(props: { msg?: string | null }) {
  return props.msg ? (
    <p class="error" role="alert">
      {props.msg}
    </p>
  ) : null;
}

/** One table column: a header and how to render a row's cell. */
export interface Col<T> {
  h: string;
  f: (row: T) => ComponentChildren;
}

/** A plain data table; `empty` shows when there are no rows. */
export function Table<T>(props: { rows: T[] | undefined; cols: Col<T>[]; empty?: string; testid?: string }) {
  if (!props.rows) return <p class="muted">Loading…</p>;
  if (!props.rows.length) return <p class="muted">{props.empty ?? 'Nothing here yet.'}</p>;
  return (
    <div class="table-wrap">
      <table data-testid={props.testid}>
        <thead>
          <tr>
            {props.cols.map((c) => (
              <th>{c.h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr>
              {props.cols.map((c) => (
                <td>{c.f(r)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Server-side paging: `page` is 1-based; `size` rows per page out of `total`. */
export function Pager(props: { page: number; size: number; total: number; go: (p: number) => void }) {
  const pages = Math.max(1, Math.ceil(props.total / props.size));
  return (
    <nav class="pager" aria-label="pages">
      <button disabled={props.page <= 1} onClick={() => props.go(props.page - 1)}>
        ‹ Prev
      </button>
      <span>
        page {props.page} of {pages} ({props.total})
      </span>
      <button disabled={props.page >= pages} onClick={() => props.go(props.page + 1)}>
        Next ›
      </button>
    </nav>
  );
}

/** The signed-in user's role: `viewer`, `operator` or `admin` (set at sign-in). */
export type Role = 'viewer' | 'operator' | 'admin';
let role: Role = 'viewer';
/** Sets the signed-in user's role (what the forms offer; the API enforces it). */
export function setRole(r: Role) {
  role = r;
}
/** The signed-in user's role. */
export function currentRole(): Role {
  return role;
}
/** True when the role may change things (operator or admin); viewers only read. */
export function canWrite(): boolean {
  return role !== 'viewer';
}
const READ_ONLY = 'read only: your role is viewer';

/** A button that asks before it runs `action` (destructive actions confirm). */
export function Danger(props: { label: string; question: string; action: () => Promise<unknown> | void }) {
  return (
    <button
      class="danger"
      disabled={!canWrite()}
      title={canWrite() ? undefined : READ_ONLY}
      onClick={async () => {
        if (confirm(props.question)) await props.action();
      }}
    >
      {props.label}
    </button>
  );
}

/** A form field spec for [`Form`]. */
export interface Field {
  name: string;
  label: string;
  type?: 'text' | 'number' | 'select' | 'checkbox' | 'textarea' | 'password';
  options?: string[];
  placeholder?: string;
  required?: boolean;
  /** A line of help under the field (units, what applies live, what restarts). */
  hint?: string;
  /** Suggestions offered by the browser (a `datalist`), e.g. the host's interfaces. */
  list?: string[];
  /** Shown, not editable (and not sent). */
  readonly?: boolean;
  /** A custom editor for the value (text), instead of the input `type` gives. */
  render?: (id: string, value: string, set: (v: string) => void) => ComponentChildren;
}

/** A form's values by field name: text, or a checkbox's state. */
export type Values = Record<string, string | boolean>;

/**
 * A form over `fields`. `submit` gets the values; an [`ApiError`] it throws is shown
 * beside the field whose name the message quotes (`'value' must be ...`), else on top.
 * Keyboard: Enter in a one-line field submits (a native form), Ctrl/Cmd+Enter submits
 * from anywhere in it, Escape cancels when there is a `cancel`.
 */
export function Form(props: {
  fields: Field[];
  initial?: Values;
  submitLabel: string;
  submit: (v: Values) => Promise<unknown>;
  cancel?: () => void;
  testid?: string;
  /** The form changes only the signed-in user's own things (a viewer may submit it). */
  own?: boolean;
}) {
  const [v, setV] = useState<Values>(props.initial ?? {});
  const may = props.own || canWrite();
  const [err, setErr] = useState<{ field?: string; msg: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const names = props.fields.map((f) => f.name);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      await props.submit(v);
      setErr(null);
    } catch (x) {
      const ae = x instanceof ApiError ? x : new ApiError(0, x instanceof Error ? x.message : String(x));
      setErr({ field: ae.field(names), msg: ae.message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="form"
      onSubmit={onSubmit}
      data-testid={props.testid}
      noValidate
      onKeyDown={(e) => {
        if (e.key === 'Escape' && props.cancel) {
          e.preventDefault();
          props.cancel();
        } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          (e.currentTarget as HTMLFormElement).requestSubmit();
        }
      }}
    >
      {err && !err.field && <Err msg={err.msg} />}
      {props.fields.map((f) => {
        const id = `f-${props.testid ?? 'form'}-${f.name}`;
        const val = v[f.name];
        const set = (x: string | boolean) => setV((cur) => ({ ...cur, [f.name]: x }));
        const bad = err?.field === f.name;
        let input;
        if (f.render) {
          input = f.render(id, String(val ?? ''), set);
        } else if (f.type === 'select') {
          input = (
            <select
              id={id}
              name={f.name}
              aria-invalid={bad}
              aria-describedby={bad ? `${id}-err` : undefined}
              value={String(val ?? f.options?.[0] ?? '')}
              onChange={(e) => set(e.currentTarget.value)}
            >
              {f.options?.map((o) => (
                <option value={o}>{o}</option>
              ))}
            </select>
          );
        } else if (f.type === 'checkbox') {
          input = <input id={id} name={f.name} type="checkbox" checked={!!val} onChange={(e) => set(e.currentTarget.checked)} />;
        } else if (f.type === 'textarea') {
          input = <textarea id={id} name={f.name} rows={10} value={String(val ?? '')} onInput={(e) => set(e.currentTarget.value)} />;
        } else {
          input = (
            <input
              id={id}
              name={f.name}
              type={(f.type ?? 'text') as 'text'}
              placeholder={f.placeholder}
              readOnly={f.readonly}
              list={f.list ? `${id}-list` : undefined}
              value={String(val ?? '')}
              aria-invalid={bad}
              aria-describedby={bad ? `${id}-err` : undefined}
              onInput={(e) => set(e.currentTarget.value)}
            />
          );
        }
        return (
          <div class={`field${bad ? ' bad' : ''}`}>
            <label for={id}>{f.label}</label>
            {input}
            {f.list && (
              <datalist id={`${id}-list`}>
                {f.list.map((o) => (
                  <option value={o} />
                ))}
              </datalist>
            )}
            {f.hint && <span class="hint">{f.hint}</span>}
            {bad && (
              <span class="field-error" id={`${id}-err`} role="alert">
                {err.msg}
              </span>
            )}
          </div>
        );
      })}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={busy || !may} title={may ? undefined : READ_ONLY}>
          {props.submitLabel}
        </button>
        {props.cancel && (
          <button type="button" onClick={props.cancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** `2026-11-23 02:19:57` from an RFC 3339 time or unix seconds. */
export function when(t: string | number | null | undefined): string {
  if (t === null || t === undefined) return '-';
  const d = typeof t === 'number' ? new Date(t * 1000) : new Date(t);
  if (isNaN(d.getTime())) return String(t);
  return d.toLocaleString(undefined, { hour12: false });
}

/** Pretty JSON for a settings or event payload. */
export function Json(props: { v: unknown }) {
  return <pre class="json">{JSON.stringify(props.v, null, 2)}</pre>;
}

/** `1.5 MB` from a byte count. */
export function bytes(n: number): string {
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}

/** `[key, value]` rows of an object, nested objects flattened to `a.b` keys. */
function flatten(v: unknown, prefix = ''): [string, unknown][] {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return [[prefix || 'value', v]];
  return Object.entries(v as Record<string, unknown>).flatMap(([k, x]) =>
    x !== null && typeof x === 'object' && !Array.isArray(x) ? flatten(x, `${prefix}${k}.`) : [[`${prefix}${k}`, x] as [string, unknown]],
  );
}

/** A status object (XDP state, counters) as a two-column table of keys and values. */
export function Facts(props: { v: unknown; testid?: string }) {
  if (props.v === null || props.v === undefined) return <p class="muted">Loading…</p>;
  const show = (x: unknown) =>
    Array.isArray(x) ? (x.length ? x.map((e) => (typeof e === 'object' ? JSON.stringify(e) : String(e))).join(', ') : '-') : x === null ? '-' : String(x);
  return (
    <div class="table-wrap facts">
      <table data-testid={props.testid}>
        <tbody>
          {flatten(props.v).map(([k, x]) => (
            <tr>
              <th scope="row">{k.replaceAll('_', ' ')}</th>
              <td>
                <code>{show(x)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * An action runner for a panel: `run(f)` clears the message and error, runs `f`, and
 * keeps the thrown error's text in `err`; `msg`/`setMsg` hold a success note.
 */
export function useAction() {
  const [err, setErr] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const run = async (f: () => Promise<unknown>) => {
    setErr(null);
    setMsg(null);
    try {
      await f();
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  return { run, err, msg, setMsg };
}
