// Answer templates: the list, a new template from a built-in preset, the editor (format,
// content) with Validate (both steps, problems with their line) and Preview (the text an
// installer would get, for a host or with sample values), versions with rollback, and the
// site settings every install uses (time zone, locale, keyboard, SSH keys, root password
// stored only as a SHA-512 crypt hash, package mirror).

import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { Danger, Err, Form, Header, Table, useAction, useGet, when } from '../ui';

const FORMATS = ['preseed', 'kickstart', 'autoinstall', 'cloud-config', 'autoyast', 'autounattend', 'ignition'];

interface Template {
  id: number;
  name: string;
  format: string;
  content: string;
  description: string;
  version: number;
  updated_at: string;
}
interface Preset {
  key: string;
  name: string;
  format: string;
  description: string;
  content: string;
}
interface Problem {
  line?: number | null;
  message: string;
}
interface Validation {
  status: string;
  valid: boolean;
  template_errors: Problem[];
  output_errors: Problem[];
  validator?: string | null;
  note?: string | null;
}
interface Version {
  version: number;
  format: string;
  created_at: string;
  comment?: string | null;
}

function Verdict(props: { v: Validation }) {
  const { v } = props;
  return (
    <div data-testid="validation" class={v.valid ? 'ok' : v.status === 'invalid' ? 'error' : 'muted'}>
      <strong>{v.status}</strong>
      {v.validator && ` (judged by ${v.validator})`}
      {v.note && ` ${v.note}`}
      <ul>
        {v.template_errors.map((p) => (
          <li>
            template{p.line ? ` line ${p.line}` : ''}: {p.message}
          </li>
        ))}
        {v.output_errors.map((p) => (
          <li>
            output{p.line ? ` line ${p.line}` : ''}: {p.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

function Editor(props: { t: Template; saved: () => void }) {
  const { t } = props;
  const [content, setContent] = useState(t.content);
  const [format, setFormat] = useState(t.format);
  const [verdict, setVerdict] = useState<Validation | null>(null);
  const [preview, setPreview] = useState<string | null>(null);
  const [mac, setMac] = useState('');
  const { run, err, msg, setMsg } = useAction();
  const versions = useGet<{ versions: Version[] }>(`/netboot/answer-templates/${t.id}/versions`, ['answer_template.']);
  useEffect(() => {
    setContent(t.content);
    setFormat(t.format);
  }, [t.id, t.version]);
  return (
    <div class="panel" data-testid="template-editor">
      <h2>
        {t.name} <span class="muted">v{t.version}</span>
      </h2>
      <label>
        Format{' '}
        <select name="format" value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
          {FORMATS.map((f) => (
            <option value={f}>{f}</option>
          ))}
        </select>
      </label>
      <textarea name="content" class="code" rows={22} spellcheck={false} value={content} onInput={(e) => setContent(e.currentTarget.value)} />
      <div class="actions">
        <button onClick={() => run(async () => setVerdict(await api<Validation>('POST', '/netboot/answer-templates/validate', { format, content })))}>Validate</button>
        <input aria-label="preview mac" placeholder="MAC for the preview (optional)" value={mac} onInput={(e) => setMac(e.currentTarget.value)} />
        <button
          onClick={() =>
            run(async () => {
              const p = await api<{ output?: string | null; validation: Validation }>('POST', `/netboot/answer-templates/${t.id}/preview`, mac ? { mac } : {});
              setPreview(p.output ?? '(does not render)');
              setVerdict(p.validation);
            })
          }
        >
          Preview saved version
        </button>
        <button
          class="primary"
          onClick={() =>
            run(async () => {
              await api('PUT', `/netboot/answer-templates/${t.id}`, { format, content });
              setMsg('Saved as a new version.');
              props.saved();
            })
          }
        >
          Save
        </button>
      </div>
      {msg && <p class="ok">{msg}</p>}
      <Err msg={err} />
      {verdict && <Verdict v={verdict} />}
      {preview !== null && (
        <pre class="log" data-testid="preview">
          {preview}
        </pre>
      )}
      <h3>Versions</h3>
      <Table
        testid="template-versions"
        rows={versions.data?.versions}
        cols={[
          { h: 'Version', f: (v) => v.version },
          { h: 'Format', f: (v) => v.format },
          { h: 'When', f: (v) => when(v.created_at) },
          {
            h: '',
            f: (v) =>
              v.version !== t.version && (
                <button onClick={() => run(async () => (await api('POST', `/netboot/answer-templates/${t.id}/rollback/${v.version}`), props.saved()))}>Roll back to {v.version}</button>
              ),
          },
        ]}
      />
    </div>
  );
}

function SiteSettings() {
  const site = useGet<{ timezone: string; locale: string; keyboard: string; ssh_authorized_keys: string[]; has_root_password: boolean; mirror?: string | null }>('/netboot/answer-settings');
  const [msg, setMsg] = useState<string | null>(null);
  if (!site.data) return <Err msg={site.error} />;
  const d = site.data;
  return (
    <details class="panel" data-testid="site-settings">
      <summary>Site settings for installs</summary>
      <Form
        testid="site-form"
        fields={[
          { name: 'timezone', label: 'Time zone', placeholder: 'Etc/UTC' },
          { name: 'locale', label: 'Locale', placeholder: 'en_US.UTF-8' },
          { name: 'keyboard', label: 'Keyboard', placeholder: 'us' },
          { name: 'mirror', label: 'Package mirror', placeholder: 'http://deb.debian.org/debian' },
          { name: 'ssh_authorized_keys', label: 'SSH keys', type: 'textarea', hint: 'one per line' },
          { name: 'root_password', label: 'Root password', type: 'password', hint: d.has_root_password ? 'set (stored only as a SHA-512 crypt hash); type to replace' : 'not set' },
        ]}
        initial={{ timezone: d.timezone, locale: d.locale, keyboard: d.keyboard, mirror: d.mirror ?? '', ssh_authorized_keys: d.ssh_authorized_keys.join('\n') }}
        submitLabel="Save settings"
        submit={async (v) => {
          await api('PUT', '/netboot/answer-settings', {
            timezone: String(v.timezone ?? ''),
            locale: String(v.locale ?? ''),
            keyboard: String(v.keyboard ?? ''),
            mirror: String(v.mirror ?? '') || null,
            ssh_authorized_keys: String(v.ssh_authorized_keys ?? '')
              .split('\n')
              .map((k) => k.trim())
              .filter(Boolean),
            root_password: v.root_password ? String(v.root_password) : undefined,
          });
          setMsg('Site settings saved.');
          site.reload();
        }}
      />
      {msg && <p class="ok">{msg}</p>}
    </details>
  );
}

export function AnswerTemplates() {
  const list = useGet<{ templates: Template[] }>('/netboot/answer-templates', ['answer_template.']);
  const presets = useGet<{ presets: Preset[] }>('/netboot/answer-templates/presets');
  const [open, setOpen] = useState<number | null>(null);
  const [creating, setCreating] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const shown = list.data?.templates.find((t) => t.id === open);
  return (
    <section>
      <Header title="Answer templates">
        <button class="primary" onClick={() => setCreating(!creating)}>
          New template
        </button>
      </Header>
      <SiteSettings />
      {creating && (
        <Form
          testid="template-form"
          fields={[
            { name: 'name', label: 'Name', required: true },
            { name: 'preset', label: 'Start from', type: 'select', options: (presets.data?.presets ?? []).map((p) => `${p.key}: ${p.name}`) },
            { name: 'description', label: 'Description' },
          ]}
          submitLabel="Create"
          cancel={() => setCreating(false)}
          submit={async (v) => {
            const key = String(v.preset ?? `${presets.data?.presets[0]?.key}:`).split(':')[0];
            const p = presets.data?.presets.find((x) => x.key === key);
            const t = await api<Template>('POST', '/netboot/answer-templates', {
              name: String(v.name ?? ''),
              format: p?.format ?? 'preseed',
              content: p?.content ?? '',
              description: String(v.description ?? '') || p?.description || '',
            });
            setCreating(false);
            list.reload();
            setOpen(t.id);
          }}
        />
      )}
      <Err msg={err ?? list.error} />
      <Table
        testid="answer-templates"
        rows={list.data?.templates}
        empty="No answer templates: create one from a preset."
        cols={[
          { h: 'Name', f: (t) => <button class="link" onClick={() => setOpen(open === t.id ? null : t.id)}>{t.name}</button> },
          { h: 'Format', f: (t) => t.format },
          { h: 'Version', f: (t) => t.version },
          { h: 'Updated', f: (t) => when(t.updated_at) },
          { h: '', f: (t) => <Danger label="Delete" question={`Delete answer template ${t.name}?`} action={() => api('DELETE', `/netboot/answer-templates/${t.id}`).then(list.reload, (e: Error) => setErr(e.message))} /> },
        ]}
      />
      {shown && <Editor t={shown} saved={list.reload} />}
    </section>
  );
}
