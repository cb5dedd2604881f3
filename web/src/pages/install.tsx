// Unattended installs: install tasks (a machine, what it boots, an answer template)
// with their state live over `install.*` events, the last reports of a task, cancel,
// retry and delete, and a form to create one.

import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { Danger, Err, Form, Header, Table, useGet, when } from '../ui';

interface Report {
  kind: string;
  message: string;
  from?: string | null;
  at: string;
}
interface Task {
  id: number;
  mac: string;
  host_name?: string | null;
  source: { type: 'image'; image_id: number } | { type: 'profile'; profile_id: number; entry?: number | null };
  template_id: number;
  state: string;
  reason?: string | null;
  answer_fetches: number;
  deadline_at?: string | null;
  reports: Report[];
  updated_at: string;
}

const STATES = ['', 'pending', 'installing', 'installed', 'done', 'failed', 'cancelled'];

/** The id in a select option `"<id>: <name>"`. */
const idOf = (v: string | boolean | undefined) => Number(String(v ?? '').split(':')[0]);

export function InstallTasks() {
  const [state, setState] = useState('');
  const list = useGet<{ tasks: Task[] }>(`/netboot/tasks${qs({ state: state || undefined })}`, ['install.']);
  const hosts = useGet<{ hosts: { id: number; name: string; mac: string }[] }>('/hosts?size=1000');
  const images = useGet<{ images: { id: number; name: string; state: string }[] }>('/os-images?size=1000', ['os_image.']);
  const profiles = useGet<{ profiles: { id: number; name: string }[] }>('/profiles?size=1000');
  const templates = useGet<{ templates: { id: number; name: string; format: string }[] }>('/netboot/answer-templates?size=1000');
  const [creating, setCreating] = useState(false);
  const [open, setOpen] = useState<number | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const act = (p: Promise<unknown>) => p.then(list.reload, (e: Error) => setErr(e.message));
  const sources = [
    ...(images.data?.images ?? []).filter((i) => ['ready', 'mounted'].includes(i.state)).map((i) => `${i.id}: image ${i.name}`),
    ...(profiles.data?.profiles ?? []).map((p) => `${p.id}: profile ${p.name}`),
  ];
  const shown = list.data?.tasks.find((t) => t.id === open);
  return (
    <section>
      <Header title="Install tasks">
        <select aria-label="state filter" value={state} onChange={(e) => setState(e.currentTarget.value)}>
          {STATES.map((s) => (
            <option value={s}>{s || 'every state'}</option>
          ))}
        </select>
        <button class="primary" onClick={() => setCreating(!creating)}>
          New task
        </button>
      </Header>
      {creating && (
        <Form
          testid="task-form"
          fields={[
            { name: 'host', label: 'Host', type: 'select', options: ['', ...(hosts.data?.hosts ?? []).map((h) => `${h.id}: ${h.name} (${h.mac})`)], hint: 'or a MAC below' },
            { name: 'mac', label: 'MAC', placeholder: '52:54:00:12:34:56', hint: 'a machine without a host' },
            { name: 'source', label: 'Boots', type: 'select', options: sources, hint: 'an OS image (ready or mounted) or a profile with a linux entry' },
            { name: 'template_id', label: 'Answer template', type: 'select', options: (templates.data?.templates ?? []).map((t) => `${t.id}: ${t.name} (${t.format})`) },
            { name: 'extra_cmdline', label: 'Extra kernel arguments', placeholder: 'console=ttyS0' },
            { name: 'comment', label: 'Comment' },
          ]}
          submitLabel="Create"
          cancel={() => setCreating(false)}
          submit={async (v) => {
            const src = String(v.source ?? sources[0] ?? '');
            const id = idOf(src);
            await api('POST', '/netboot/tasks', {
              host_id: v.host ? idOf(v.host) : undefined,
              mac: v.host ? undefined : String(v.mac ?? '') || undefined,
              source: src.includes(': image ') ? { type: 'image', image_id: id } : { type: 'profile', profile_id: id },
              template_id: idOf(v.template_id ?? `${templates.data?.templates[0]?.id ?? 0}`),
              extra_cmdline: v.extra_cmdline ? String(v.extra_cmdline) : undefined,
              comment: v.comment ? String(v.comment) : undefined,
            });
            setCreating(false);
            list.reload();
          }}
        />
      )}
      <Err msg={err ?? list.error} />
      <Table
        testid="install-tasks"
        rows={list.data?.tasks}
        empty="No install tasks."
        cols={[
          { h: 'Id', f: (t) => <button class="link" onClick={() => setOpen(open === t.id ? null : t.id)}>{t.id}</button> },
          { h: 'Machine', f: (t) => (t.host_name ? `${t.host_name} (${t.mac})` : t.mac) },
          { h: 'Boots', f: (t) => (t.source.type === 'image' ? `image ${t.source.image_id}` : `profile ${t.source.profile_id}`) },
          { h: 'Template', f: (t) => t.template_id },
          { h: 'State', f: (t) => <span class={`state ${t.state}`} data-testid="task-state">{t.state}{t.reason ? `: ${t.reason}` : ''}</span> },
          { h: 'Last report', f: (t) => (t.reports.length ? `${t.reports[t.reports.length - 1].kind}: ${t.reports[t.reports.length - 1].message.slice(0, 60)}` : '-') },
          { h: 'Updated', f: (t) => when(t.updated_at) },
          {
            h: '',
            f: (t) => (
              <span class="actions">
                {['pending', 'installing', 'installed'].includes(t.state) && <button onClick={() => act(api('POST', `/netboot/tasks/${t.id}/cancel`))}>Cancel</button>}
                {t.state === 'failed' && <button onClick={() => act(api('POST', `/netboot/tasks/${t.id}/retry`))}>Retry</button>}
                {t.state !== 'installing' && <Danger label="Delete" question={`Delete install task ${t.id}?`} action={() => act(api('DELETE', `/netboot/tasks/${t.id}`))} />}
              </span>
            ),
          },
        ]}
      />
      {shown && (
        <div class="panel" data-testid="task-detail">
          <h2>Task {shown.id}</h2>
          <p class="muted">
            Answer served {shown.answer_fetches} time(s){shown.deadline_at ? `; deadline ${when(shown.deadline_at)}` : ''}.
          </p>
          <Table
            rows={[...shown.reports].reverse()}
            empty="No reports yet."
            cols={[
              { h: 'When', f: (r) => when(r.at) },
              { h: 'Kind', f: (r) => r.kind },
              { h: 'From', f: (r) => r.from ?? '-' },
              { h: 'Message', f: (r) => <pre class="log">{r.message.slice(-2000)}</pre> },
            ]}
          />
        </div>
      )}
    </section>
  );
}
