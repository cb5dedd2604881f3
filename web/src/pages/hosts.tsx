// Hosts: list with search and paging, create/edit/delete, and each host's
// boot-config preview (iPXE, GRUB, PXELINUX), the Secure Boot flag, and a
// Wake-on-LAN button per host (optionally through one
// interface of `GET /wol/interfaces`), and each host's recent boots with the timeline
// of one. Live on `host.*` events.

import { useState } from 'preact/hooks';
import { api, apiText, qs } from '../api';
import { Danger, Err, Form, Header, Pager, Table, useGet } from '../ui';
import { WakeVia, wakeHost } from './wol';
import { RecentBoots } from './boots';

interface Host {
  id: number;
  name: string;
  mac: string;
  ip?: string | null;
  profile_id?: number | null;
  baseline_id?: number | null;
  secure_boot?: boolean;
  description: string;
}

/** The boot-config formats by name, as the buttons show them. */
export const FORMAT_NAMES = { ipxe: 'iPXE', grub: 'GRUB', pxelinux: 'PXELINUX' } as const;

export function Hosts() {
  const [q, setQ] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const { data, error, reload } = useGet<{ hosts: Host[]; total: number }>(`/hosts${qs({ q, page, size })}`, ['host.']);
  const [editing, setEditing] = useState<Host | 'new' | null>(null);
  const [preview, setPreview] = useState<{ id: number; format: string; text: string } | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [via, setVia] = useState('');
  const [woke, setWoke] = useState<{ ok: boolean; text: string } | null>(null);
  const [boots, setBoots] = useState<Host | null>(null);
  // The boot configuration the host would get now, as iPXE (its script), GRUB or PXELINUX.
  const showConfig = (id: number, format: string) =>
    apiText(`/hosts/${id}/boot-config?format=${format}`).then(
      (text) => setPreview({ id, format, text }),
      (e: Error) => setErr(e.message),
    );
  return (
    <section>
      <Header title="Hosts">
        <button class="primary" onClick={() => setEditing('new')}>
          New host
        </button>
      </Header>
      <div class="filters">
        <input type="search" placeholder="Search" aria-label="search" value={q} onInput={(e) => (setQ(e.currentTarget.value), setPage(1))} />
        <WakeVia value={via} set={setVia} />
      </div>
      {woke && (
        <p class={woke.ok ? 'ok' : 'error'} role="status" data-testid="wake-result">
          {woke.text}
        </p>
      )}
      {editing && (
        <div class="panel">
          <Form
            testid="host-form"
            fields={[
              { name: 'name', label: 'Name' },
              { name: 'mac', label: 'MAC' },
              { name: 'ip', label: 'IP (optional)' },
              { name: 'profile_id', label: 'Profile id (optional)', type: 'number' },
              { name: 'baseline_id', label: 'Baseline id (optional)', type: 'number', hint: 'post-install scripts run before its profile\'s and the default baseline' },
              { name: 'secure_boot', label: 'Secure Boot', type: 'checkbox', hint: 'x86-64 UEFI boots get the signed shim and GRUB instead of iPXE' },
              { name: 'description', label: 'Description' },
            ]}
            initial={
              editing === 'new'
                ? {}
                : { name: editing.name, mac: editing.mac, ip: editing.ip ?? '', profile_id: editing.profile_id == null ? '' : String(editing.profile_id), baseline_id: editing.baseline_id == null ? '' : String(editing.baseline_id), secure_boot: !!editing.secure_boot, description: editing.description }
            }
            submitLabel={editing === 'new' ? 'Create' : 'Save'}
            cancel={() => setEditing(null)}
            submit={async (v) => {
              const body = {
                name: v.name,
                mac: v.mac,
                ip: v.ip ? v.ip : null,
                profile_id: v.profile_id ? Number(v.profile_id) : null,
                baseline_id: v.baseline_id ? Number(v.baseline_id) : null,
                secure_boot: !!v.secure_boot,
                description: v.description ?? '',
              };
              if (editing === 'new') await api('POST', '/hosts', body);
              else await api('PUT', `/hosts/${editing.id}`, body);
              setEditing(null);
              reload();
            }}
          />
        </div>
      )}
      <Err msg={error ?? err} />
      <Table
        testid="hosts"
        rows={data?.hosts}
        empty="No hosts."
        cols={[
          { h: 'Name', f: (h) => h.name },
          { h: 'MAC', f: (h) => <code>{h.mac}</code> },
          { h: 'IP', f: (h) => h.ip ?? '-' },
          { h: 'Profile', f: (h) => h.profile_id ?? 'default' },
          { h: 'Baseline', f: (h) => h.baseline_id ?? '-' },
          { h: 'Secure Boot', f: (h) => (h.secure_boot ? 'yes' : '-') },
          {
            h: '',
            f: (h) => (
              <span class="btns">
                <button onClick={() => showConfig(h.id, 'ipxe')}>Boot config</button>
                <button onClick={() => setBoots(h)} aria-pressed={boots?.id === h.id}>
                  Boots
                </button>
                <button onClick={() => (setWoke(null), wakeHost(h.id, via).then(setWoke))}>Wake</button>
                <button onClick={() => setEditing(h)}>Edit</button>
                <Danger label="Delete" question={`Delete host ${h.name}?`} action={() => api('DELETE', `/hosts/${h.id}`).then(reload, (e: Error) => setErr(e.message))} />
              </span>
            ),
          },
        ]}
      />
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
      {preview && (
        <div class="panel">
          <h2>
            Boot config of host {preview.id} <button onClick={() => setPreview(null)}>Close</button>
          </h2>
          <div class="actions" role="group" aria-label="boot config format">
            {(['ipxe', 'grub', 'pxelinux'] as const).map((f) => (
              <button class={preview.format === f ? 'primary' : ''} aria-pressed={preview.format === f} onClick={() => showConfig(preview.id, f)}>
                {FORMAT_NAMES[f]}
              </button>
            ))}
          </div>
          <pre class="json" data-testid="boot-config">{preview.text}</pre>
        </div>
      )}
      {boots && (
        <div class="panel" data-testid="host-boots">
          <h2>
            Recent boots of {boots.name} <button onClick={() => setBoots(null)}>Close</button>
          </h2>
          <RecentBoots hostId={boots.id} name={boots.name} mac={boots.mac} />
        </div>
      )}
    </section>
  );
}
