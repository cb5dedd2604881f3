// Profiles: list, create/delete, the menu entries as a structured form, script versions
// with a side-by-side diff against the current script, rollback; and the iPXE script
// template editor (render errors marked at their line); the preview of a profile as iPXE,
// GRUB or PXELINUX with what of it cannot run under Secure Boot.

import { useState } from 'preact/hooks';
import { api } from '../api';
import { Danger, Err, Form, Header, Table, useGet, when } from '../ui';
import { DiffView, MenuEntriesEditor, TemplateEditor } from './editors';
import { FORMAT_NAMES } from './hosts';

interface Finding {
  entry: string;
  label: string;
  verdict: 'ok' | 'blocked' | 'unchecked';
  detail: string;
}

/** `GET /profiles/{id}/preview`: the configuration in one format and the Secure Boot verdicts. */
function Preview(props: { profile: Profile; close: () => void }) {
  const [format, setFormat] = useState<keyof typeof FORMAT_NAMES>('grub');
  const { data, error } = useGet<{ text: string; secure_boot: Finding[] }>(`/profiles/${props.profile.id}/preview?format=${format}`, ['profile.']);
  return (
    <div class="panel" data-testid="profile-preview">
      <h2>
        Preview of {props.profile.name} <button onClick={props.close}>Close</button>
      </h2>
      <div class="actions" role="group" aria-label="preview format">
        {(Object.keys(FORMAT_NAMES) as (keyof typeof FORMAT_NAMES)[]).map((f) => (
          <button class={format === f ? 'primary' : ''} aria-pressed={format === f} onClick={() => setFormat(f)}>
            {FORMAT_NAMES[f]}
          </button>
        ))}
      </div>
      <Err msg={error} />
      <h3>Under Secure Boot</h3>
      <Table
        testid="secure-boot-findings"
        rows={data?.secure_boot}
        empty="No entries."
        cols={[
          { h: 'Entry', f: (x) => `${x.entry} ${x.label}` },
          { h: 'Verdict', f: (x) => <span class={x.verdict === 'blocked' ? 'error' : x.verdict === 'ok' ? 'ok' : 'muted'}>{x.verdict}</span> },
          { h: 'Why', f: (x) => x.detail },
        ]}
      />
      <pre class="json" data-testid="profile-preview-text">{data?.text ?? ''}</pre>
    </div>
  );
}

interface Profile {
  id: number;
  name: string;
  description: string;
  is_default: boolean;
  timeout_secs: number;
  entries: unknown[];
  updated_at: string;
}

interface Version {
  id: number;
  comment: string;
  checksum: string;
  created_at?: string;
}

function Versions(props: { profile: Profile }) {
  const { data, error, reload } = useGet<{ versions: Version[] }>(`/profiles/${props.profile.id}/script-versions?size=1000`, ['profile.']);
  const [diff, setDiff] = useState<{ ver: number; text: string | null } | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const list = data?.versions;
  return (
    <div class="panel">
      <h2>Script versions of {props.profile.name}</h2>
      <Err msg={error ?? err} />
      <Table
        testid="versions"
        rows={list}
        cols={[
          { h: 'Version', f: (v) => v.id },
          { h: 'Comment', f: (v) => v.comment },
          { h: 'When', f: (v) => when(v.created_at) },
          {
            h: '',
            f: (v) => (
              <span class="btns">
                <button
                  onClick={() =>
                    api<{ diff: string; identical: boolean }>('GET', `/profiles/${props.profile.id}/script-diff/${v.id}`).then(
                      (d) => setDiff({ ver: v.id, text: d.identical ? null : d.diff }),
                      (e: Error) => setErr(e.message),
                    )
                  }
                >
                  Diff
                </button>
                <Danger
                  label="Roll back"
                  question={`Roll ${props.profile.name} back to version ${v.id}?`}
                  action={() => api('POST', `/profiles/${props.profile.id}/script-rollback/${v.id}`).then(reload, (e: Error) => setErr(e.message))}
                />
              </span>
            ),
          },
        ]}
      />
      {diff &&
        (diff.text === null ? (
          <p class="muted" data-testid="diff">
            Version {diff.ver} is identical to the current script.
          </p>
        ) : (
          <DiffView diff={diff.text} left={`version ${diff.ver}`} right="current script" />
        ))}
    </div>
  );
}

export function Profiles() {
  const { data, error, reload } = useGet<{ profiles: Profile[] }>('/profiles?size=1000', ['profile.']);
  const list = data?.profiles;
  const [editing, setEditing] = useState<Profile | 'new' | null>(null);
  const [versions, setVersions] = useState<Profile | null>(null);
  const [preview, setPreview] = useState<Profile | null>(null);
  const [err, setErr] = useState<string | null>(null);
  return (
    <section>
      <Header title="Profiles">
        <button class="primary" onClick={() => setEditing('new')}>
          New profile
        </button>
      </Header>
      {editing && (
        <div class="panel">
          <Form
            testid="profile-form"
            fields={[
              { name: 'name', label: 'Name' },
              { name: 'description', label: 'Description' },
              { name: 'timeout_secs', label: 'Menu timeout (s)', type: 'number' },
              { name: 'is_default', label: 'Default profile', type: 'checkbox' },
              { name: 'entries', label: 'Menu entries', render: (id, v, set) => <MenuEntriesEditor id={id} value={v} onChange={set} /> },
            ]}
            initial={
              editing === 'new'
                ? { entries: '[]', timeout_secs: '10' }
                : {
                    name: editing.name,
                    description: editing.description,
                    timeout_secs: String(editing.timeout_secs),
                    is_default: editing.is_default,
                    entries: JSON.stringify(editing.entries, null, 2),
                  }
            }
            submitLabel={editing === 'new' ? 'Create' : 'Save'}
            cancel={() => setEditing(null)}
            submit={async (v) => {
              let entries: unknown;
              try {
                entries = JSON.parse(String(v.entries || '[]'));
              } catch (e) {
                throw new Error(`'entries' is not JSON: ${(e as Error).message}`);
              }
              const body = { name: v.name, description: v.description ?? '', timeout_secs: Number(v.timeout_secs || 0), is_default: !!v.is_default, entries };
              if (editing === 'new') await api('POST', '/profiles', body);
              else await api('PUT', `/profiles/${editing.id}`, body);
              setEditing(null);
              reload();
            }}
          />
        </div>
      )}
      <Err msg={error ?? err} />
      <Table
        testid="profiles"
        rows={list}
        empty="No profiles."
        cols={[
          { h: 'Name', f: (p) => p.name + (p.is_default ? ' (default)' : '') },
          { h: 'Entries', f: (p) => p.entries.length },
          { h: 'Timeout', f: (p) => `${p.timeout_secs} s` },
          { h: 'Updated', f: (p) => when(p.updated_at) },
          {
            h: '',
            f: (p) => (
              <span class="btns">
                <button onClick={() => setEditing(p)}>Edit</button>
                <button onClick={() => setVersions(p)}>Versions</button>
                <button onClick={() => setPreview(p)}>Preview</button>
                <Danger label="Delete" question={`Delete profile ${p.name}?`} action={() => api('DELETE', `/profiles/${p.id}`).then(reload, (e: Error) => setErr(e.message))} />
              </span>
            ),
          },
        ]}
      />
      {versions && <Versions profile={versions} />}
      {preview && <Preview profile={preview} close={() => setPreview(null)} />}
      <TemplateEditor />
    </section>
  );
}
