// Post-install scripts and baselines. Scripts: the list, a new script, the editor (type,
// content, the variables it expects, render on/off) with versions, a diff against the
// current content and rollback. Baselines: the list, a new baseline, its scripts in run
// order (add, move, remove), variables, OS filter and the default flag, and "what does
// this machine get" (the assigned baselines and rendered scripts for a MAC, with its
// reports when it is a registered host).

import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { Danger, Err, Form, Header, Table, useAction, useGet, when } from '../ui';

const TYPES = ['sh', 'bash', 'python', 'powershell', 'cmd'];

interface Variable {
  name: string;
  description?: string;
  default?: string | null;
}
interface Script {
  id: number;
  name: string;
  type: string;
  content: string;
  description: string;
  variables: Variable[];
  render: boolean;
  version: number;
  updated_at: string;
}
interface Revision {
  version: number;
  type: string;
  comment: string;
  created_at: string;
}
interface Baseline {
  id: number;
  name: string;
  description: string;
  os_filter: { family?: string | null; version?: string | null };
  variables: Record<string, string>;
  script_ids: number[];
  is_default: boolean;
  updated_at: string;
}
interface Assignment {
  mac: string;
  host_id?: number | null;
  os?: string | null;
  baselines: { id: number; name: string; via: string }[];
  skipped: string[];
  scripts: { id: number; name: string; type: string; version: number; content?: string | null; error?: string | null }[];
}
interface Report {
  id: number;
  script: string;
  exit_code: number;
  duration_ms: number;
  output: string;
  at: string;
}

/** `name=default` lines <-> variables (a line without `=` has no default). */
function varsToText(v: Variable[]): string {
  return v.map((x) => (x.default != null ? `${x.name}=${x.default}` : x.name)).join('\n');
}
function textToVars(t: string): Variable[] {
  return t
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const i = l.indexOf('=');
      return i < 0 ? { name: l } : { name: l.slice(0, i).trim(), default: l.slice(i + 1) };
    });
}
function mapToText(m: Record<string, string>): string {
  return Object.entries(m)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}
function textToMap(t: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of t.split('\n')) {
    const i = l.indexOf('=');
    if (l.trim() && i > 0) out[l.slice(0, i).trim()] = l.slice(i + 1);
  }
  return out;
}

function ScriptEditor(props: { s: Script; saved: () => void }) {
  const { s } = props;
  const [content, setContent] = useState(s.content);
  const [type, setType] = useState(s.type);
  const [vars, setVars] = useState(varsToText(s.variables));
  const [render, setRender] = useState(s.render);
  const [diff, setDiff] = useState<string | null>(null);
  const { run, err, msg, setMsg } = useAction();
  const versions = useGet<Revision[]>(`/scripts/${s.id}/versions`, ['script.']);
  useEffect(() => {
    setContent(s.content);
    setType(s.type);
    setVars(varsToText(s.variables));
    setRender(s.render);
  }, [s.id, s.version]);
  return (
    <div class="panel" data-testid="script-editor">
      <h2>
        {s.name} <span class="muted">v{s.version}</span>
      </h2>
      <label>
        Type{' '}
        <select name="type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          {TYPES.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
      </label>{' '}
      <label>
        <input type="checkbox" name="render" checked={render} onChange={(e) => setRender(e.currentTarget.checked)} /> Render as a template (
        <code>{'{{ host.name }}'}</code>, variables)
      </label>
      <textarea name="content" class="code" rows={16} spellcheck={false} value={content} onInput={(e) => setContent(e.currentTarget.value)} />
      <p>
        <label>
          Variables it expects <span class="muted">(one per line: name or name=default)</span>
          <br />
          <textarea name="variables" class="code" rows={3} value={vars} onInput={(e) => setVars(e.currentTarget.value)} />
        </label>
      </p>
      <div class="actions">
        <button
          class="primary"
          onClick={() =>
            run(async () => {
              await api('PUT', `/scripts/${s.id}`, { type, content, render, variables: textToVars(vars) });
              setMsg('Saved.');
              props.saved();
            })
          }
        >
          Save
        </button>
      </div>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err} />
      <h3>Versions</h3>
      <Table
        testid="script-versions"
        rows={versions.data ?? undefined}
        cols={[
          { h: 'Version', f: (v) => v.version },
          { h: 'Type', f: (v) => v.type },
          { h: 'Comment', f: (v) => v.comment },
          { h: 'When', f: (v) => when(v.created_at) },
          {
            h: '',
            f: (v) =>
              v.version !== s.version && (
                <span>
                  <button onClick={() => run(async () => setDiff((await api<{ diff: string }>('GET', `/scripts/${s.id}/diff/${v.version}`)).diff || '(identical)'))}>Diff {v.version}</button>{' '}
                  <button onClick={() => run(async () => (await api('POST', `/scripts/${s.id}/rollback/${v.version}`), props.saved()))}>Roll back to {v.version}</button>
                </span>
              ),
          },
        ]}
      />
      {diff !== null && (
        <pre class="log" data-testid="script-diff">
          {diff}
        </pre>
      )}
    </div>
  );
}

export function Scripts() {
  const list = useGet<{ scripts: Script[] }>('/scripts', ['script.']);
  const [open, setOpen] = useState<number | null>(null);
  const [creating, setCreating] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const shown = list.data?.scripts.find((s) => s.id === open);
  return (
    <section>
      <Header title="Scripts">
        <button class="primary" onClick={() => setCreating(!creating)}>
          New script
        </button>
      </Header>
      {creating && (
        <Form
          testid="script-form"
          fields={[
            { name: 'name', label: 'Name', required: true },
            { name: 'type', label: 'Type', type: 'select', options: TYPES },
            { name: 'content', label: 'Content', type: 'textarea', required: true, hint: 'a minijinja template: {{ host.name }}, {{ server.base_url }}, your variables' },
            { name: 'variables', label: 'Variables', type: 'textarea', hint: 'one per line: name or name=default' },
            { name: 'description', label: 'Description' },
          ]}
          submitLabel="Create"
          cancel={() => setCreating(false)}
          submit={async (v) => {
            const s = await api<Script>('POST', '/scripts', {
              name: String(v.name ?? ''),
              type: String(v.type ?? 'sh'),
              content: String(v.content ?? ''),
              variables: textToVars(String(v.variables ?? '')),
              description: String(v.description ?? ''),
            });
            setCreating(false);
            list.reload();
            setOpen(s.id);
          }}
        />
      )}
      <Err msg={err ?? list.error} />
      <Table
        testid="scripts"
        rows={list.data?.scripts}
        empty="No scripts yet."
        cols={[
          { h: 'Name', f: (s) => <button class="link" onClick={() => setOpen(open === s.id ? null : s.id)}>{s.name}</button> },
          { h: 'Type', f: (s) => s.type },
          { h: 'Version', f: (s) => s.version },
          { h: 'Variables', f: (s) => s.variables.map((v) => v.name).join(', ') },
          { h: 'Updated', f: (s) => when(s.updated_at) },
          { h: '', f: (s) => <Danger label="Delete" question={`Delete script ${s.name}?`} action={() => api('DELETE', `/scripts/${s.id}`).then(list.reload, (e: Error) => setErr(e.message))} /> },
        ]}
      />
      {shown && <ScriptEditor s={shown} saved={list.reload} />}
    </section>
  );
}

function BaselineEditor(props: { b: Baseline; scripts: Script[]; saved: () => void }) {
  const { b, scripts } = props;
  const [ids, setIds] = useState<number[]>(b.script_ids);
  const [vars, setVars] = useState(mapToText(b.variables));
  const [family, setFamily] = useState(b.os_filter.family ?? '');
  const [version, setVersion] = useState(b.os_filter.version ?? '');
  const [isDefault, setDefault] = useState(b.is_default);
  const [add, setAdd] = useState('');
  const { run, err, msg, setMsg } = useAction();
  useEffect(() => {
    setIds(b.script_ids);
    setVars(mapToText(b.variables));
    setFamily(b.os_filter.family ?? '');
    setVersion(b.os_filter.version ?? '');
    setDefault(b.is_default);
  }, [b.id, b.updated_at]);
  const name = (id: number) => scripts.find((s) => s.id === id)?.name ?? `#${id}`;
  const move = (i: number, d: number) => {
    const n = [...ids];
    [n[i], n[i + d]] = [n[i + d], n[i]];
    setIds(n);
  };
  return (
    <div class="panel" data-testid="baseline-editor">
      <h2>{b.name}</h2>
      <h3>Scripts, in run order</h3>
      <ol data-testid="baseline-scripts">
        {ids.map((id, i) => (
          <li>
            {name(id)}{' '}
            <button disabled={i === 0} onClick={() => move(i, -1)} aria-label={`move ${name(id)} up`}>
              ↑
            </button>
            <button disabled={i === ids.length - 1} onClick={() => move(i, 1)} aria-label={`move ${name(id)} down`}>
              ↓
            </button>
            <button onClick={() => setIds(ids.filter((x) => x !== id))}>Remove</button>
          </li>
        ))}
      </ol>
      <div class="actions">
        <select name="add-script" value={add} onChange={(e) => setAdd(e.currentTarget.value)}>
          <option value="">Add a script…</option>
          {scripts
            .filter((s) => !ids.includes(s.id))
            .map((s) => (
              <option value={String(s.id)}>{s.name}</option>
            ))}
        </select>
        <button disabled={!add} onClick={() => (setIds([...ids, Number(add)]), setAdd(''))}>
          Add
        </button>
      </div>
      <p>
        <label>
          Variables <span class="muted">(name=value per line, over each script's defaults)</span>
          <br />
          <textarea name="variables" class="code" rows={3} value={vars} onInput={(e) => setVars(e.currentTarget.value)} />
        </label>
      </p>
      <p>
      <label>
        OS family <input name="family" placeholder="any (e.g. debian)" value={family} onInput={(e) => setFamily(e.currentTarget.value)} />
      </label>{' '}
      <label>
        OS version <input name="version" placeholder="any (e.g. 12*)" value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
      </label>{' '}
      <label>
        <input type="checkbox" name="is_default" checked={isDefault} onChange={(e) => setDefault(e.currentTarget.checked)} /> Site default
      </label>
      </p>
      <div class="actions">
        <button
          class="primary"
          onClick={() =>
            run(async () => {
              await api('PUT', `/baselines/${b.id}`, {
                script_ids: ids,
                variables: textToMap(vars),
                os_filter: { family: family || null, version: version || null },
                is_default: isDefault,
              });
              setMsg('Saved.');
              props.saved();
            })
          }
        >
          Save baseline
        </button>
      </div>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err} />
    </div>
  );
}

function MachineView() {
  const [mac, setMac] = useState('');
  const [a, setA] = useState<Assignment | null>(null);
  const [reports, setReports] = useState<Report[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  return (
    <details class="panel" data-testid="machine-view">
      <summary>What a machine gets</summary>
      <div class="actions">
        <input aria-label="machine mac" placeholder="MAC, e.g. 52:54:00:12:34:56" value={mac} onInput={(e) => setMac(e.currentTarget.value)} />
        <button
          onClick={async () => {
            setErr(null);
            try {
              const x = await api<Assignment>('GET', `/baselines/assigned?mac=${encodeURIComponent(mac)}`);
              setA(x);
              setReports(x.host_id ? await api<Report[]>('GET', `/hosts/${x.host_id}/script-reports`) : null);
            } catch (e) {
              setErr((e as Error).message);
            }
          }}
        >
          Show
        </button>
      </div>
      <Err msg={err} />
      {a && (
        <div data-testid="assignment">
          <p>
            Baselines: {a.baselines.map((b) => `${b.name} (${b.via})`).join(', ') || 'none'}
            {a.os && ` · OS ${a.os}`}
          </p>
          {a.skipped.map((s) => (
            <p class="muted">{s}</p>
          ))}
          <ol>
            {a.scripts.map((s) => (
              <li>
                <strong>{s.name}</strong> <span class="muted">({s.type}, v{s.version})</span>
                {s.error ? <p class="error">{s.error}</p> : <pre class="log">{s.content}</pre>}
              </li>
            ))}
          </ol>
        </div>
      )}
      {reports && (
        <Table
          testid="script-reports"
          rows={reports}
          empty="No reports from this machine yet."
          cols={[
            { h: 'When', f: (r) => when(r.at) },
            { h: 'Script', f: (r) => r.script },
            { h: 'Exit', f: (r) => <span class={r.exit_code === 0 ? 'ok' : 'error'}>{r.exit_code}</span> },
            { h: 'Took', f: (r) => `${r.duration_ms} ms` },
            { h: 'Output (tail)', f: (r) => <code>{r.output.split('\n').filter(Boolean).slice(-1)[0] ?? ''}</code> },
          ]}
        />
      )}
    </details>
  );
}

export function Baselines() {
  const list = useGet<{ baselines: Baseline[] }>('/baselines', ['baseline.']);
  const scripts = useGet<{ scripts: Script[] }>('/scripts?size=1000', ['script.']);
  const [open, setOpen] = useState<number | null>(null);
  const [creating, setCreating] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const shown = list.data?.baselines.find((b) => b.id === open);
  const names = (ids: number[]) => ids.map((id) => scripts.data?.scripts.find((s) => s.id === id)?.name ?? `#${id}`).join(' → ');
  return (
    <section>
      <Header title="Baselines">
        <button class="primary" onClick={() => setCreating(!creating)}>
          New baseline
        </button>
      </Header>
      <MachineView />
      {creating && (
        <Form
          testid="baseline-form"
          fields={[
            { name: 'name', label: 'Name', required: true },
            { name: 'description', label: 'Description' },
          ]}
          submitLabel="Create"
          cancel={() => setCreating(false)}
          submit={async (v) => {
            const b = await api<Baseline>('POST', '/baselines', { name: String(v.name ?? ''), description: String(v.description ?? '') });
            setCreating(false);
            list.reload();
            setOpen(b.id);
          }}
        />
      )}
      <Err msg={err ?? list.error} />
      <Table
        testid="baselines"
        rows={list.data?.baselines}
        empty="No baselines yet."
        cols={[
          { h: 'Name', f: (b) => <button class="link" onClick={() => setOpen(open === b.id ? null : b.id)}>{b.name}</button> },
          { h: 'Scripts', f: (b) => names(b.script_ids) },
          { h: 'OS', f: (b) => [b.os_filter.family, b.os_filter.version].filter(Boolean).join(' ') || 'any' },
          { h: 'Default', f: (b) => (b.is_default ? 'yes' : '') },
          { h: 'Updated', f: (b) => when(b.updated_at) },
          { h: '', f: (b) => <Danger label="Delete" question={`Delete baseline ${b.name}?`} action={() => api('DELETE', `/baselines/${b.id}`).then(list.reload, (e: Error) => setErr(e.message))} /> },
        ]}
      />
      {shown && <BaselineEditor b={shown} scripts={scripts.data?.scripts ?? []} saved={list.reload} />}
    </section>
  );
}
