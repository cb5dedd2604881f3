// The "Updates" card of the settings page: Check asks `POST /version/check` and shows the
// newest version, its notes and artifact (or why no check was made); Download starts
// `POST /version/download` and follows the job live (`update.download.*` events reload
// `GET /version/download`); the verified downloads are listed with the command that
// installs one. Nothing here replaces the running binary.

import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { Err, Table, bytes, useGet, when } from '../ui';

interface Artifact {
  platform: string;
  url: string;
  size: number;
  sha256: string;
}

interface Check {
  current: string;
  update_available: boolean;
  detail: string;
  source?: string | null;
  newest?: string | null;
  released?: string | null;
  notes?: string | null;
  artifact?: Artifact | null;
}

interface Job {
  id: number;
  version: string;
  artifact: Artifact;
  state: 'running' | 'completed' | 'failed';
  received: number;
  percent: number;
  error?: string | null;
}

interface Stored {
  version: string;
  size: number;
  sha256: string;
  downloaded_at: string;
  artifact_url: string;
}

export function Updates() {
  const [check, setCheck] = useState<Check | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const job = useGet<Job | null>('/version/download', ['update.download.']);
  const stored = useGet<Stored[]>('/version/downloads', ['update.download.completed']);
  const run = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      setError((e as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  const j = job.data;
  return (
    <div class="panel" data-testid="updates">
      <h2>Updates</h2>
      <p class="hint">
        Checks the update source of <code>[updates]</code> in the configuration file. A download is verified (SHA-256 and
        minisign signature) and stored; it is installed with <code>bootlane update install</code> on the server, never by itself.
      </p>
      <div class="actions">
        <button type="button" data-testid="updates-check" disabled={busy} onClick={() => run(async () => setCheck(await api<Check>('POST', '/version/check')))}>
          Check for updates
        </button>
        <button
          type="button"
          data-testid="updates-download"
          disabled={busy || !check?.update_available || !check.artifact || j?.state === 'running'}
          onClick={() => run(() => api<Job>('POST', '/version/download', { version: check?.newest }).then(job.reload))}
        >
          Download {check?.update_available && check.newest ? check.newest : ''}
        </button>
      </div>
      <Err msg={error} />
      {check && (
        <div data-testid="updates-result">
          <p role="status">{check.detail}</p>
          <dl>
            <dt>Running</dt>
            <dd>{check.current}</dd>
            {check.newest && (
              <>
                <dt>Newest</dt>
                <dd data-testid="updates-newest">
                  {check.newest}
                  {check.released ? ` (${check.released})` : ''}
                </dd>
              </>
            )}
            {check.artifact && (
              <>
                <dt>Artifact ({check.artifact.platform})</dt>
                <dd>
                  {bytes(check.artifact.size)}, sha256 <code>{check.artifact.sha256}</code>
                </dd>
              </>
            )}
          </dl>
          {check.notes && <pre data-testid="updates-notes">{check.notes}</pre>}
        </div>
      )}
      {j && (
        <div data-testid="updates-job">
          <p>
            Download of {j.version}: <strong data-testid="updates-job-state">{j.state}</strong>, {j.percent}% ({bytes(j.received)} of{' '}
            {bytes(j.artifact.size)})
          </p>
          <progress max={100} value={j.percent} />
          <Err msg={j.error} />
        </div>
      )}
      <Err msg={job.error ?? stored.error} />
      <h3>Downloaded</h3>
      <Table
        testid="updates-stored"
        rows={stored.data ?? undefined}
        empty="No verified downloads."
        cols={[
          { h: 'Version', f: (s) => s.version },
          { h: 'Size', f: (s) => bytes(s.size) },
          { h: 'Downloaded', f: (s) => when(s.downloaded_at) },
          { h: 'Install on the server', f: (s) => <code>sudo bootlane update install {s.version} --config /etc/bootlane/bootlane.toml</code> },
        ]}
      />
    </div>
  );
}
