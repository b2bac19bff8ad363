// The operator's web console in Debian's Chromium (playwright-core), against a real `styx server`:
// log in; make the guide's DLX policy on the policies page and see the queue's DLX badge say it
// came from that policy; reject a message and find it in the dead-letter inspector with its x-death
// decoded; redrive it (dry run, then real) and consume it from its source queue; a
// monitoring-tagged user sees no button that changes anything and the API refuses it too; a queue
// name and a body carrying markup render as text and no dialog ever opens. Screenshots of every
// page land in test/browser/screenshots/ (git-ignored) for people to look at.
//
// Chromium is a hard requirement, as for the SDK's browser test (browser-sdk.test.ts).
import { existsSync } from 'node:fs';
import * as amqp from '@styx/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { CHROMIUM, MISSING_CHROMIUM } from '../support/ensure-test-deps.ts';
import type { PageWatch } from './console-support.ts';
import { launchChromium, logIn, shot, WAIT_MS, waitFor, watchedPage } from './console-support.ts';

const HOSTILE_QUEUE = '<script>alert(1)</script>';
const HOSTILE_BODY = '"><img src=x onerror=alert(1)>';
const GUEST_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

it(`needs Debian's Chromium at ${CHROMIUM}`, () => {
  expect(existsSync(CHROMIUM), MISSING_CHROMIUM).toBe(true);
});

describe('the web console in headless Chromium', () => {
  let broker: BrokerProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let base: string;
  let conn: Awaited<ReturnType<typeof amqp.connect>> | undefined;
  const watch: PageWatch = { dialogs: [], errors: [] };
  const { dialogs } = watch;

  /** A management API call as guest with basic auth (setup only; the UI uses its session). */
  async function admin(method: string, path: string, body?: unknown): Promise<number> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        Authorization: GUEST_AUTH,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await response.arrayBuffer();
    return response.status;
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(MISSING_CHROMIUM);
    broker = await startBroker({ management: true });
    base = broker.managementUrl as string;
    conn = await amqp.connect(broker.url);
    const ch = await conn.createChannel();
    await ch.assertExchange('my-dlx', 'fanout', { durable: true });
    await ch.assertQueue('orders', { durable: true });
    await ch.assertQueue('orders.dlq', { durable: true });
    await ch.bindQueue('orders.dlq', 'my-dlx', '');
    await ch.assertQueue(HOSTILE_QUEUE, { durable: true });
    await ch.close();
    expect(await admin('PUT', '/api/users/watcher', { password: 'watcher-pw', tags: ['monitoring'] })).toBe(
      201,
    );
    expect(await admin('PUT', '/api/users/nobody', { password: 'nobody-pw', tags: [] })).toBe(201);
    browser = await launchChromium();
    page = await watchedPage(browser, watch);
  }, 90_000);

  afterAll(async () => {
    await conn?.close().catch(() => undefined);
    await browser?.close();
    if (broker !== undefined) {
      await broker.stop();
      await broker.cleanup();
    }
  });

  // A failed step leaves a picture of where the page was.
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page !== undefined) {
      await shot(page, `failed-${ctx.task.name.slice(0, 40).replace(/[^a-z0-9]+/gi, '-')}`).catch(
        () => undefined,
      );
    }
  });

  it('refuses a wrong password and a user without a management tag, then logs guest in', async () => {
    await page.goto(`${base}/`, { timeout: WAIT_MS });
    await page.waitForSelector('form.login', { timeout: WAIT_MS });
    await shot(page, '01-login');
    for (const [user, password, text] of [
      ['guest', 'wrong', 'Login failed'],
      ['nobody', 'nobody-pw', 'none of the tags'],
    ] as const) {
      await page.fill('input[name=username]', user);
      await page.fill('input[name=password]', password);
      await page.click('button[type=submit]');
      await page.waitForSelector(`.error:has-text("${text}")`, { timeout: WAIT_MS });
    }
    await logIn(page, base, 'guest', 'guest');
    expect(await page.textContent('[data-testid=whoami]')).toBe('guest');
    // The session cookie is out of reach of the page's scripts.
    expect(await page.evaluate(() => document.cookie)).toBe('');
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === 'styx_session')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
    });
    await page.waitForSelector('text=Queued messages', { timeout: WAIT_MS });
    await shot(page, '02-overview');
  });

  it("makes the guide's DLX policy on the policies page, and the queues page shows the DLX as the policy's", async () => {
    await page.click('nav >> text=Policies');
    await page.click("text=Start from the guide's DLX policy", { timeout: WAIT_MS });
    // Only the work queue: the DLQ itself dead-letters nowhere.
    await page.fill('input[name=policy-pattern]', '^orders$');
    await page.click('button:has-text("Save policy")');
    await page.waitForSelector("text=Policy 'DLX' saved.", { timeout: WAIT_MS });
    await page.waitForSelector('[data-testid=policies] td:has-text("^orders$")', { timeout: WAIT_MS });
    await shot(page, '03-policies');

    await page.click('nav >> text=Queues');
    const badge = page.locator('tr:has([data-queue="orders"]) [data-badge=DLX]');
    await badge.waitFor({ timeout: WAIT_MS });
    expect(await badge.textContent()).toBe('DLX my-dlx ← policy DLX');
    expect(await page.locator('tr:has([data-queue="orders.dlq"]) [data-badge=DLX]').count()).toBe(0);
    await shot(page, '04-queues');
  });

  it('shows a queue name and a message body carrying markup as text, and no dialog opens', async () => {
    const link = page.locator('[data-testid=queues] a[data-queue]', { hasText: 'script' });
    expect(await link.textContent()).toBe(HOSTILE_QUEUE);
    expect(await page.locator('main script').count()).toBe(0);
    await link.click();
    await page.waitForSelector(`h1:has-text("${'Queue <script>'}")`, { timeout: WAIT_MS });
    expect(await page.textContent('h1')).toBe(`Queue ${HOSTILE_QUEUE}`);
    await shot(page, '05-hostile-queue');
    expect(dialogs).toEqual([]);
  });

  it('finds a rejected message in the inspector with its x-death decoded, then redrives it (dry run, then real) back to orders', async () => {
    const ch = await (conn as Awaited<ReturnType<typeof amqp.connect>>).createChannel();
    ch.sendToQueue('orders', Buffer.from(HOSTILE_BODY), {
      headers: { 'x-note': HOSTILE_QUEUE },
      contentType: 'text/plain',
    });
    const got = await waitFor(async () => (await ch.get('orders')) || undefined);
    ch.reject(got, false);
    await waitFor(async () => ((await ch.checkQueue('orders.dlq')).messageCount === 1 ? true : undefined));

    // The hostile queue's page is still showing: a hash change swaps the page only once the new
    // queue's info arrived, and until then its effective configuration (all defaults) is the one found.
    await page.goto(`${base}/#/queue/${encodeURIComponent('/')}/orders`);
    await page.waitForSelector('h1:text-is("Queue orders")', { timeout: WAIT_MS });
    await page.waitForSelector('[data-testid=effective-config]', { timeout: WAIT_MS });
    const dlxRow = page.locator('[data-testid=effective-config] tr', { hasText: 'dead-letter exchange' });
    expect(await dlxRow.locator('.badge').textContent()).toBe('policy DLX');
    await page.waitForSelector('text=rejected 1', { timeout: WAIT_MS });
    // The explain panel: the DLX from the policy, and a rejected message dead-lettered.
    const explain = page.locator('[data-testid=explain]');
    await explain.waitFor({ timeout: WAIT_MS });
    expect(
      await explain.locator('table.facts tr', { hasText: 'Dead-letter exchange' }).textContent(),
    ).toContain('my-dlx policy DLX');
    const rejected = page.locator('[data-testid=explain-reasons] tr', { hasText: 'rejected' }).first();
    expect(await rejected.locator('.badge').textContent()).toBe('dead lettered');
    await shot(page, '06-queue');

    await page.goto(`${base}/#/inspect/${encodeURIComponent('/')}/orders.dlq`);
    const row = page.locator('[data-testid=messages] tbody tr').first();
    await row.waitFor({ timeout: WAIT_MS });
    expect(await row.textContent()).toContain('rejected');
    await row.locator('button.linkish').click();
    const xdeath = page.locator('[data-testid=x-death] tbody tr').first();
    await xdeath.waitFor({ timeout: WAIT_MS });
    const cells = await xdeath.locator('td').allTextContents();
    expect(cells.slice(0, 5)).toEqual(['rejected', 'orders', '(default)', 'orders', '1']);
    expect(await page.textContent('[data-testid=body]')).toBe(HOSTILE_BODY);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('.message-detail').textContent()).toContain(HOSTILE_QUEUE);
    await shot(page, '07-inspector');

    await page.click('text=Redrive these…');
    await page.waitForSelector('[data-testid=sources]:has-text("orders (1)")', { timeout: WAIT_MS });
    await page.click('button:has-text("Dry run")');
    const dry = page.locator('[data-testid=redrive-dry] [data-testid=redrive-counts]');
    await dry.waitFor({ timeout: WAIT_MS });
    expect(await dry.textContent()).toContain('would move 1');
    expect((await ch.checkQueue('orders.dlq')).messageCount).toBe(1);
    await page.click('button.primary:has-text("Redrive")');
    await page.waitForSelector('[data-testid=redrive-real]:has-text("done")', { timeout: WAIT_MS });
    expect(await page.textContent('[data-testid=redrive-real] [data-testid=redrive-counts]')).toContain(
      'moved 1',
    );
    await shot(page, '08-redrive');
    const back = await waitFor(async () => (await ch.get('orders')) || undefined);
    expect(back.content.toString()).toBe(HOSTILE_BODY);
    ch.ack(back);
    expect((await ch.checkQueue('orders.dlq')).messageCount).toBe(0);
    await ch.close();
    expect(dialogs).toEqual([]);
  });

  it('shows exchanges and bindings, nodes, and users', async () => {
    await page.click('nav >> text=Exchanges');
    await page.waitForSelector('[data-testid=bindings] td:has-text("my-dlx")', { timeout: WAIT_MS });
    await shot(page, '09-exchanges');
    await page.click('nav >> text=Nodes');
    await page.waitForSelector('[data-testid=nodes] tbody tr', { timeout: WAIT_MS });
    await page.click('text=Check queue replicas');
    await page.waitForSelector('text=Checked every replicated queue.', { timeout: WAIT_MS });
    await shot(page, '10-nodes');
    await page.click('nav >> text=Users & vhosts');
    await page.waitForSelector('[data-testid=users] td:has-text("watcher")', { timeout: WAIT_MS });
    await shot(page, '11-users');
  });

  it('gives a monitoring user no button that changes anything, and the API refuses its changes', async () => {
    const p = await watchedPage(browser as Browser, watch);
    try {
      await logIn(p, base, 'watcher', 'watcher-pw');
      expect(await p.locator('nav a').allTextContents()).toEqual([
        'Overview',
        'Nodes',
        'Connections',
        'Channels',
        'Queues',
        'Exchanges',
      ]);
      await p.goto(`${base}/#/queues`);
      await p.waitForSelector('[data-testid=queues] [data-queue="orders"]', { timeout: WAIT_MS });
      expect(await p.locator('text=Add a queue').count()).toBe(0);
      await p.goto(`${base}/#/queue/${encodeURIComponent('/')}/orders`);
      await p.waitForSelector('[data-testid=effective-config]', { timeout: WAIT_MS });
      for (const label of ['Purge', 'Delete queue', 'Redrive…']) {
        expect(await p.locator(`main >> text="${label}"`).count()).toBe(0);
      }
      await shot(p, '12-monitoring-queue');
      await p.goto(`${base}/#/exchanges`);
      await p.waitForSelector('[data-testid=exchanges] tbody tr', { timeout: WAIT_MS });
      expect(await p.locator('main button:not(.linkish)').count()).toBe(0);
      await p.goto(`${base}/#/policies`);
      await p.waitForSelector('h1', { timeout: WAIT_MS });
      expect(await p.locator('text=Save policy').count()).toBe(0);

      // The API, with this session and its valid CSRF token, refuses every change.
      const statuses = await p.evaluate(async () => {
        const session = (await (await fetch('/console/session')).json()) as { csrf_token: string };
        const headers = { 'X-CSRF-Token': session.csrf_token, 'Content-Type': 'application/json' };
        const call = async (method: string, path: string, body?: unknown) =>
          (await fetch(path, { method, headers, body: body === undefined ? null : JSON.stringify(body) }))
            .status;
        return [
          await call('PUT', '/api/policies/%2F/sneaky', { pattern: '.*', definition: { 'max-length': 1 } }),
          await call('DELETE', '/api/policies/%2F/DLX'),
          await call('PUT', '/api/queues/%2F/sneaky', { durable: true }),
          await call('DELETE', '/api/queues/%2F/orders'),
          await call('PUT', '/api/users/sneaky', { password: 'x', tags: ['administrator'] }),
          await call('POST', '/api/queues/%2F/orders.dlq/redrive', { target: 'source' }),
        ];
      });
      for (const status of statuses) expect([401, 403]).toContain(status);
      expect(await admin('GET', '/api/policies/%2F/DLX')).toBe(200);
      expect(await admin('GET', '/api/queues/%2F/orders')).toBe(200);
      expect(await admin('GET', '/api/queues/%2F/sneaky')).toBe(404);
    } finally {
      await p.context().close();
    }
  });

  it('logs out: the session is gone, the API refuses it, and no page error or dialog happened', async () => {
    await page.click('button:has-text("Log out")');
    await page.waitForSelector('form.login', { timeout: WAIT_MS });
    const status = await page.evaluate(
      async () => (await fetch('/api/overview', { headers: { 'X-Requested-With': 'styx-console' } })).status,
    );
    expect(status).toBe(401);
    expect(dialogs).toEqual([]);
    expect(watch.errors).toEqual([]);
  });
});
