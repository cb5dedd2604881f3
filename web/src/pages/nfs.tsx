// NFS exports: the kernel NFS server's state as Bootlane sees it (exportfs, nfsd, our
// exports file, the kernel's export table, problems), the exported boot-root
// directories (path checked with validate-path before it is added, clients, options,
// comment), enable/disable, and the result of applying them with exportfs.

import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { Err, Header, Table, useGet } from '../ui';

interface NfsExport {
  path: string;
  clients: string[];
  options: string[];
  comment: string;
}
interface NfsView {
  enabled: boolean;
  exports: NfsExport[];
  status: {
    exports_file: string;
    exportfs_available: boolean;
    kernel_nfsd: boolean;
    nfsd_running: boolean;
    file_in_sync: boolean;
    kernel_exports: { path: string; client: string; options: string[] }[];
    problems: string[];
  };
}
interface Applied {
  applied: boolean;
  reason?: string | null;
  warnings: string[];
}
interface PathCheck {
  ok: boolean;
  absolute?: string | null;
  image_tree?: string | null;
  problems: string[];
  warnings: string[];
}

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function Nfs() {
  const view = useGet<NfsView>('/services/nfs', ['nfs.']);
  const [enabled, setEnabled] = useState(false);
  const [exports, setExports] = useState<NfsExport[]>([]);
  const [dirty, setDirty] = useState(false);
  const [draft, setDraft] = useState({ path: '', clients: '', options: 'ro,no_subtree_check', comment: '' });
  const [check, setCheck] = useState<PathCheck | null>(null);
  const [result, setResult] = useState<Applied | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    if (view.data && !dirty) {
      setEnabled(view.data.enabled);
      setExports(view.data.exports);
    }
  }, [view.data, dirty]);
  const st = view.data?.status;
  const validate = async () => {
    setErr(null);
    try {
      setCheck(await api<PathCheck>('POST', '/services/nfs/validate-path', { path: draft.path }));
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  const add = (e: Event) => {
    e.preventDefault();
    setExports([...exports, { path: draft.path, clients: list(draft.clients), options: list(draft.options), comment: draft.comment }]);
    setDraft({ ...draft, path: '', clients: '', comment: '' });
    setCheck(null);
    setDirty(true);
  };
  const save = async () => {
    setErr(null);
    setResult(null);
    try {
      setResult(await api<Applied>('PUT', '/services/nfs', { enabled, exports }));
      setDirty(false);
      view.reload();
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  return (
    <section>
      <Header title="NFS exports" />
      <p class="muted">Export extracted images (for NFS-root boots such as casper's netboot=nfs) through the kernel NFS server. Only directories under the boot root can be exported.</p>
      {st && (
        <dl class="facts" data-testid="nfs-status">
          <dt>exportfs</dt>
          <dd>{st.exportfs_available ? 'installed' : 'missing (install nfs-kernel-server)'}</dd>
          <dt>Kernel NFS server</dt>
          <dd>{st.kernel_nfsd ? (st.nfsd_running ? 'running' : 'available, not running') : 'not in this kernel'}</dd>
          <dt>Exports file</dt>
          <dd>
            <code>{st.exports_file}</code> {st.file_in_sync ? '(in sync)' : '(not in sync with the settings)'}
          </dd>
          <dt>Kernel export table</dt>
          <dd>{st.kernel_exports.length ? st.kernel_exports.map((k) => `${k.path} ${k.client}`).join('; ') : 'empty'}</dd>
        </dl>
      )}
      {st?.problems.map((p) => (
        <p class="muted">{p}</p>
      ))}
      <label class="check">
        <input type="checkbox" name="enabled" checked={enabled} onChange={(e) => (setEnabled(e.currentTarget.checked), setDirty(true))} /> Exports enabled
      </label>
      <Table
        testid="nfs-exports"
        rows={exports}
        empty="No exports."
        cols={[
          { h: 'Path', f: (x) => <code>{x.path || '(boot root)'}</code> },
          { h: 'Clients', f: (x) => x.clients.join(', ') },
          { h: 'Options', f: (x) => x.options.join(',') },
          { h: 'Comment', f: (x) => x.comment },
          { h: '', f: (x) => <button onClick={() => (setExports(exports.filter((y) => y !== x)), setDirty(true))}>Remove</button> },
        ]}
      />
      <form class="inline-form" aria-label="add export" onSubmit={add}>
        <label>
          Path
          <input name="path" required placeholder="images/3" value={draft.path} onInput={(e) => (setDraft({ ...draft, path: e.currentTarget.value }), setCheck(null))} />
        </label>
        <button type="button" onClick={validate} disabled={!draft.path}>
          Check path
        </button>
        <label>
          Clients
          <input name="clients" required placeholder="10.0.0.0/24, 10.1.0.5" value={draft.clients} onInput={(e) => setDraft({ ...draft, clients: e.currentTarget.value })} />
        </label>
        <label>
          Options
          <input name="options" value={draft.options} onInput={(e) => setDraft({ ...draft, options: e.currentTarget.value })} />
        </label>
        <label>
          Comment
          <input name="comment" value={draft.comment} onInput={(e) => setDraft({ ...draft, comment: e.currentTarget.value })} />
        </label>
        <button type="submit">Add</button>
      </form>
      {check && (
        <p class={check.ok ? 'ok' : 'error'} data-testid="path-check">
          {check.ok ? `${check.absolute}${check.image_tree ? ` (looks like a ${check.image_tree} tree)` : ''}` : check.problems.join('; ')}
          {check.warnings.map((w) => ` ${w}`)}
        </p>
      )}
      <button class="primary" onClick={save} disabled={!dirty}>
        Save and apply
      </button>
      {result && (
        <p class={result.applied ? 'ok' : 'muted'} data-testid="nfs-result">
          {result.applied ? 'Saved and applied with exportfs.' : `Saved, not applied: ${result.reason ?? ''}`}
          {result.warnings.map((w) => ` ${w}`)}
        </p>
      )}
      <Err msg={err ?? view.error} />
    </section>
  );
}
