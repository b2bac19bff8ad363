// The console's connection and channel pages in Debian's Chromium, against a real `styx server`:
// guest logs in, finds an SDK client on the connections page, opens it (its facts and its channel
// with a consumer), closes it with a typed reason, and the client receives 320 with that reason.
// A monitoring user sees the connection but no close form (closing another's needs administrator).
import { existsSync } from 'node:fs';
import * as amqp from '@styx/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { CHROMIUM, MISSING_CHROMIUM } from '../support/ensure-test-deps.ts';
import type { PageWatch } from './console-support.ts';
import { launchChromium, logIn, shot, WAIT_MS, watchedPage } from './console-support.ts';

it(`needs Debian's Chromium at ${CHROMIUM}`, () => {
  expect(existsSync(CHROMIUM), MISSING_CHROMIUM).toBe(true);
});

describe("the console's connection pages in headless Chromium", () => {
  let broker: BrokerProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let base: string;
  let conn: Awaited<ReturnType<typeof amqp.connect>> | undefined;
  let closed: Promise<(Error & { code?: number }) | undefined>;
  let name: string;
  const watch: PageWatch = { dialogs: [], errors: [] };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(MISSING_CHROMIUM);
    broker = await startBroker({ management: true });
    base = broker.managementUrl as string;
    conn = await amqp.connect(broker.url, { clientProperties: { connection_name: 'billing-worker' } });
    conn.on('error', () => undefined);
    closed = new Promise((resolve) =>
      conn?.once('close', (err) => resolve(err as Error & { code?: number })),
    );
    const ch = await conn.createChannel();
    await ch.assertQueue('invoices', { durable: true });
    await ch.consume('invoices', () => {});
    const response = await fetch(`${base}/api/users/watcher`, {
      method: 'PUT',
      headers: {
        Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ password: 'watcher-pw', tags: ['monitoring'] }),
    });
    expect(response.status).toBe(201);
    browser = await launchChromium();
    page = await watchedPage(browser, watch);
  }, 90_000);

  // The client first (it may already be closed), then the browser, then the node.
  afterAll(async () => {
    const steps = [
      () => conn?.close(),
      () => browser?.close(),
      () => broker?.stop(),
      () => broker?.cleanup(),
    ];
    for (const step of steps) await Promise.resolve(step()).catch(() => undefined);
  });

  it('a monitoring user sees the connection and its channel, without a close form', async () => {
    await logIn(page, base, 'watcher', 'watcher-pw');
    await page.click('nav >> text=Connections');
    const link = page.locator('[data-testid=connections] a').first();
    await link.waitFor({ timeout: WAIT_MS });
    name = (await link.textContent()) as string;
    expect(name).toMatch(/^127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+$/);
    expect(await page.textContent('[data-testid=connections]')).toContain('guest');
    await link.click();
    await page.waitForSelector('[data-testid=connection-channels] >> text=(1)', { timeout: WAIT_MS });
    expect(await page.textContent('table.facts')).toContain('billing-worker');
    expect(await page.locator('button:has-text("Close connection")').count()).toBe(0);
    await page.click('nav >> text=Channels');
    await page.waitForSelector(`[data-testid=channels] >> text=${name} (1)`, { timeout: WAIT_MS });
    await page.click('button:has-text("Log out")');
  });

  it('guest closes the connection with a reason, and the client receives it', async () => {
    await logIn(page, base, 'guest', 'guest');
    await page.click('nav >> text=Connections');
    await page.click(`[data-testid=connections] a:has-text("${name}")`, { timeout: WAIT_MS });
    await page.waitForSelector('button:has-text("Close connection")', { timeout: WAIT_MS });
    await shot(page, 'connection');
    await page.fill('input[name=close-reason]', 'closed from the console test');
    await page.click('button:has-text("Close connection")');
    const error = await closed;
    expect(error?.code).toBe(320);
    expect(error?.message).toContain('closed from the console test');
    // Back on the list, which no longer has it.
    await page.waitForSelector('[data-testid=connections] >> text=No client connections.', {
      timeout: WAIT_MS,
    });
    expect(watch.dialogs).toEqual([]);
    expect(watch.errors).toEqual([]);
  });
});
