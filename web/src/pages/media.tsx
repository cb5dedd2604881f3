// Boot media (issue 9): OS images (upload with a progress bar, the state going live from
// `uploading` to `ready`/`failed` over `os_image.*` events, the detected distribution,
// kernel and initrds per image, delete) and the netboot catalog (distributions with
// their versions and architectures, which files are cached, "Create profile" per entry,
// the overlay of a distribution as a form; live on `netboot.*`).

import { useState } from 'preact/hooks';
import { api, ApiError, BASE, toLogin } from '../api';
import { bytes, Danger, Err, Form, Header, Table, useGet } from '../ui';

/** `crate::media::images` view (the fields the page shows). */
interface OsImage {
  id: number;
  name: string;
  file_name: string;
  size: number;
  sha256?: string | null;
  state: string;
  reason?: string | null;
  detection?: {
    family: string;
    product?: string | null;
    version?: string | null;
    arch?: string | null;
    boot_method: string;
    kernel?: string | null;
    initrds: string[];
    cmdline?: string | null;
    generic: boolean;
    notes: string[];
  } | null;
}

/** Uploads `file` as multipart with XHR (fetch reports no upload progress). */
function upload(file: File, name: string, progress: (pct: number) => void): Promise<OsImage> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `${BASE}/os-images/upload`);
    xhr.withCredentials = true;
    xhr.upload.onprogress = (e) => e.lengthComputable && progress(Math.round((100 * e.loaded) / e.total));
    xhr.onload = () => {
      let env: { success?: boolean; data?: OsImage; error?: string } = {};
      try {
        env = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status === 401) toLogin();
      if (xhr.status >= 200 && xhr.status < 300 && env.data) resolve(env.data);
      else reject(new ApiError(xhr.status, env.error ?? `the upload answered ${xhr.status}`));
    };
    xhr.onerror = () => reject(new ApiError(0, 'the upload was cut off'));
    const form = new FormData();
    if (name) form.append('name', name);
    form.append('file', file);
    xhr.send(form);
  });
}

export function OsImages() {
  const list = useGet<{ images: OsImage[] }>('/os-images', ['os_image.']);
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState('');
  const [pct, setPct] = useState<number | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [open, setOpen] = useState<number | null>(null);
  const start = async (e: Event) => {
    e.preventDefault();
    if (!file) return;
    setErr(null);
    setPct(0);
    try {
      await upload(file, name, setPct);
      setFile(null);
      setName('');
      list.reload();
    } catch (x) {
      setErr((x as Error).message);
    } finally {
      setPct(null);
    }
  };
  const shown = list.data?.images.find((i) => i.id === open);
  return (
    <section>
      <Header title="OS images" />
      <form class="inline-form" aria-label="upload image" onSubmit={start}>
        <label>
          ISO file
          <input type="file" name="file" accept=".iso,application/x-iso9660-image" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <label>
          Name
          <input name="name" placeholder="default: the file name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={!file || pct !== null}>
          Upload
        </button>
        {pct !== null && (
          <progress max={100} value={pct} aria-label="upload progress" data-testid="upload-progress">
            {pct}%
          </progress>
        )}
      </form>
      <Err msg={err ?? list.error} />
      <Table
        testid="os-images"
        rows={list.data?.images}
        empty="No images yet: upload an ISO."
        cols={[
          { h: 'Name', f: (i) => <button class="link" onClick={() => setOpen(open === i.id ? null : i.id)}>{i.name}</button> },
          { h: 'File', f: (i) => `${i.file_name} (${bytes(i.size)})` },
          { h: 'State', f: (i) => <span class={`state ${i.state}`} data-testid="image-state">{i.state}{i.reason ? `: ${i.reason}` : ''}</span> },
          { h: 'Detected', f: (i) => (i.detection ? [i.detection.family, i.detection.version, i.detection.arch].filter(Boolean).join(' ') : '-') },
          { h: '', f: (i) => <Danger label="Delete" question={`Delete image ${i.name} and its file?`} action={() => api('DELETE', `/os-images/${i.id}`).then(list.reload, (e: Error) => setErr(e.message))} /> },
        ]}
      />
      {shown?.detection && (
        <div class="panel" data-testid="image-detail">
          <h2>{shown.name}</h2>
          <dl class="facts">
            <dt>Product</dt>
            <dd>{shown.detection.product ?? '-'}</dd>
            <dt>Boot method</dt>
            <dd>{shown.detection.boot_method}</dd>
            <dt>Kernel</dt>
            <dd>
              <code>{shown.detection.kernel ?? '-'}</code>
            </dd>
            <dt>Initrds</dt>
            <dd>
              <code>{shown.detection.initrds.join(', ') || '-'}</code>
            </dd>
            <dt>Kernel arguments</dt>
            <dd>
              <code>{shown.detection.cmdline ?? '-'}</code>
            </dd>
            <dt>SHA-256</dt>
            <dd>
              <code>{shown.sha256 ?? '-'}</code>
            </dd>
          </dl>
          {shown.detection.generic && <p class="muted">Layout not recognised: these are candidates from a generic scan.</p>}
          {shown.detection.notes.map((n) => (
            <p class="muted">{n}</p>
          ))}
        </div>
      )}
    </section>
  );
}

interface NbFile {
  name: string;
  path: string;
  upstream: string;
  cached: boolean;
}
interface Resolved {
  distro: string;
  version: string;
  arch: string;
  kernel: NbFile;
  initrds: NbFile[];
  cmdline: string;
}
interface Distro {
  id: string;
  name: string;
  group: string;
  mirror: string;
  overlay: boolean;
  versions: { version: string; codename?: string | null; arches: string[] }[];
}

function DistroPanel(props: { id: string; done: (msg: string) => void }) {
  const d = useGet<Distro & { entries: Resolved[]; overlay_config?: { mirror?: string | null; extra_args: string; extra_initrds: string[] } | null }>(
    `/netboot/catalog/${props.id}`,
    ['netboot.'],
  );
  const [err, setErr] = useState<string | null>(null);
  if (!d.data) return <Err msg={d.error} />;
  const o = d.data.overlay_config;
  return (
    <div class="panel" data-testid={`distro-${props.id}`}>
      <Err msg={err} />
      <Table
        rows={d.data.entries}
        cols={[
          { h: 'Version', f: (e) => e.version },
          { h: 'Arch', f: (e) => e.arch },
          { h: 'Files', f: (e) => [e.kernel, ...e.initrds].map((f) => `${f.name}${f.cached ? ' (cached)' : ''}`).join(', ') },
          {
            h: '',
            f: (e) => (
              <button
                onClick={() =>
                  api<{ name: string }>('POST', '/profiles/from-netboot', { distro: e.distro, version: e.version, arch: e.arch }).then(
                    (p) => props.done(`Profile ${p.name} created.`),
                    (x: Error) => setErr(x.message),
                  )
                }
              >
                Create profile
              </button>
            ),
          },
        ]}
      />
      <h3>Overlay</h3>
      <Form
        testid={`overlay-${props.id}`}
        fields={[
          { name: 'mirror', label: 'Mirror', placeholder: d.data.mirror, hint: 'http(s) URL replacing the catalog mirror; empty: the catalog one' },
          { name: 'extra_args', label: 'Extra kernel arguments' },
          { name: 'extra_initrds', label: 'Extra initrds', hint: 'URLs, comma or space separated' },
        ]}
        initial={{ mirror: o?.mirror ?? '', extra_args: o?.extra_args ?? '', extra_initrds: (o?.extra_initrds ?? []).join(' ') }}
        submitLabel="Save overlay"
        submit={async (v) => {
          await api('PUT', `/netboot/overlays/${props.id}`, {
            mirror: v.mirror ? String(v.mirror) : null,
            extra_args: String(v.extra_args ?? ''),
            extra_initrds: String(v.extra_initrds ?? '')
              .split(/[\s,]+/)
              .filter((s) => s),
          });
          props.done(`Overlay of ${props.id} saved.`);
          d.reload();
        }}
      />
    </div>
  );
}

export function NetbootCatalog() {
  const [q, setQ] = useState('');
  const cat = useGet<{ distros: Distro[] }>(`/netboot/catalog${q ? `?q=${encodeURIComponent(q)}` : ''}`, ['netboot.']);
  const stats = useGet<{ entries: number; bytes: number; max_bytes: number; hits: number; misses: number; evictions: number }>('/netboot/cache-stats', ['netboot.']);
  const [open, setOpen] = useState<string | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  return (
    <section>
      <Header title="Netboot catalog">
        <input type="search" placeholder="Search distributions" aria-label="search catalog" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
      </Header>
      {stats.data && (
        <p class="muted" data-testid="cache-stats">
          Cache: {stats.data.entries} files, {bytes(stats.data.bytes)} of {bytes(stats.data.max_bytes)}; {stats.data.hits} hits, {stats.data.misses} misses, {stats.data.evictions} evictions.
        </p>
      )}
      {msg && <p class="ok">{msg}</p>}
      <Err msg={cat.error} />
      <Table
        testid="netboot-catalog"
        rows={cat.data?.distros}
        cols={[
          { h: 'Distribution', f: (d) => <button class="link" onClick={() => setOpen(open === d.id ? null : d.id)}>{d.name}</button> },
          { h: 'Versions', f: (d) => d.versions.map((v) => `${v.version} (${v.arches.join(', ')})`).join('; ') },
          { h: 'Mirror', f: (d) => <code>{d.mirror}</code> },
          { h: 'Overlay', f: (d) => (d.overlay ? 'yes' : '-') },
        ]}
      />
      {open && <DistroPanel id={open} done={setMsg} />}
    </section>
  );
}
