// Events (filterable, live) and the audit log.

import { useState } from 'preact/hooks';
import { qs } from '../api';
import type { LiveEvent } from '../live';
import { Err, Header, Json, Pager, Table, useGet, when } from '../ui';

export function Events() {
  const [kind, setKind] = useState('');
  const [resource, setResource] = useState('');
  const [node, setNode] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const { data, error } = useGet<{ events: LiveEvent[]; total: number }>(`/events${qs({ kind, resource, node, page, size })}`, ['']);
  const [open, setOpen] = useState<number | null>(null);
  return (
    <section>
      <Header title="Events" />
      <div class="filters">
        <input type="search" placeholder="kind (e.g. dns.record.created)" aria-label="kind" value={kind} onInput={(e) => (setKind(e.currentTarget.value), setPage(1))} />
        <input type="search" placeholder="resource" aria-label="resource" value={resource} onInput={(e) => (setResource(e.currentTarget.value), setPage(1))} />
        <input type="search" placeholder="node" aria-label="node" value={node} onInput={(e) => (setNode(e.currentTarget.value), setPage(1))} />
      </div>
      <Err msg={error} />
      <Table
        testid="events"
        rows={data?.events}
        empty="No events."
        cols={[
          { h: '#', f: (e) => e.id },
          { h: 'Time', f: (e) => when(e.time) },
          { h: 'Kind', f: (e) => <code>{e.kind}</code> },
          { h: 'Summary', f: (e) => e.summary },
          { h: 'By', f: (e) => e.actor + (e.remote_addr ? ` (${e.remote_addr})` : '') },
          { h: 'Node', f: (e) => e.node ?? '' },
          { h: '', f: (e) => <button onClick={() => setOpen(open === e.id ? null : e.id)}>{open === e.id ? 'Hide' : 'Data'}</button> },
        ]}
      />
      {open !== null && <Json v={data?.events.find((e) => e.id === open)?.data} />}
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
    </section>
  );
}

interface AuditEntry {
  id: number;
  timestamp: string;
  user: string;
  remote_addr?: string | null;
  action: string;
  resource: string;
  resource_id: string;
  summary: string;
}

export function Audit() {
  const [user, setUser] = useState('');
  const [resource, setResource] = useState('');
  const [page, setPage] = useState(1);
  const size = 50;
  const { data, error } = useGet<{ entries?: AuditEntry[]; logs?: AuditEntry[]; total: number }>(`/audit-logs${qs({ user, resource, page, size })}`, ['']);
  const rows = data ? (data.entries ?? data.logs ?? (Object.values(data).find(Array.isArray) as AuditEntry[])) : undefined;
  return (
    <section>
      <Header title="Audit log" />
      <div class="filters">
        <input type="search" placeholder="user" aria-label="user" value={user} onInput={(e) => (setUser(e.currentTarget.value), setPage(1))} />
        <input type="search" placeholder="resource" aria-label="resource" value={resource} onInput={(e) => (setResource(e.currentTarget.value), setPage(1))} />
      </div>
      <Err msg={error} />
      <Table
        testid="audit"
        rows={rows}
        empty="No audit entries."
        cols={[
          { h: 'Time', f: (a) => when(a.timestamp) },
          { h: 'User', f: (a) => a.user + (a.remote_addr ? ` (${a.remote_addr})` : '') },
          { h: 'Action', f: (a) => a.action },
          { h: 'Resource', f: (a) => `${a.resource} ${a.resource_id}` },
          { h: 'Summary', f: (a) => a.summary },
        ]}
      />
      {data && <Pager page={page} size={size} total={data.total} go={setPage} />}
    </section>
  );
}
