// Settings groups: general, interfaces, netboot, logging, each a form over its
// `GET`/`PUT /settings/<group>` pair. Also the shared pieces of every settings form
// (Service Config > DHCP and > TFTP use them too): only the changed keys are sent,
// numbers are checked to be whole before sending, a change that restarts a service asks
// first, and the API's `error` text is shown beside the field it names.

import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { Err, Form, Header, useGet } from '../ui';
import type { Field, Values } from '../ui';
import { Updates } from './updates';

/**
 * How a form value becomes a patch value: `text` (trimmed; `clear` sends `""` when it
 * was emptied, for keys the API clears that way), `int` (a whole number), `bool`, `list`
 * (comma or space separated), `opt` (an optional value the API cannot clear: emptying
 * it is refused here, naming the key).
 */
export type Kind = 'text' | 'clear' | 'int' | 'bool' | 'list' | 'opt';

/** A 400-like error raised in the browser, named after `key` so the form puts it beside it. */
function bad(key: string, why: string): ApiError {
  return new ApiError(400, `'${key}' ${why}`);
}

/**
 * The patch between `initial` and `values`: only keys of `kinds` whose value changed,
 * converted per their kind. Throws an [`ApiError`] naming the key for a value that
 * cannot be sent (not a whole number, an `opt` emptied).
 */
export function changes(values: Values, initial: Values, kinds: Record<string, Kind>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, kind] of Object.entries(kinds)) {
    const a = values[k];
    const b = initial[k];
    if (kind === 'bool') {
      if (!!a !== !!b) out[k] = !!a;
      continue;
    }
    const v = String(a ?? '').trim();
    if (v === String(b ?? '').trim()) continue;
    if (kind === 'int') {
      if (!/^\d+$/.test(v)) throw bad(k, 'must be a whole number');
      out[k] = Number(v);
    } else if (kind === 'list') {
      out[k] = v.split(/[,\s]+/).filter(Boolean);
    } else if (kind === 'opt' && v === '') {
      throw bad(k, 'cannot be removed here; remove it from the configuration file and restart');
    } else {
      out[k] = v;
    }
  }
  return out;
}

/** A `Changed<T>` answer's `applied` (`crate::settings::Applied`) in words. */
export function appliedText(a: unknown): string {
  if (typeof a === 'string') {
    if (a === 'live') return 'applied live';
    if (a === 'restart') return 'the service was restarted to apply it';
    return a;
  }
  const x = a as { live?: string[]; restarted?: string[]; next_start?: string[] } | undefined;
  const parts: string[] = [];
  if (x?.live?.length) parts.push(`applied live: ${x.live.join(', ')}`);
  if (x?.restarted?.length) parts.push(`restarted: ${x.restarted.join(', ')}`);
  if (x?.next_start?.length) parts.push(`applies at the next start: ${x.next_start.join(', ')}`);
  return parts.join('; ') || 'nothing changed';
}

/**
 * One settings form over `data`: `values` gives the form's values (the form starts over
 * when they change, e.g. after a save or a live event), `kinds` which keys are sent and
 * how, `confirm` a question for a disruptive patch (restarts), `put` sends the patch and
 * answers what happened.
 */
export function SettingsForm(props: {
  testid: string;
  fields: Field[];
  values: Values;
  kinds: Record<string, Kind>;
  confirm?: (patch: Record<string, unknown>) => string | null;
  put: (patch: Record<string, unknown>) => Promise<string>;
  submitLabel?: string;
}) {
  const [note, setNote] = useState<string | null>(null);
  return (
    <>
      <Form
        testid={props.testid}
        key={JSON.stringify(props.values)}
        fields={props.fields}
        initial={props.values}
        submitLabel={props.submitLabel ?? 'Save'}
        submit={async (v) => {
          const patch = changes(v, props.values, props.kinds);
          if (!Object.keys(patch).length) {
            setNote('Nothing changed.');
            return;
          }
          const q = props.confirm?.(patch);
          if (q && !confirm(q)) {
            setNote('Not saved.');
            return;
          }
          setNote(null);
          setNote(`Saved: ${await props.put(patch)}.`);
        }}
      />
      {note && (
        <p class="ok" role="status" data-testid={`${props.testid}-note`}>
          {note}
        </p>
      )}
    </>
  );
}

interface General {
  server_name: string;
  api_listen: string;
  session_ttl_secs: number;
}

interface Interfaces {
  dns: string[];
  dhcp: Record<string, string>;
  tftp: string;
}

interface Netboot {
  boot_root: string;
  http_base_url?: string | null;
  ipxe_script_path: string;
}

interface Logging {
  level: string;
  rotation: string;
  max_file_bytes: number;
  keep_files: number;
  retention_days: number;
  dir: string;
}

/** `PUT path` with `patch`; answers the `applied` part of the answer in words. */
async function put(path: string, patch: Record<string, unknown>): Promise<string> {
  const r = await api<{ applied?: unknown }>('PUT', path, patch);
  return appliedText(r.applied);
}

function General() {
  const { data, error, reload } = useGet<General>('/settings/general', ['settings.']);
  return (
    <div class="panel">
      <h2>General</h2>
      <Err msg={error} />
      {data && (
        <SettingsForm
          testid="settings-general"
          fields={[
            { name: 'server_name', label: 'Server name', hint: 'A DNS label; the server’s own A record. Applies at the next start.' },
            { name: 'api_listen', label: 'API listen address', placeholder: '0.0.0.0:8080', hint: 'ip:port of the API, UI and HTTP boot. Applies at the next start.' },
            { name: 'session_ttl_secs', label: 'Session lifetime (s)', type: 'number', hint: '60-2592000; applies to new sessions.' },
          ]}
          values={{ server_name: data.server_name, api_listen: data.api_listen, session_ttl_secs: String(data.session_ttl_secs) }}
          kinds={{ server_name: 'text', api_listen: 'text', session_ttl_secs: 'int' }}
          put={(p) => put('/settings/general', p).finally(reload)}
        />
      )}
    </div>
  );
}

function InterfacesGroup() {
  const { data, error, reload } = useGet<Interfaces>('/settings/interfaces', ['settings.', 'dhcp.settings', 'dns.settings', 'tftp.settings']);
  const ifaces = useGet<{ name: string }[]>('/interfaces');
  if (!data) return <Err msg={error} />;
  const cidrs = Object.keys(data.dhcp);
  const values: Values = { dns: data.dns.join(', '), tftp: data.tftp };
  const kinds: Record<string, Kind> = { dns: 'list', tftp: 'text' };
  for (const c of cidrs) {
    values[`dhcp@${c}`] = data.dhcp[c];
    kinds[`dhcp@${c}`] = 'text';
  }
  return (
    <div class="panel">
      <h2>Interfaces</h2>
      <Err msg={error} />
      <SettingsForm
        testid="settings-interfaces"
        fields={[
          { name: 'dns', label: 'DNS listen addresses', placeholder: '0.0.0.0, ::', hint: 'Comma separated; the DNS server rebinds.' },
          ...cidrs.map(
            (c): Field => ({ name: `dhcp@${c}`, label: `DHCP interface of ${c}`, list: ifaces.data?.map((i) => i.name), hint: 'Restarts DHCP when it runs.' }),
          ),
          { name: 'tftp', label: 'TFTP listen address', placeholder: '0.0.0.0', hint: 'Restarts TFTP when it runs.' },
        ]}
        values={values}
        kinds={kinds}
        confirm={(p) =>
          Object.keys(p).some((k) => k !== 'dns') ? 'This restarts the DHCP or TFTP service (running transfers and exchanges are cut). Continue?' : null
        }
        put={(p) => {
          const body: Record<string, unknown> = {};
          const dhcp: Record<string, string> = {};
          for (const [k, v] of Object.entries(p)) {
            if (k.startsWith('dhcp@')) dhcp[k.slice(5)] = String(v);
            else body[k] = v;
          }
          if (Object.keys(dhcp).length) body.dhcp = dhcp;
          return put('/settings/interfaces', body).finally(reload);
        }}
      />
    </div>
  );
}

function NetbootGroup() {
  const { data, error, reload } = useGet<Netboot>('/settings/netboot', ['settings.']);
  return (
    <div class="panel">
      <h2>Netboot</h2>
      <Err msg={error} />
      {data && (
        <SettingsForm
          testid="settings-netboot"
          fields={[
            { name: 'boot_root', label: 'Boot directory', hint: 'Absolute path of an existing directory, served by TFTP and /boot.' },
            {
              name: 'http_base_url',
              label: 'HTTP base URL',
              placeholder: 'http://<subnet server address>:<API port> (default)',
              hint: 'What clients use for iPXE scripts, kernels and initrds (e.g. a DNS name or a reverse proxy). Empty: the default. Applies to the next DHCP answer and script.',
            },
            { name: 'ipxe_script_path', label: 'iPXE script path', readonly: true, hint: 'Read-only: appended to the base URL for iPXE clients.' },
          ]}
          values={{ boot_root: data.boot_root, http_base_url: data.http_base_url ?? '', ipxe_script_path: data.ipxe_script_path }}
          kinds={{ boot_root: 'text', http_base_url: 'clear' }}
          put={(p) => put('/settings/netboot', p).finally(reload)}
        />
      )}
    </div>
  );
}

function LoggingGroup() {
  const { data, error, reload } = useGet<Logging>('/settings/logging', ['settings.']);
  return (
    <div class="panel">
      <h2>Logging</h2>
      <Err msg={error} />
      {data && (
        <SettingsForm
          testid="settings-logging"
          fields={[
            { name: 'level', label: 'Level filter', placeholder: 'info', hint: 'tracing filter syntax, e.g. info or info,bootlane::dhcp=debug. Applies live.' },
            { name: 'rotation', label: 'Rotation', type: 'select', options: ['daily', 'hourly', 'never'] },
            { name: 'max_file_bytes', label: 'Size cap of one file (bytes)', type: 'number', hint: '65536 or more.' },
            { name: 'keep_files', label: 'Files kept', type: 'number', hint: '1-10000, the current one included.' },
            { name: 'retention_days', label: 'Retention (days)', type: 'number', hint: '1-3650.' },
            { name: 'dir', label: 'Log directory', readonly: true, hint: 'Read-only ([logging] dir in the configuration file).' },
          ]}
          values={{
            level: data.level,
            rotation: data.rotation,
            max_file_bytes: String(data.max_file_bytes),
            keep_files: String(data.keep_files),
            retention_days: String(data.retention_days),
            dir: data.dir,
          }}
          kinds={{ level: 'text', rotation: 'text', max_file_bytes: 'int', keep_files: 'int', retention_days: 'int' }}
          put={(p) => put('/settings/logging', p).finally(reload)}
        />
      )}
    </div>
  );
}

export function Settings() {
  return (
    <section>
      <Header title="Settings" />
      <General />
      <InterfacesGroup />
      <NetbootGroup />
      <LoggingGroup />
      <Updates />
    </section>
  );
}
