// The store: the community catalog of every configured source (search, type filter,
// how each source answered), an item's details with its content, and Import; a name
// clash (409) offers installing under another name or replacing the existing one.
// A bundle file can be imported from disk (the same checks).

import { useState } from 'preact/hooks';
import { api, ApiError, qs } from '../api';
import { Err, Header, Json, Table, useGet } from '../ui';

const TYPES = ['answer-template', 'profile', 'netboot', 'script', 'baseline'];

interface Item {
  type: string;
  id: string;
  name: string;
  version: string;
  description: string;
  author: string;
  tags: string[];
  source: string;
  sha256: string;
}
interface Source {
  name: string;
  kind: string;
  address?: string | null;
  ok: boolean;
  items: number;
  error?: string | null;
}
interface Installed {
  kind: string;
  id: number | string;
  name: string;
  action: string;
}
interface ImportResult {
  type: string;
  id: string;
  source: string;
  installed: Installed[];
}

function installedText(r: ImportResult): string {
  return r.installed.map((i) => `${i.action} ${i.kind.replace('_', ' ')} ${i.name}`).join(', ');
}

function Detail(props: { item: Item; done: (msg: string) => void }) {
  const { item } = props;
  const detail = useGet<{ content: unknown }>(`/store/items/${item.type}/${encodeURIComponent(item.id)}${qs({ source: item.source })}`);
  const [clash, setClash] = useState<string | null>(null);
  const [rename, setRename] = useState('');
  const [err, setErr] = useState<string | null>(null);
  const doImport = async (extra: { rename?: string; overwrite?: boolean }) => {
    setErr(null);
    try {
      const r = await api<ImportResult>('POST', '/store/import', { type: item.type, id: item.id, source: item.source, ...extra });
      setClash(null);
      props.done(`Imported ${item.name}: ${installedText(r)}`);
    } catch (e) {
      const msg = (e as Error).message;
      if (e instanceof ApiError && e.status === 409) setClash(msg);
      else setErr(msg);
    }
  };
  return (
    <div class="panel" data-testid="store-item">
      <h2>
        {item.name} <span class="muted">{item.version}</span>
      </h2>
      <p>{item.description}</p>
      <p class="muted">
        {item.type} · {item.id} · by {item.author || 'unknown'} · from {item.source} · sha256 <code>{item.sha256.slice(0, 16)}…</code>
      </p>
      <div class="actions">
        <button class="primary" onClick={() => doImport({})}>
          Import
        </button>
      </div>
      {clash && (
        <div class="error" data-testid="store-clash">
          <p>{clash}</p>
          <div class="actions">
            <input aria-label="new name" placeholder="install under this name" value={rename} onInput={(e) => setRename(e.currentTarget.value)} />
            <button disabled={!rename} onClick={() => doImport({ rename })}>
              Import as new name
            </button>
            <button onClick={() => confirm(`Replace the existing ${item.type} with ${item.name}?`) && doImport({ overwrite: true })}>Overwrite</button>
          </div>
        </div>
      )}
      <Err msg={err ?? detail.error} />
      <details>
        <summary>Content</summary>
        {detail.data ? <Json v={detail.data.content} /> : <p class="muted">Loading…</p>}
      </details>
    </div>
  );
}

export function Store() {
  const [q, setQ] = useState('');
  const [type, setType] = useState('');
  const list = useGet<{ items: Item[]; total: number; sources: Source[] }>(`/store/catalog${qs({ q: q || undefined, type: type || undefined, size: 500 })}`);
  const [open, setOpen] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const key = (i: Item) => `${i.source}/${i.type}/${i.id}`;
  const shown = list.data?.items.find((i) => key(i) === open);
  return (
    <section>
      <Header title="Store">
        <label class="button">
          Import a bundle file…
          <input
            type="file"
            accept=".json,application/json"
            name="bundle"
            style="display:none"
            onChange={async (e) => {
              const f = e.currentTarget.files?.[0];
              if (!f) return;
              setErr(null);
              setMsg(null);
              const fd = new FormData();
              fd.append('file', f);
              try {
                const r = await fetch('/api/v1/store/import-local', { method: 'POST', body: fd, credentials: 'same-origin' });
                const v = await r.json();
                if (!v.success) throw new Error(v.error);
                setMsg(`Imported ${f.name}: ${installedText(v.data)}`);
              } catch (x) {
                setErr((x as Error).message);
              }
              e.currentTarget.value = '';
            }}
          />
        </label>
      </Header>
      <div class="actions">
        <input aria-label="search the catalog" placeholder="Search name, description, tags…" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        <select aria-label="item type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          <option value="">All types</option>
          {TYPES.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
      </div>
      <ul data-testid="store-sources" class="muted">
        {list.data?.sources.map((s) => (
          <li class={s.ok ? '' : 'error'}>
            {s.name} ({s.kind}
            {s.address ? ` ${s.address}` : ''}): {s.ok ? `${s.items} items` : `failing: ${s.error}`}
          </li>
        ))}
      </ul>
      {msg && (
        <p class="ok" data-testid="store-result">
          {msg}
        </p>
      )}
      <Err msg={err ?? list.error} />
      <Table
        testid="store-items"
        rows={list.data?.items}
        empty="No items match."
        cols={[
          { h: 'Name', f: (i) => <button class="link" onClick={() => setOpen(open === key(i) ? null : key(i))}>{i.name}</button> },
          { h: 'Type', f: (i) => i.type },
          { h: 'Version', f: (i) => i.version },
          { h: 'Tags', f: (i) => i.tags.join(', ') },
          { h: 'Source', f: (i) => i.source },
        ]}
      />
      {shown && <Detail item={shown} done={(m) => (setMsg(m), setOpen(null))} />}
    </section>
  );
}
