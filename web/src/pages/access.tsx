// Access control: the mode enforced on the wire (`off`, `blacklist`, `whitelist`;
// `GET/PUT /access/mode`), the whitelist and the blacklist (MAC or OUI prefix with a
// note; add, delete), and the unauthorized devices (machines refused in whitelist mode;
// select some and move them to a list, or delete their records). Live on `access.*`
// events, so a refused machine appears without a reload.

import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { Danger, Err, Form, Header, Pager, Table, useGet, when } from '../ui';

/** `crate::access::model::AccessEntry`. */
interface Entry {
  id: number;
  list: string;
  mac: string;
  prefix: boolean;
  note: string;
  created: string;
}

/** `crate::access::model::UnauthorizedDevice`. */
interface Device {
  id: number;
  mac: string;
  first_seen: string;
  last_seen: string;
  count: number;
  last_ip?: string | null;
  arch?: number | null;
  vendor_class?: string | null;
  last_protocol: string;
}

interface ModeView {
  mode: string;
  file_default: string;
  stored: boolean;
}

const MODES: [string, string][] = [
  ['off', 'Off: serve every machine (the lists are kept, not enforced)'],
  ['blacklist', 'Blacklist: refuse machines on the blacklist'],
  ['whitelist', 'Whitelist: serve only machines on the whitelist; record the others'],
];

function ModeCard() {
  const mode = useGet<ModeView>('/access/mode', ['access.']);
  const [err, setErr] = useState<string | null>(null);
  const set = (m: string) => {
    if (m === 'whitelist' && !confirm('Whitelist mode: every machine not on the whitelist gets no DHCP, TFTP or HTTP boot answer from the next packet on. Continue?')) return;
    api<ModeView>('PUT', '/access/mode', { mode: m }).then(
      () => (setErr(null), mode.reload()),
      (e: Error) => setErr(e.message),
    );
  };
  return (
    <div class="panel" data-testid="access-mode">
      <Err msg={err ?? mode.error} />
      <fieldset disabled={!mode.data}>
        <legend>Mode</legend>
        {MODES.map(([m, label]) => (
          <label class="radio">
            <input type="radio" name="mode" value={m} checked={mode.data?.mode === m} onChange={() => set(m)} /> {label}
          </label>
        ))}
      </fieldset>
      {mode.data && (
        <p class="muted">
          {mode.data.stored ? 'Set through the API.' : `From the configuration file ([access] mode = "${mode.data.file_default}").`} Applies to the next packet.
        </p>
      )}
    </div>
  );
}

function ListSection(props: { kind: 'whitelist' | 'blacklist'; title: string }) {
  const [q, setQ] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const list = useGet<{ entries: Entry[]; total: number }>(`/access/${props.kind}${qs({ q, page, size })}`, ['access.']);
  const [adding, setAdding] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  return (
    <div data-testid={`access-${props.kind}`}>
      <div class="page-head">
        <h2>{props.title}</h2>
        <div class="actions">
          <input type="search" placeholder="Search MAC or note" aria-label={`search ${props.kind}`} value={q} onInput={(e) => (setQ(e.currentTarget.value), setPage(1))} />
          <button class="primary" onClick={() => setAdding(true)}>
            Add
          </button>
        </div>
      </div>
      {adding && (
        <div class="panel">
          <Form
            testid={`${props.kind}-form`}
            fields={[
              { name: 'mac', label: 'MAC or prefix', placeholder: '52:54:00:12:34:56 or 52:54:00', required: true, hint: 'a full MAC, or the first 3-5 octets (an OUI) to match a vendor' },
              { name: 'note', label: 'Note' },
            ]}
            submitLabel="Add"
            cancel={() => setAdding(false)}
            submit={async (v) => {
              await api('POST', `/access/${props.kind}`, { mac: String(v.mac ?? ''), note: String(v.note ?? '') });
              setAdding(false);
              list.reload();
            }}
          />
        </div>
      )}
      <Err msg={err ?? list.error} />
      <Table
        rows={list.data?.entries}
        empty={`The ${props.kind} is empty.`}
        cols={[
          { h: 'MAC', f: (e) => <code>{e.mac}</code> },
          { h: 'Match', f: (e) => (e.prefix ? 'prefix (OUI)' : 'exact') },
          { h: 'Note', f: (e) => e.note || '-' },
          { h: 'Added', f: (e) => when(e.created) },
          {
            h: '',
            f: (e) => (
              <Danger
                label="Delete"
                question={`Remove ${e.mac} from the ${props.kind}?`}
                action={() => api('DELETE', `/access/${props.kind}/${e.id}`).then(list.reload, (x: Error) => setErr(x.message))}
              />
            ),
          },
        ]}
      />
      {list.data && <Pager page={page} size={size} total={list.data.total} go={setPage} />}
    </div>
  );
}

function Unauthorized() {
  const [page, setPage] = useState(1);
  const size = 50;
  const devs = useGet<{ devices: Device[]; total: number }>(`/access/unauthorized${qs({ page, size })}`, ['access.']);
  const [sel, setSel] = useState<Set<number>>(new Set());
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const toggle = (id: number) => {
    const s = new Set(sel);
    if (s.has(id)) s.delete(id);
    else s.add(id);
    setSel(s);
  };
  const move = async (to: 'whitelist' | 'blacklist') => {
    try {
      const r = await api<{ moved: number; failed: number; results: { id: number; error?: string | null }[] }>('POST', `/access/unauthorized/add-to-${to}`, { ids: [...sel] });
      const fails = r.results.filter((x) => x.error).map((x) => `#${x.id}: ${x.error}`);
      setMsg(`${r.moved} moved to the ${to}${fails.length ? `; ${fails.join('; ')}` : ''}`);
      setErr(null);
      setSel(new Set());
      devs.reload();
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  return (
    <div data-testid="access-unauthorized">
      <div class="page-head">
        <h2>Unauthorized devices</h2>
        <div class="actions">
          <button disabled={!sel.size} onClick={() => move('whitelist')}>
            Add to whitelist
          </button>
          <button disabled={!sel.size} onClick={() => move('blacklist')}>
            Add to blacklist
          </button>
        </div>
      </div>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err ?? devs.error} />
      <Table
        rows={devs.data?.devices}
        empty="No machine has been refused."
        cols={[
          { h: '', f: (d) => <input type="checkbox" aria-label={`select ${d.mac}`} checked={sel.has(d.id)} onChange={() => toggle(d.id)} /> },
          { h: 'MAC', f: (d) => <code>{d.mac}</code> },
          { h: 'Last IP', f: (d) => d.last_ip ?? '-' },
          { h: 'Arch (opt. 93)', f: (d) => d.arch ?? '-' },
          { h: 'Vendor class', f: (d) => d.vendor_class ?? '-' },
          { h: 'Last refused', f: (d) => `${d.last_protocol}, ${when(d.last_seen)}` },
          { h: 'First seen', f: (d) => when(d.first_seen) },
          { h: 'Count', f: (d) => d.count },
          {
            h: '',
            f: (d) => (
              <Danger label="Delete" question={`Delete the record of ${d.mac}?`} action={() => api('DELETE', `/access/unauthorized/${d.id}`).then(devs.reload, (x: Error) => setErr(x.message))} />
            ),
          },
        ]}
      />
      {devs.data && <Pager page={page} size={size} total={devs.data.total} go={setPage} />}
    </div>
  );
}

export function Access() {
  return (
    <section>
      <Header title="Access control" />
      <ModeCard />
      <Unauthorized />
      <ListSection kind="whitelist" title="Whitelist" />
      <ListSection kind="blacklist" title="Blacklist" />
    </section>
  );
}
