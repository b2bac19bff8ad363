/**
 * What the management listener serves outside /api/: the web console.
 *
 *   GET    /                    the console's page (its views live in the URL's fragment)
 *   GET    /console/app.js      the script; /console/app.css the stylesheet (ETag, revalidated)
 *   GET    /console/session     {user, tags, csrf_token} of the browser's session, or 401
 *   POST   /console/session     log in: {username, password} (JSON) → the same, and the cookie
 *   DELETE /console/session     log out (needs the CSRF token)
 *
 * Every reply forbids framing and sniffing, and the page's Content-Security-Policy allows scripts
 * and styles from this origin only: no inline script, so markup injected into the page could not
 * run even if the console failed to escape it (it escapes everything: Preact sets text, never HTML).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CONSOLE_SCRIPT_PATH, CONSOLE_STYLES_PATH, consolePage } from '@styx/console';
import { methodNotAllowed, notFound, serviceUnavailable } from '../api-error.ts';
import type { Json } from '../views.ts';
import type { ConsoleAsset, ConsoleAssets } from './console-assets.ts';
import type { ConsoleAuth, SessionUser } from './console-auth.ts';
import { isTlsRequest, sessionCookie } from './console-auth.ts';

const SESSION_PATH = '/console/session';

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

/** What the server logs of a console request. */
export interface ConsoleOutcome {
  readonly status: number;
  readonly user?: string | undefined;
}

/** Whether `path` is the console's rather than the API's. */
export function isConsolePath(path: string): boolean {
  return path !== '/api' && !path.startsWith('/api/');
}

export class ConsoleRoutes {
  private readonly auth: ConsoleAuth;
  private readonly assets: ConsoleAssets;

  constructor(auth: ConsoleAuth, assets: ConsoleAssets) {
    this.auth = auth;
    this.assets = assets;
  }

  /** Serve a console path; refusals are thrown as ApiErrors (the server sends them as JSON). */
  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<ConsoleOutcome> {
    const method = request.method ?? 'GET';
    if (path === SESSION_PATH) return this.session(method, request, response);
    if (path === '/' || path === '/index.html') {
      if (method !== 'GET') throw methodNotAllowed(method, ['GET']);
      const page = consolePage();
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Length': Buffer.byteLength(page),
        'Cache-Control': 'no-cache',
      });
      response.end(page);
      return { status: 200 };
    }
    if (path === CONSOLE_SCRIPT_PATH || path === CONSOLE_STYLES_PATH) {
      if (method !== 'GET') throw methodNotAllowed(method, ['GET']);
      let built: Awaited<ReturnType<ConsoleAssets['get']>>;
      try {
        built = await this.assets.get();
      } catch (err) {
        throw serviceUnavailable(`the console could not be built: ${(err as Error).message}`);
      }
      return sendAsset(request, response, path === CONSOLE_SCRIPT_PATH ? built.script : built.styles);
    }
    if (path === '/favicon.ico') {
      response.writeHead(204, SECURITY_HEADERS);
      response.end();
      return { status: 204 };
    }
    throw notFound('no such page');
  }

  private async session(
    method: string,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<ConsoleOutcome> {
    const maxAge = this.auth.sessions.maxAgeMs;
    switch (method) {
      case 'GET': {
        const live = this.auth.sessionOf(request);
        if (live === undefined) {
          sendJson(response, 401, { error: 'not_authorised', reason: 'not logged in' });
          return { status: 401 };
        }
        sendJson(response, 200, sessionJson(live, this.auth.sessions.idleMs));
        return { status: 200, user: live.user.name };
      }
      case 'POST': {
        const live = await this.auth.login(request);
        sendJson(response, 200, sessionJson(live, this.auth.sessions.idleMs), {
          'Set-Cookie': sessionCookie(live.session, maxAge, isTlsRequest(request)),
        });
        return { status: 200, user: live.user.name };
      }
      case 'DELETE': {
        this.auth.logout(request);
        response.writeHead(204, {
          ...SECURITY_HEADERS,
          'Set-Cookie': sessionCookie(undefined, maxAge, isTlsRequest(request)),
        });
        response.end();
        return { status: 204 };
      }
      default:
        throw methodNotAllowed(method, ['GET', 'POST', 'DELETE']);
    }
  }
}

function sessionJson(live: SessionUser, idleMs: number): Json {
  return {
    user: live.user.name,
    tags: [...live.user.tags],
    csrf_token: live.session.csrfToken,
    idle_timeout_ms: idleMs,
  };
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: Json,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
  });
  response.end(text);
}

function sendAsset(request: IncomingMessage, response: ServerResponse, asset: ConsoleAsset): ConsoleOutcome {
  const headers = { ...SECURITY_HEADERS, ETag: asset.etag, 'Cache-Control': 'no-cache' };
  if (request.headers['if-none-match'] === asset.etag) {
    response.writeHead(304, headers);
    response.end();
    return { status: 304 };
  }
  response.writeHead(200, {
    ...headers,
    'Content-Type': asset.contentType,
    'Content-Length': Buffer.byteLength(asset.body),
  });
  response.end(asset.body);
  return { status: 200 };
}
