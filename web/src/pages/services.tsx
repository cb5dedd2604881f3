// Services: state of each service with start/stop/restart and auto-start.
// The table is shared with the dashboard; it reloads on `service.*` events.

import { useState } from 'preact/hooks';
import { api } from '../api';
import { Err, Header, Table, useGet, when } from '../ui';

/** `crate::supervisor::ServiceStatus`. */
export interface Service {
  name: string;
  state: 'running' | 'stopped' | 'failed';
  reason?: string | null;
  since: string;
  auto_start: boolean;
  listen: string[];
}

export function ServiceTable() {
  const { data, error, reload } = useGet<{ services: Service[] }>('/services', ['service.']);
  const [actErr, setActErr] = useState<string | null>(null);
  const act = async (name: string, action: string) => {
    try {
      await api('POST', `/services/${name}/${action}`);
      setActErr(null);
    } catch (e) {
      setActErr((e as Error).message);
    }
    reload();
  };
  const auto = async (name: string, on: boolean) => {
    try {
      await api('PUT', `/services/${name}/auto-start`, { auto_start: on });
      setActErr(null);
    } catch (e) {
      setActErr((e as Error).message);
    }
    reload();
  };
  return (
    <>
      <Err msg={error ?? actErr} />
      <Table
        testid="services"
        rows={data?.services}
        cols={[
          { h: 'Service', f: (s) => <strong>{s.name}</strong> },
          {
            h: 'State',
            f: (s) => (
              <span class={`state ${s.state}`} data-testid={`state-${s.name}`} title={s.reason ?? ''}>
                {s.state}
              </span>
            ),
          },
          { h: 'Since', f: (s) => when(s.since) },
          { h: 'Listening', f: (s) => s.listen.join(', ') || '-' },
          {
            h: 'Auto-start',
            f: (s) => (
              <input type="checkbox" aria-label={`auto-start ${s.name}`} checked={s.auto_start} onChange={(e) => auto(s.name, e.currentTarget.checked)} />
            ),
          },
          {
            h: 'Actions',
            f: (s) => (
              <span class="btns">
                <button disabled={s.state === 'running'} onClick={() => act(s.name, 'start')} data-testid={`start-${s.name}`}>
                  Start
                </button>
                <button
                  disabled={s.state !== 'running'}
                  onClick={() => confirm(`Stop ${s.name}?`) && act(s.name, 'stop')}
                  data-testid={`stop-${s.name}`}
                >
                  Stop
                </button>
                <button onClick={() => act(s.name, 'restart')}>Restart</button>
              </span>
            ),
          },
        ]}
      />
      {data?.services.some((s) => s.reason) && (
        <ul class="muted">
          {data.services
            .filter((s) => s.reason)
            .map((s) => (
              <li>
                {s.name}: {s.reason}
              </li>
            ))}
        </ul>
      )}
    </>
  );
}

export function Services() {
  return (
    <section>
      <Header title="Services">
        <button onClick={() => api('POST', '/services/batch/start').catch(() => undefined)}>Start all</button>
      </Header>
      <ServiceTable />
    </section>
  );
}
