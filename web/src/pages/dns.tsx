// DNS: the records table (search, type filter, server-side paging, create/edit/delete
// with confirmation, the API's validation text beside the field), and Service Config
// > DNS at `/services/dns` (spec "Built-in DNS server"): settings, XDP status and
// counters.

import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { Danger, Err, Facts, Form, Header, Pager, Table, useGet } from '../ui';
import type { Field } from '../ui';
import { SettingsForm } from './settings';

/** `crate::dns::records::DnsRecord`. */
interface DnsRecord {
  id: number;
  name: string;
  fqdn: string;
  type: string;
  value: string;
  ttl: number;
  priority?: number | null;
  subnet?: string | null;
  enabled: boolean;
  auto: boolean;
}

const TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'MX'];
const FIELDS: Field[] = [
  { name: 'name', label: 'Name', placeholder: 'host1, @ or host1.example.' },
  { name: 'type', label: 'Type', type: 'select', options: TYPES },
  { name: 'value', label: 'Value', placeholder: '10.0.0.5' },
  { name: 'ttl', label: 'TTL (s)', type: 'number', placeholder: '300' },
  { name: 'priority', label: 'Priority (MX)', type: 'number' },
  { name: 'subnet', label: 'Subnet (optional)', placeholder: '10.0.0.0/24' },
  { name: 'enabled', label: 'Enabled', type: 'checkbox' },
];

function toInput(v: Record<string, string | boolean>) {
  const out: Record<string, unknown> = { name: v.name, type: v.type || 'A', value: v.value, enabled: v.enabled !== false };
  if (v.ttl !== undefined && v.ttl !== '') out.ttl = Number(v.ttl);
  if (v.priority !== undefined && v.priority !== '') out.priority = Number(v.priority);
  if (v.subnet) out.subnet = v.subnet;
  return out;
}

export function DnsRecords() {
  const [q, setQ] = useState('');
  const [kind, setKind] = useState('');
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<DnsRecord | 'new' | null>(null);
  const size = 25;
  const { data, error, reload } = useGet<{ records: DnsRecord[]; total: number; local_domain: string }>(
    `/dns/records${qs({ q, type: kind, page, size })}`,
    ['dns.'],
  );
  const [delErr, setDelErr] = useState<string | null>(null);
  return (
    <section>
      <Header title="DNS records">
        <button class="primary" onClick={() => setEditing('new')} data-testid="new-record">
          New record
        </button>
      </Header>
      <div class="filters">
        <input type="search" placeholder="Search name or value" aria-label="search" value={q} onInput={(e) => (setQ(e.currentTarget.value), setPage(1))} />
        <select aria-label="type" value={kind} onChange={(e) => (setKind(e.currentTarget.value), setPage(1))}>
          <option value="">All types</option>
          {TYPES.map((t) => (
            <option>{t}</option>
          ))}
        </select>
        {data && <span class="muted">local domain: {data.local_domain}</span>}
      </div>
      {editing && (
        <div class="panel">
          <h2>{editing === 'new' ? 'New record' : `Edit ${editing.fqdn}`}</h2>
          <Form
            testid="record-form"
            fields={FIELDS}
            initial={
              editing === 'new'
                ? { type: 'A', enabled: true, ttl: '300' }
                : {
                    name: editing.name,
                    type: editing.type,
                    value: editing.value,
                    ttl: String(editing.ttl),
                    priority: editing.priority == null ? '' : String(editing.priority),
                    subnet: editing.subnet ?? '',
                    enabled: editing.enabled,
                  }
            }
            submitLabel={editing === 'new' ? 'Create' : 'Save'}
            cancel={() => setEditing(null)}
            submit={async (v) => {
              if (editing === 'new') await api('POST', '/dns/records', toInput(v));
              else await api('PUT', `/dns/records/${editing.id}`, toInput(v));
              setEditing(null);
              reload();
            }}
          />
        </div>
      )}
      <Err msg={error ?? delErr} />
      <Table
        testid="records"
        rows={data?.records}
        empty="No records match."
        cols={[
          { h: 'Name', f: (r) => <span title={r.fqdn}>{r.fqdn}</span> },
          { h: 'Type', f: (r) => r.type },
          { h: 'Value', f: (r) => <code>{r.value}</code> },
          { h: 'TTL', f: (r) => r.ttl },
          { h: 'Subnet', f: (r) => r.subnet ?? '-' },
          { h: 'On', f: (r) => (r.enabled ? 'yes' : 'no') },
          {
            h: '',
            f: (r) =>
              r.auto ? (
                <span class="muted">auto</span>
              ) : (
                <span class="btns">
                  <button onClick={() => setEditing(r)}>Edit</button>
                  <Danger
                    label="Delete"
                    question={`Delete ${r.type} record ${r.fqdn}?`}
                    action={() =>
                      api('DELETE', `/dns/records/${r.id}`).then(
                        () => (setDelErr(null), reload()),
                        (e: Error) => setDelErr(e.message),
                      )
                    }
                  />
                </span>
              ),
          },
        ]}
      />
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
    </section>
  );
}

/** `GET /services/dns`: the settings (flattened) plus live state. */
interface DnsView {
  enabled: boolean;
  port: number;
  listen: string[];
  local_domain: string;
  upstream: string;
  running: boolean;
  bound: string[];
  xdp: unknown;
  metrics: unknown;
}

export function DnsSettings() {
  const { data, error, reload } = useGet<DnsView>('/services/dns', ['dns.settings', 'service.', 'dataplane.']);
  return (
    <section>
      <Header title="Service Config › DNS" />
      <Err msg={error} />
      {data && (
        <>
          <p>
            {data.running ? 'Running' : 'Not running'}; bound: {data.bound.join(', ') || '-'}
          </p>
          <div class="panel">
            <SettingsForm
              testid="dns-settings"
              fields={[
                { name: 'enabled', label: 'Enabled', type: 'checkbox' },
                { name: 'port', label: 'Port', type: 'number' },
                { name: 'listen', label: 'Listen addresses (comma separated)' },
                { name: 'local_domain', label: 'Local domain' },
                { name: 'upstream', label: 'Upstream servers' },
              ]}
              values={{
                enabled: data.enabled,
                port: String(data.port),
                listen: data.listen.join(', '),
                local_domain: data.local_domain,
                upstream: data.upstream,
              }}
              kinds={{ enabled: 'bool', port: 'int', listen: 'list', local_domain: 'text', upstream: 'clear' }}
              // Only keys that change are sent; a change of the sockets asks first.
              confirm={(p) =>
                'enabled' in p || 'port' in p || 'listen' in p
                  ? 'This rebinds (or stops) the DNS server; queries in flight may be dropped. Continue?'
                  : null
              }
              put={async (p) => {
                await api('PUT', '/services/dns', p);
                reload();
                return 'applied live';
              }}
            />
          </div>
          <div class="two-col">
            <div>
              <h2>XDP</h2>
              <Facts v={data.xdp} testid="xdp" />
            </div>
            <div>
              <h2>Counters</h2>
              <Facts v={data.metrics} testid="dns-counters" />
            </div>
          </div>
        </>
      )}
    </section>
  );
}
