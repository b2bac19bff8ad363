/**
 * What keeps another web site from changing the broker through a browser that can reach the
 * management listener. Three rules, applied by the server to every state-changing request
 * (anything but GET and HEAD) under /api/ and to the console's own (log in, log out), before
 * authentication and whatever the means of authentication:
 *
 * 1. A body must be `application/json` (415 otherwise, as RabbitMQ answers; a body without a
 *    `Content-Type` too). An HTML form can only send `text/plain`, `application/x-www-form-urlencoded`
 *    or `multipart/form-data`, and a cross-site script cannot send JSON without a CORS preflight this
 *    listener never grants. Without this rule `<form enctype="text/plain">` can lay out
 *    `{"users":[...]}` and import an administrator.
 * 2. A request that says it comes from elsewhere is refused (403): an `Origin` whose host is not the
 *    request's `Host`, or `Sec-Fetch-Site: cross-site`/`same-site` (another port or subdomain is
 *    another origin). Basic auth is held to this as much as a console session: a browser that once
 *    answered a basic-auth prompt attaches those credentials to every request to this origin,
 *    including a form another site submits. Tools (styx ctl, curl, rabbitmqadmin) send neither header.
 * 3. A 401 to a browser (a request carrying `Sec-Fetch-Site` or `Sec-Fetch-Dest`, which every
 *    current browser sends and tools do not) carries no `WWW-Authenticate` challenge, so the browser
 *    never prompts and never caches basic credentials for the listener — the ambient authority rule
 *    2 guards against is not created in the first place. People use the console's login (a session
 *    with a CSRF token) in a browser; tools keep getting RabbitMQ's challenge.
 */
import type { IncomingMessage } from 'node:http';
import { forbidden, unsupportedMediaType } from './api-error.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** Whether `method` may change state (the rules above apply to it). */
export function isStateChanging(method: string): boolean {
  return !SAFE_METHODS.has(method);
}

/**
 * 415 unless the request's body, if it has one, is declared `application/json`. A declared
 * non-JSON type is refused even with an empty body: a form post with no fields is still a form.
 */
export function checkJsonBody(request: IncomingMessage): void {
  const type = request.headers['content-type'];
  const length = request.headers['content-length'];
  const hasBody =
    request.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) !== 0);
  if (type === undefined) {
    if (hasBody)
      throw unsupportedMediaType("a request body must be sent as 'Content-Type: application/json'");
    return;
  }
  const media = (type.split(';')[0] ?? '').trim().toLowerCase();
  if (media !== 'application/json') {
    throw unsupportedMediaType(
      `unsupported content type '${media}': request bodies must be 'application/json'`,
    );
  }
}

/** 403 when the request says it comes from another origin (`Origin`, `Sec-Fetch-Site`). */
export function checkSameOrigin(request: IncomingMessage): void {
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') {
    throw forbidden(`cross-origin request refused (Sec-Fetch-Site: ${site})`);
  }
  const origin = request.headers.origin;
  if (origin !== undefined && originHost(origin) !== request.headers.host?.toLowerCase()) {
    throw forbidden(`cross-origin request refused (Origin: ${origin})`);
  }
}

/** Whether the request comes from a browser (Fetch Metadata headers; tools do not send them). */
export function isBrowserRequest(request: IncomingMessage): boolean {
  return request.headers['sec-fetch-site'] !== undefined || request.headers['sec-fetch-dest'] !== undefined;
}

/** The `host[:port]` of an Origin header; undefined for `null` or anything unparsable. */
function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return undefined;
  }
}
