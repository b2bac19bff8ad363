// The web console's server side through a real ManagementServer and broker: the page and its
// bundle, login with the broker's users, the session cookie, CSRF checks on the API, logout.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManagementHarness } from '../test-support/management-harness.ts';

let harness: ManagementHarness;
let base: string;

beforeEach(async () => {
  harness = await ManagementHarness.start('console-test');
  base = harness.server.url as string;
});

afterEach(async () => {
  await harness.stop();
});

const GUEST_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

interface Login {
  readonly cookie: string;
  readonly csrf: string;
  readonly setCookie: string;
}

async function login(username: string, password: string): Promise<Login> {
  const response = await fetch(`${base}/console/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  expect(response.status).toBe(200);
  const setCookie = response.headers.get('set-cookie') ?? '';
  const body = (await response.json()) as { user: string; csrf_token: string };
  expect(body.user).toBe(username);
  return { cookie: setCookie.split(';')[0] as string, csrf: body.csrf_token, setCookie };
}

function call(
  path: string,
  init: { method?: string; cookie?: string; csrf?: string; origin?: string; body?: unknown },
) {
  const headers: Record<string, string> = {};
  if (init.cookie !== undefined) headers.Cookie = init.cookie;
  if (init.csrf !== undefined) headers['X-CSRF-Token'] = init.csrf;
  if (init.origin !== undefined) headers.Origin = init.origin;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}

describe('the console page and bundle', () => {
  it('serves the page at / with a strict Content-Security-Policy, and the built script and stylesheet with ETags', async () => {
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console/app.js">');
    expect(html).not.toMatch(/<script>|<style>/);

    const script = await fetch(`${base}/console/app.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    const etag = script.headers.get('etag') as string;
    expect((await script.text()).length).toBeGreaterThan(10_000);
    const again = await fetch(`${base}/console/app.js`, { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    const styles = await fetch(`${base}/console/app.css`);
    expect(styles.status).toBe(200);
    expect(await styles.text()).toContain('.badge');
  });

  it('answers 404 for other paths and 405 for other methods', async () => {
    expect((await fetch(`${base}/console/nothing.js`)).status).toBe(404);
    expect((await fetch(`${base}/`, { method: 'POST' })).status).toBe(405);
  });
});

describe('login', () => {
  it('sets an HttpOnly, SameSite=Strict session cookie and answers the user, tags and CSRF token', async () => {
    const { setCookie, cookie } = await login('guest', 'guest');
    expect(setCookie).toMatch(
      /^styx_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
    );
    const session = await call('/console/session', { cookie });
    expect(session.status).toBe(200);
    expect(await session.json()).toMatchObject({ user: 'guest', tags: ['administrator'] });
  });

  it('refuses a wrong password with 401 and no basic-auth challenge (the browser must not prompt)', async () => {
    const response = await fetch(`${base}/console/session`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'guest', password: 'wrong' }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect(response.headers.get('set-cookie')).toBeNull();
  });

  it('refuses users without a management tag with 403', async () => {
    await harness.makeUser('app', []);
    await harness.makeUser('other', ['impersonator']);
    for (const name of ['app', 'other']) {
      const response = await fetch(`${base}/console/session`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: name, password: `${name}-pw` }),
      });
      expect(response.status).toBe(403);
    }
    for (const tag of ['monitoring', 'management', 'policymaker']) {
      await harness.makeUser(`u-${tag}`, [tag]);
      await login(`u-${tag}`, `u-${tag}-pw`);
    }
  });

  it('refuses a login that is not JSON (a cross-site form cannot send one) with 415, or is malformed, with 400', async () => {
    const form = await fetch(`${base}/console/session`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'username=guest&password=guest',
    });
    expect(form.status).toBe(415);
    for (const body of [
      '{',
      '[]',
      '{"username":"guest"}',
      JSON.stringify({ username: 'guest', password: 'x'.repeat(2000) }),
    ]) {
      const response = await fetch(`${base}/console/session`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe('bad_request');
    }
  });
});

describe('the API with a session', () => {
  it('takes reads with the cookie alone', async () => {
    const { cookie } = await login('guest', 'guest');
    const whoami = await call('/api/whoami', { cookie });
    expect(whoami.status).toBe(200);
    expect(await whoami.json()).toEqual({ name: 'guest', tags: ['administrator'] });
  });

  it('refuses a change without the CSRF token, with a wrong one, or from another origin (403), and takes it with the token', async () => {
    const { cookie, csrf } = await login('guest', 'guest');
    const body = { pattern: '.*', definition: { 'dead-letter-exchange': 'dlx' } };
    expect((await call('/api/policies/%2F/DLX', { method: 'PUT', cookie, body })).status).toBe(403);
    expect(
      (await call('/api/policies/%2F/DLX', { method: 'PUT', cookie, body, csrf: `${csrf}x` })).status,
    ).toBe(403);
    const other = await call('/api/policies/%2F/DLX', {
      method: 'PUT',
      cookie,
      body,
      csrf,
      origin: 'http://evil.example',
    });
    expect(other.status).toBe(403);
    expect(harness.broker.metadataView.policy('/', 'DLX')).toBeUndefined();
    const made = await call('/api/policies/%2F/DLX', { method: 'PUT', cookie, body, csrf, origin: base });
    expect(made.status).toBe(201);
    expect(harness.broker.metadataView.policy('/', 'DLX')?.definition).toEqual({
      'dead-letter-exchange': 'dlx',
    });
  });

  it('answers an unknown or ended session 401 without a basic-auth challenge', async () => {
    const stale = await call('/api/whoami', { cookie: 'styx_session=forged' });
    expect(stale.status).toBe(401);
    expect(stale.headers.get('www-authenticate')).toBeNull();
    // No cookie at all is a tool without credentials: the basic challenge, as before; unless it is
    // the console's own fetch (after logout), which must not make the browser prompt.
    const none = await call('/api/whoami', {});
    expect(none.headers.get('www-authenticate')).toBe('Basic realm="Styx Management"');
    const console = await fetch(`${base}/api/whoami`, { headers: { 'X-Requested-With': 'styx-console' } });
    expect(console.status).toBe(401);
    expect(console.headers.get('www-authenticate')).toBeNull();
  });

  it('ends the session at logout (which needs the CSRF token too)', async () => {
    const { cookie, csrf } = await login('guest', 'guest');
    expect((await call('/console/session', { method: 'DELETE', cookie })).status).toBe(403);
    const out = await call('/console/session', { method: 'DELETE', cookie, csrf });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    expect((await call('/api/whoami', { cookie })).status).toBe(401);
    expect((await call('/console/session', { cookie })).status).toBe(401);
  });

  it('ends the session when the user changes password, loses its management tags, or is deleted', async () => {
    await harness.makeUser('ops', ['administrator']);
    const put = (body: unknown) =>
      fetch(`${base}/api/users/ops`, {
        method: 'PUT',
        headers: { Authorization: GUEST_AUTH, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    let { cookie } = await login('ops', 'ops-pw');
    expect((await put({ password: 'changed' })).status).toBe(204);
    expect((await call('/api/whoami', { cookie })).status).toBe(401);

    ({ cookie } = await login('ops', 'changed'));
    expect((await put({ tags: [] })).status).toBe(204);
    expect((await call('/api/whoami', { cookie })).status).toBe(401);

    expect((await put({ tags: ['monitoring'] })).status).toBe(204);
    ({ cookie } = await login('ops', 'changed'));
    await fetch(`${base}/api/users/ops`, { method: 'DELETE', headers: { Authorization: GUEST_AUTH } });
    expect((await call('/api/whoami', { cookie })).status).toBe(401);
  });

  it('lets basic auth through without a CSRF token (tools), even beside a cookie', async () => {
    const { cookie } = await login('guest', 'guest');
    const response = await fetch(`${base}/api/vhosts/tools`, {
      method: 'PUT',
      headers: { Authorization: GUEST_AUTH, Cookie: cookie },
    });
    expect(response.status).toBe(201);
  });
});
