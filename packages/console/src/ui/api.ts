// The console's calls to the management API: same-origin fetches carrying the session cookie, the
// session's CSRF token on every state change, and a marker header so a 401 never makes the browser
// show its basic-auth prompt. Paths are built from segments, each percent-encoded, so a queue named
// '../users' or '%2F' is a name, never a path.

/** A refusal of the API, with its `{error, reason}` body when it sent one. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, reason: string) {
    super(reason);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
  }
}

/** The logged-in user, as GET/POST /console/session answer. */
export interface SessionInfo {
  readonly user: string;
  readonly tags: readonly string[];
  readonly csrf_token: string;
  readonly idle_timeout_ms: number;
}

let csrfToken: string | undefined;
let onSessionLost: (() => void) | undefined;

/** Called when the API says the session ended (idle, logged out elsewhere, user changed). */
export function whenSessionLost(handler: () => void): void {
  onSessionLost = handler;
}

/** `/api/` and the segments, each percent-encoded ('/' as a vhost is '%2F'). */
export function apiPath(...segments: readonly string[]): string {
  return `/api/${segments.map(encodeURIComponent).join('/')}`;
}

/** `path` with a query string of the defined, non-empty parameters. */
export function withQuery(
  path: string,
  params: Readonly<Record<string, string | number | boolean | undefined>>,
): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== '') query.set(key, String(value));
  }
  const text = query.toString();
  return text === '' ? path : `${path}?${text}`;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  extra?: Readonly<Record<string, string>>,
): Promise<Response> {
  const headers: Record<string, string> = { ...extra, 'X-Requested-With': 'styx-console' };
  if (method !== 'GET' && csrfToken !== undefined) headers['X-CSRF-Token'] = csrfToken;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? null : JSON.stringify(body),
  });
}

async function refusal(response: Response): Promise<HttpError> {
  let code = 'http_error';
  let reason = `${response.status} ${response.statusText}`;
  try {
    const json = (await response.json()) as { error?: unknown; reason?: unknown };
    if (typeof json.error === 'string') code = json.error;
    if (typeof json.reason === 'string') reason = json.reason;
  } catch {
    // Not JSON: the status line says it.
  }
  return new HttpError(response.status, code, reason);
}

/**
 * Call the API; the JSON reply (undefined for 201/204), or an HttpError. `headers` are extra request
 * headers (a connection close's `X-Reason`).
 */
export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  headers?: Readonly<Record<string, string>>,
): Promise<T> {
  const response = await call(method, path, body, headers);
  if (!response.ok) {
    const error = await refusal(response);
    if (response.status === 401 && path.startsWith('/api/')) onSessionLost?.();
    throw error;
  }
  if (response.status === 204 || response.status === 201) return undefined as T;
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** The browser's current session, or undefined when it has none. */
export async function currentSession(): Promise<SessionInfo | undefined> {
  const response = await call('GET', '/console/session');
  if (response.status === 401) return undefined;
  if (!response.ok) throw await refusal(response);
  const session = (await response.json()) as SessionInfo;
  csrfToken = session.csrf_token;
  return session;
}

export async function logIn(username: string, password: string): Promise<SessionInfo> {
  const response = await call('POST', '/console/session', { username, password });
  if (!response.ok) throw await refusal(response);
  const session = (await response.json()) as SessionInfo;
  csrfToken = session.csrf_token;
  return session;
}

export async function logOut(): Promise<void> {
  const response = await call('DELETE', '/console/session');
  csrfToken = undefined;
  if (!response.ok && response.status !== 401) throw await refusal(response);
}

/** GET a health report: its body whether it passed (200) or not (503, the same shape). */
export async function getReport<T>(path: string): Promise<T> {
  const response = await call('GET', path);
  if (response.status === 200 || response.status === 503) return (await response.json()) as T;
  const error = await refusal(response);
  if (response.status === 401) onSessionLost?.();
  throw error;
}
