// Boot media: OS images (upload with a progress bar, the state going live from
// `uploading` to `ready`/`failed` over `os_image.*` events, the detected distribution,
// kernel and initrds per image, mount/unmount, extract with its progress, "Create
// profile", a browser of the files inside the image, delete) and the netboot catalog (distributions with
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
  mounted?: boolean;
  extracted?: { path: string; files: number; bytes: number; at: string } | null;
  extract_error?: string | null;
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
          <ImageActions img={shown} />
          <ImageBrowser id={shown.id} />
        </div>
      )}
    </section>
  );
}

/** Mount/unmount, extract (progress from `os_image.extract.progress`), create profile. */
function ImageActions(props: { img: OsImage }) {
  const { img } = props;
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [extra, setExtra] = useState('');
  const progress = useGet<{ events: { data: { percent?: number } }[] }>(
    `/events?kind=os_image.extract.progress&resource=os_image&resource_id=${img.id}&size=1`,
    ['os_image.extract.'],
  );
  const run = (p: Promise<unknown>, ok: string) => {
    setErr(null);
    setMsg(null);
    p.then(
      () => setMsg(ok),
      (e: Error) => setErr(e.message),
    );
  };
  const pct = progress.data?.events[0]?.data.percent;
  return (
    <div data-testid="image-actions">
      <dl class="facts">
        <dt>Served at</dt>
        <dd>
          <code>/boot/images/{img.id}/</code>{' '}
          {img.mounted ? '(mounted: read from inside the ISO)' : img.extracted ? '(extracted)' : '(not served: mount or extract it)'}
        </dd>
        <dt>Extracted</dt>
        <dd data-testid="image-extracted">
          {img.state === 'extracting'
            ? `extracting${pct !== undefined ? ` (${pct} %)` : ''}`
            : img.extracted
              ? `${img.extracted.files} files, ${bytes(img.extracted.bytes)} in ${img.extracted.path}/`
              : 'no'}
          {img.extract_error && <span class="error"> {img.extract_error}</span>}
        </dd>
      </dl>
      <div class="actions">
        {img.state === 'ready' && (
          <button onClick={() => run(api('POST', `/os-images/${img.id}/mount`), `Image ${img.name} mounted.`)}>Mount</button>
        )}
        {img.state === 'mounted' && (
          <button onClick={() => run(api('POST', `/os-images/${img.id}/unmount`), `Image ${img.name} unmounted.`)}>Unmount</button>
        )}
        {(img.state === 'ready' || img.state === 'mounted') && (
          <button onClick={() => run(api('POST', `/os-images/${img.id}/extract`), `Extracting ${img.name}…`)}>
            {img.extracted ? 'Extract again' : 'Extract'}
          </button>
        )}
      </div>
      <form
        class="inline-form"
        aria-label="profile from image"
        onSubmit={(e) => {
          e.preventDefault();
          setErr(null);
          setMsg(null);
          api<{ name: string }>('POST', '/profiles/from-image', { image_id: img.id, extra_cmdline: extra || undefined }).then(
            (p) => setMsg(`Profile ${p.name} created.`),
            (x: Error) => setErr(x.message),
          );
        }}
      >
        <label>
          Extra kernel arguments
          <input name="extra_cmdline" placeholder="e.g. console=ttyS0" value={extra} onInput={(e) => setExtra(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">
          Create profile
        </button>
      </form>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err} />
    </div>
  );
}

interface BrowseEntry {
  name: string;
  path: string;
  type: string;
  size: number;
}

/** The files inside an image (both its ISO 9660 and UDF trees), one directory at a time. */
function ImageBrowser(props: { id: number }) {
  const [path, setPath] = useState('');
  const dir = useGet<{ path: string; parent?: string | null; entries: BrowseEntry[] }>(
    `/fs/browse?image=${props.id}&path=${encodeURIComponent(path)}`,
  );
  return (
    <div data-testid="image-browser">
      <h3>
        Files: <code>/{path}</code>
      </h3>
      <Err msg={dir.error} />
      {dir.data?.parent != null && (
        <button class="link" onClick={() => setPath(dir.data?.parent ?? '')}>
          ⬑ up
        </button>
      )}
      <Table
        rows={dir.data?.entries}
        empty="Empty directory."
        cols={[
          { h: 'Name', f: (e) => (e.type === 'dir' ? <button class="link" onClick={() => setPath(e.path)}>{e.name}/</button> : e.name) },
          { h: 'Size', f: (e) => (e.type === 'dir' ? '' : bytes(e.size)) },
        ]}
      />
    </div>
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
