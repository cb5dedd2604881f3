// The only way the UI talks to the server: JSON over `/api/v1` with the session cookie
// (same-origin credentials). Every answer is the envelope `{success, data}` or
// `{success: false, error}`; errors become `ApiError`. A 401 anywhere sends the user to
// the login page with `?next=` set to where they were.

export const BASE = '/api/v1';

/** A failed API call: the HTTP status, the server's `error` text and the rest of the
 * error envelope (machine-readable hints such as `otp_required`). */
export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    public detail: Record<string, unknown> = {},
  ) {
    super(message);
  }
  /**
   * The form field the message names, if any of `fields`: first a keyed field
   * (`dhcp@<cidr>`) whose key the message contains, then a quoted name or a JSON
   * path's last key (`'name' is required`, `subnets[0].router: invalid ...`), else the
   * first bare key with an underscore (`lease_time_secs must be at least 60`), else the
   * first bare field name (`router 10.1.1.1 is not inside ...`, `subnets[0].dns[1]`).
   */
  field(fields: string[]): string | undefined {
    // Keyed fields (`dhcp@10.78.0.0/24`): the message names the key (the subnet).
    const keyed = fields.find((f) => f.includes('@') && this.message.includes(f.slice(f.indexOf('@') + 1)));
    if (keyed) return keyed;
    for (const m of this.message.matchAll(/'([a-z_]+)'|\b([a-z_]+):/g)) {
      const f = m[1] ?? m[2];
      if (fields.includes(f)) return f;
    }
    const words = [...this.message.matchAll(/[a-z_]+/g)].map((m) => m[0]);
    return words.find((w) => w.includes('_') && fields.includes(w)) ?? words.find((w) => fields.includes(w));
  }
}

let navigate: (url: string) => void = (url) => {
  location.assign(url);
};

/** Set by the app shell so redirects go through the client-side router. */
export function setNavigate(f: (url: string) => void) {
  navigate = f;
}

/** The login page URL that leads back to the current page. */
export function loginUrl(): string {
  const here = location.pathname + location.search;
  return here.startsWith('/login') ? here : `/login?next=${encodeURIComponent(here)}`;
}

/** Sends the user to the login page (after a 401), remembering where they were. */
export function toLogin() {
  if (!location.pathname.startsWith('/login')) navigate(loginUrl());
}

/** Calls `method path` under `/api/v1` and returns the envelope's `data`. */
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  let resp: Response;
  try {
    resp = await fetch(BASE + path, init);
  } catch (e) {
    throw new ApiError(0, `the server did not answer (${(e as Error).message})`);
  }
  let env: { success?: boolean; data?: T; error?: string } = {};
  try {
    env = await resp.json();
  } catch {
    /* non-JSON answer: handled below */
  }
  if (resp.status === 401 && !path.startsWith('/auth/login')) {
    toLogin();
  }
  // `[auth.totp] required_for_admins`: this session may only enrol a second factor.
  if (resp.status === 403 && env.error?.startsWith('enrol a second factor first') && !location.pathname.startsWith('/account')) {
    navigate('/account');
  }
  if (!resp.ok || env.success === false) {
    throw new ApiError(resp.status, env.error ?? `${method} ${path} answered ${resp.status}`, env as Record<string, unknown>);
  }
  return env.data as T;
}

/** A GET whose success is plain text (an iPXE script, a PXELINUX menu); errors are the envelope. */
export async function apiText(path: string): Promise<string> {
  let resp: Response;
  try {
    resp = await fetch(BASE + path, { credentials: 'same-origin' });
  } catch (e) {
    throw new ApiError(0, `the server did not answer (${(e as Error).message})`);
  }
  const text = await resp.text();
  if (resp.status === 401) toLogin();
  if (!resp.ok) {
    let msg = `GET ${path} answered ${resp.status}`;
    try {
      msg = JSON.parse(text).error ?? msg;
    } catch {
      /* not the envelope */
    }
    throw new ApiError(resp.status, msg);
  }
  return text;
}

/** `?a=1&b=2` from an object, skipping empty values. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}
