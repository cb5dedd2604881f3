// Editors of the Profiles page: the menu entries as a structured form (one card per
// entry, fields by entry type), a side-by-side view of a unified diff, and the iPXE
// script template editor that marks the line a render error names.

import { useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { Err, Header, useGet } from '../ui';

/** One menu entry (`bootlane::boot::catalog::MenuEntry`). */
export interface MenuEntry {
  label: string;
  type: 'local' | 'linux' | 'chain' | 'sanboot' | 'custom';
  kernel?: string;
  initrds?: string[];
  cmdline?: string;
  url?: string;
  script?: string;
  is_default?: boolean;
}

const TYPES: MenuEntry['type'][] = ['local', 'linux', 'chain', 'sanboot', 'custom'];

/** Keeps only the keys the entry's type uses, so the API gets no stray fields. */
function clean(e: MenuEntry): MenuEntry {
  const out: MenuEntry = { label: e.label, type: e.type, is_default: !!e.is_default };
  if (e.type === 'linux') {
    out.kernel = e.kernel ?? '';
    out.initrds = (e.initrds ?? []).filter((x) => x.trim() !== '');
    if (e.cmdline) out.cmdline = e.cmdline;
  }
  if (e.type === 'chain' || e.type === 'sanboot') out.url = e.url ?? '';
  if (e.type === 'custom') out.script = e.script ?? '';
  return out;
}

/**
 * The menu entries of a profile as a list of small forms. `value` and `onChange` carry
 * the entries as JSON text (the profile form keeps every value as text).
 */
export function MenuEntriesEditor(props: { id: string; value: string; onChange: (json: string) => void }) {
  let entries: MenuEntry[] = [];
  try {
    entries = JSON.parse(props.value || '[]');
  } catch {
    entries = [];
  }
  const set = (next: MenuEntry[]) => props.onChange(JSON.stringify(next.map(clean)));
  const upd = (i: number, patch: Partial<MenuEntry>) => set(entries.map((e, j) => (j === i ? { ...e, ...patch } : e)));
  const move = (i: number, d: number) => {
    const n = [...entries];
    [n[i], n[i + d]] = [n[i + d], n[i]];
    set(n);
  };
  return (
    <div class="entries" id={props.id} data-testid="menu-entries">
      {entries.map((e, i) => {
        const fid = (k: string) => `${props.id}-${i}-${k}`;
        return (
          <fieldset class="entry" data-testid={`entry-${i}`}>
            <legend>Entry {i + 1}</legend>
            <div class="entry-grid">
              <label for={fid('label')}>Label</label>
              <input id={fid('label')} value={e.label} onInput={(x) => upd(i, { label: x.currentTarget.value })} />
              <label for={fid('type')}>Type</label>
              <select id={fid('type')} value={e.type} onChange={(x) => upd(i, { type: x.currentTarget.value as MenuEntry['type'] })}>
                {TYPES.map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
              {e.type === 'linux' && (
                <>
                  <label for={fid('kernel')}>Kernel</label>
                  <input id={fid('kernel')} placeholder="debian/linux or http://..." value={e.kernel ?? ''} onInput={(x) => upd(i, { kernel: x.currentTarget.value })} />
                  <label for={fid('initrds')}>Initrds (one a line)</label>
                  <textarea
                    id={fid('initrds')}
                    rows={2}
                    value={(e.initrds ?? []).join('\n')}
                    onInput={(x) => upd(i, { initrds: x.currentTarget.value.split('\n') })}
                  />
                  <label for={fid('cmdline')}>Command line</label>
                  <input id={fid('cmdline')} value={e.cmdline ?? ''} onInput={(x) => upd(i, { cmdline: x.currentTarget.value })} />
                </>
              )}
              {(e.type === 'chain' || e.type === 'sanboot') && (
                <>
                  <label for={fid('url')}>URL</label>
                  <input id={fid('url')} value={e.url ?? ''} onInput={(x) => upd(i, { url: x.currentTarget.value })} />
                </>
              )}
              {e.type === 'custom' && (
                <>
                  <label for={fid('script')}>iPXE script</label>
                  <textarea id={fid('script')} rows={4} value={e.script ?? ''} onInput={(x) => upd(i, { script: x.currentTarget.value })} />
                </>
              )}
              <label for={fid('default')}>Default choice</label>
              <input
                id={fid('default')}
                type="radio"
                name={`${props.id}-default`}
                checked={!!e.is_default}
                onChange={() => set(entries.map((x, j) => ({ ...x, is_default: j === i })))}
              />
            </div>
            <div class="btns">
              <button type="button" disabled={i === 0} onClick={() => move(i, -1)} aria-label={`move entry ${i + 1} up`}>
                ↑
              </button>
              <button type="button" disabled={i === entries.length - 1} onClick={() => move(i, 1)} aria-label={`move entry ${i + 1} down`}>
                ↓
              </button>
              <button type="button" class="danger" onClick={() => set(entries.filter((_, j) => j !== i))}>
                Remove entry
              </button>
            </div>
          </fieldset>
        );
      })}
      <button type="button" onClick={() => set([...entries, { label: `Entry ${entries.length + 1}`, type: 'local' }])}>
        Add entry
      </button>
    </div>
  );
}

/** One row of a side-by-side diff: left (old) and right (new) line, either may be absent. */
interface Row {
  l?: string;
  r?: string;
  ln?: number;
  rn?: number;
  kind: 'same' | 'change' | 'hunk';
}

/** Rows of a side-by-side view from a unified diff (`---`/`+++` headers skipped). */
export function sideBySide(unified: string): Row[] {
  const rows: Row[] = [];
  let ln = 0;
  let rn = 0;
  let dels: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      const l = dels[i];
      const r = adds[i];
      rows.push({ l, r, ln: l !== undefined ? ++ln : undefined, rn: r !== undefined ? ++rn : undefined, kind: 'change' });
    }
    dels = [];
    adds = [];
  };
  for (const line of unified.split('\n')) {
    if (line.startsWith('---') || line.startsWith('+++')) continue;
    const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(line);
    if (h) {
      flush();
      ln = Number(h[1]) - 1;
      rn = Number(h[2]) - 1;
      rows.push({ l: line, kind: 'hunk' });
    } else if (line.startsWith('-')) dels.push(line.slice(1));
    else if (line.startsWith('+')) adds.push(line.slice(1));
    else if (line.startsWith(' ')) {
      flush();
      rows.push({ l: line.slice(1), r: line.slice(1), ln: ++ln, rn: ++rn, kind: 'same' });
    }
  }
  flush();
  return rows;
}

/** A unified diff shown as two columns (old left, new right), changed lines marked. */
export function DiffView(props: { diff: string; left: string; right: string }) {
  const rows = sideBySide(props.diff);
  return (
    <div class="table-wrap">
      <table class="sbs" data-testid="diff">
        <thead>
          <tr>
            <th colSpan={2}>{props.left}</th>
            <th colSpan={2}>{props.right}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) =>
            r.kind === 'hunk' ? (
              <tr class="hunk">
                <td colSpan={4}>{r.l}</td>
              </tr>
            ) : (
              <tr>
                <td class="ln">{r.ln ?? ''}</td>
                <td class={r.kind === 'change' && r.l !== undefined ? 'del' : r.l === undefined ? 'none' : ''}>
                  <code>{r.l ?? ''}</code>
                </td>
                <td class="ln">{r.rn ?? ''}</td>
                <td class={r.kind === 'change' && r.r !== undefined ? 'add' : r.r === undefined ? 'none' : ''}>
                  <code>{r.r ?? ''}</code>
                </td>
              </tr>
            ),
          )}
        </tbody>
      </table>
    </div>
  );
}

interface ScriptView {
  template: string;
  source: string;
  builtin_template: string;
  script_path: string;
}

/** The line a template error names: minijinja's `(in script:N)`, or `line N`. */
export function errorLine(msg: string): number | null {
  const m = /\(in [^:()]+:(\d+)\)/.exec(msg) ?? /\bline (\d+)/.exec(msg);
  return m ? Number(m[1]) : null;
}

/**
 * The iPXE script template (`/services/ipxe-script`): a text editor with line numbers;
 * a 400 from the server marks the line it names and shows the message beside it.
 */
export function TemplateEditor() {
  const { data, error, reload } = useGet<ScriptView>('/services/ipxe-script', ['ipxe.']);
  const [text, setText] = useState<string | null>(null);
  const [err, setErr] = useState<{ msg: string; line: number | null } | null>(null);
  const [saved, setSaved] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);
  // `text` stays null until the user edits: the stored template shows until then (no
  // effect copying it into `text`, which could overwrite a first keystroke).
  const value = text ?? data?.template ?? '';
  const lines = value.split('\n').length;
  const jump = (line: number) => {
    const el = area.current;
    if (!el) return;
    const start = value.split('\n').slice(0, line - 1).join('\n').length + (line > 1 ? 1 : 0);
    el.focus();
    el.setSelectionRange(start, start + (value.split('\n')[line - 1]?.length ?? 0));
  };
  const save = async (template: string | null) => {
    setSaved(false);
    try {
      const v = await api<ScriptView>('PUT', '/services/ipxe-script', { template });
      setText(v.template);
      setErr(null);
      setSaved(true);
      reload();
    } catch (x) {
      const msg = x instanceof ApiError ? x.message : String(x);
      setErr({ msg, line: errorLine(msg) });
    }
  };
  return (
    <section>
      <Header title="iPXE script template" />
      <Err msg={error} />
      {data && (
        <form
          class="panel"
          data-testid="template-form"
          onSubmit={(e) => {
            e.preventDefault();
            save(value);
          }}
        >
          <p class="muted">
            Source: {data.source}. Clients fetch <code>{data.script_path}</code>.
          </p>
          <div class="code-editor">
            <pre class="gutter" aria-hidden="true">
              {Array.from({ length: lines }, (_, i) => (
                <span class={err?.line === i + 1 ? 'bad-line' : ''}>{i + 1}</span>
              ))}
            </pre>
            <textarea
              ref={area}
              aria-label="template"
              aria-invalid={!!err}
              aria-describedby={err ? 'template-err' : undefined}
              rows={lines + 1}
              spellcheck={false}
              wrap="off"
              value={value}
              onInput={(e) => setText(e.currentTarget.value)}
              onKeyDown={(e) => {
                // Ctrl/Cmd+Enter saves (plain Enter is a new line here).
                if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                  e.preventDefault();
                  save(value);
                }
              }}
            />
          </div>
          {err && (
            <p class="field-error" id="template-err" role="alert" data-testid="template-error">
              {err.line !== null && (
                <button type="button" class="link" onClick={() => jump(err.line!)}>
                  line {err.line}:
                </button>
              )}{' '}
              {err.msg.split('\n')[0]}
              {err.msg.includes('\n') && (
                <details>
                  <summary>where (the server's context)</summary>
                  <pre class="json">{err.msg.slice(err.msg.indexOf('\n') + 1)}</pre>
                </details>
              )}
            </p>
          )}
          {saved && <p class="ok">Saved; the next script request uses it.</p>}
          <div class="form-actions">
            <button type="submit" class="primary">
              Save
            </button>
            <button type="button" onClick={() => (setText(data.builtin_template), setErr(null))}>
              Load the built-in template
            </button>
            <button type="button" onClick={() => save(null)}>
              Remove the stored template
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
