// Forged requests from another web site, in Debian's Chromium (playwright-core), against a real
// `styx server`: a page served on another origin submits an HTML form — each content type a form
// can send — to POST /api/definitions (importing an administrator) and tries PUT /api/users/{name},
// while the browser holds the operator's credentials: basic auth it cached from a visit to the API,
// basic auth attached to every request, or a console session. Nothing may change.
//
// The attacker's pages come from a second server on loopback, reached both as
// http://127.0.0.1:OTHER (another origin on the same site: the SameSite=Strict session cookie goes
// along) and http://localhost:OTHER (another site).
//
// Chromium is a hard requirement, as for the console's browser tests (console.test.ts).
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { CHROMIUM, MISSING_CHROMIUM } from '../support/ensure-test-deps.ts';
import { launchChromium, logIn, WAIT_MS } from './console-support.ts';

const GUEST_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
const ENCTYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'] as const;

/** HTML-escape for attribute values. */
function attr(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;');
}

/**
 * A page that submits a form to `action` at once. With text/plain the browser sends
 * `name=value\r\n`, so the field's name and value lay out `{"users":[...],"rabbit_version":"=x"}`:
 * valid JSON, and a definitions file importing the administrator `user`.
 */
function formPage(action: string, enctype: string, user: string): string {
  const name = `{"users":[{"name":"${user}","password":"evil","tags":"administrator"}],"permissions":[],"rabbit_version":"`;
  return `<!doctype html><html><body>
<form id="f" method="POST" action="${attr(action)}" enctype="${enctype}">
<input type="hidden" name="${attr(name)}" value="${attr('x"}')}">
</form>
<script>document.getElementById('f').submit();</script>
</body></html>`;
}

/** A page whose script tries PUT (CORS) and POST (no-cors) on /api/users/{user}, with credentials. */
function fetchPage(base: string, user: string): string {
  const url = JSON.stringify(`${base}/api/users/${user}`);
  const body = JSON.stringify(JSON.stringify({ password: 'evil', tags: 'administrator' }));
  return `<!doctype html><html><body><script>
const attempts = [
  fetch(${url}, { method: 'PUT', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body: ${body} }),
  fetch(${url}, { method: 'PUT', credentials: 'include', headers: { 'Content-Type': 'application/json' }, body: ${body} }),
  fetch(${url}, { method: 'POST', mode: 'no-cors', credentials: 'include', body: ${body} }),
];
Promise.allSettled(attempts).then(() => { document.title = 'done'; });
</script></body></html>`;
}

describe('forged cross-site requests in headless Chromium', () => {
  let broker: BrokerProcess | undefined;
  let browser: Browser | undefined;
  let attacker: Server | undefined;
  let base: string;
  let otherPort: number;
  let pages = new Map<string, string>();

  async function userExists(name: string): Promise<boolean> {
    const response = await fetch(`${base}/api/users/${name}`, { headers: { Authorization: GUEST_AUTH } });
    await response.arrayBuffer();
    if (response.status !== 200 && response.status !== 404) throw new Error(`GET user: ${response.status}`);
    return response.status === 200;
  }

  /** Serve `html` from the attacker's server; the path to load it at. */
  function host(html: string): string {
    const path = `/page-${pages.size}`;
    pages.set(path, html);
    return path;
  }

  /**
   * Load an attacker page from `origin` in `page`, and wait until the forged request to `target`
   * has been answered (the form's navigation) or the page's script is done.
   */
  async function attack(page: Page, url: string, target: string): Promise<number | undefined> {
    const answered = page
      .waitForResponse((r) => r.url() === target, { timeout: WAIT_MS })
      .then((r) => r.status())
      .catch(() => undefined);
    await page.goto(url, { timeout: WAIT_MS });
    return answered;
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(MISSING_CHROMIUM);
    broker = await startBroker({ management: true });
    base = broker.managementUrl as string;
    const server = createServer((request, response) => {
      const html = pages.get(request.url ?? '');
      response.writeHead(html === undefined ? 404 : 200, { 'Content-Type': 'text/html; charset=utf-8' });
      response.end(html ?? '');
    });
    attacker = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    otherPort = (server.address() as AddressInfo).port;
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    const server = attacker;
    if (server !== undefined) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    if (broker !== undefined) {
      await broker.stop();
      await broker.cleanup();
    }
    pages = new Map();
  });

  /** The attacker's two origins: another port of the same site, and another site. */
  function origins(): string[] {
    return [`http://127.0.0.1:${otherPort}`, `http://localhost:${otherPort}`];
  }

  /** Every form and fetch attack from both origins in `context`; the users they tried to make. */
  async function everyAttack(context: BrowserContext, label: string): Promise<string[]> {
    const page = await context.newPage();
    const tried: string[] = [];
    try {
      for (const [o, origin] of origins().entries()) {
        for (const [e, enctype] of ENCTYPES.entries()) {
          const user = `evil-${label}-${o}-${e}`;
          tried.push(user);
          const status = await attack(
            page,
            `${origin}${host(formPage(`${base}/api/definitions`, enctype, user))}`,
            `${base}/api/definitions`,
          );
          // Refused: 403 (another origin) or 415 (not JSON) before authentication, or 401.
          expect([label, origin, enctype, status]).toEqual([label, origin, enctype, expect.any(Number)]);
          expect([401, 403, 415]).toContain(status);
        }
        const user = `evil-${label}-${o}-fetch`;
        tried.push(user);
        await page.goto(`${origin}${host(fetchPage(base, user))}`, { timeout: WAIT_MS });
        await page.waitForFunction(() => document.title === 'done', undefined, { timeout: WAIT_MS });
      }
    } finally {
      await page.close();
    }
    return tried;
  }

  it(`needs Debian's Chromium at ${CHROMIUM}`, () => {
    expect(existsSync(CHROMIUM), MISSING_CHROMIUM).toBe(true);
  });

  it('changes nothing with basic auth the browser cached from a visit to the API', async () => {
    const context = await (browser as Browser).newContext();
    try {
      // The operator once opened the API in this browser, credentials in the URL.
      const visit = await context.newPage();
      const url = new URL(`${base}/api/whoami`);
      url.username = 'guest';
      url.password = 'guest';
      await visit.goto(url.href, { timeout: WAIT_MS });
      await visit.close();
      for (const user of await everyAttack(context, 'cached'))
        expect([user, await userExists(user)]).toEqual([user, false]);
    } finally {
      await context.close();
    }
  });

  it('changes nothing when the browser attaches basic auth to every request', async () => {
    const context = await (browser as Browser).newContext({
      extraHTTPHeaders: { Authorization: GUEST_AUTH },
    });
    try {
      for (const user of await everyAttack(context, 'basic'))
        expect([user, await userExists(user)]).toEqual([user, false]);
    } finally {
      await context.close();
    }
  });

  it('changes nothing with a console session open', async () => {
    const context = await (browser as Browser).newContext();
    try {
      const consolePage = await context.newPage();
      await logIn(consolePage, base, 'guest', 'guest');
      for (const user of await everyAttack(context, 'session'))
        expect([user, await userExists(user)]).toEqual([user, false]);
      // The session itself still works for the console.
      await consolePage.reload({ timeout: WAIT_MS });
      await consolePage.waitForSelector('[data-testid=whoami]', { timeout: WAIT_MS });
    } finally {
      await context.close();
    }
  });
});
