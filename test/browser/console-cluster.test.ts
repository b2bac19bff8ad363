// The web console on a 3-node cluster, in Debian's Chromium: the console of a node that does not
// lead the dead-letter queue lists the members and the queue's leader, shows the DLQ's message
// (browsed on its leader), and redrives it (dry run, then real) back to its source queue, where a
// consumer gets it. Screenshots of the nodes, queues, inspector and redrive pages as seen from that
// node go to test/browser/screenshots/ (git-ignored).
import { existsSync } from 'node:fs';
import * as amqp from '@styx/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { CHROMIUM, MISSING_CHROMIUM } from '../support/ensure-test-deps.ts';
import { eventually } from '../support/eventually.ts';
import type { PageWatch } from './console-support.ts';
import { launchChromium, logIn, shot, WAIT_MS, waitFor, watchedPage } from './console-support.ts';

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

it(`needs Debian's Chromium at ${CHROMIUM}`, () => {
  expect(existsSync(CHROMIUM), MISSING_CHROMIUM).toBe(true);
});

describe('the web console of one node of a 3-node cluster', () => {
  let cluster: TestCluster | undefined;
  let browser: Browser | undefined;
  let conn: Connection | undefined;
  const watch: PageWatch = { dialogs: [], errors: [] };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(MISSING_CHROMIUM);
    cluster = await TestCluster.start(3);
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await conn?.close().catch(() => undefined);
    await browser?.close();
    await cluster?.stop();
  }, 60_000);

  it('shows and redrives a dead-letter queue led by another node', async () => {
    const c = cluster as TestCluster;
    conn = await amqp.connect(c.nodes.map((n) => c.url(n.name)));
    conn.on('error', () => undefined);
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue('cc.dlq', { durable: true });
    await ch.assertQueue('cc.work', {
      durable: true,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'cc.dlq',
    });
    ch.sendToQueue('cc.work', Buffer.from('bounced'), { persistent: true });
    await ch.waitForConfirms();
    const got = await waitFor(async () => (await ch.get('cc.work')) || undefined);
    ch.reject(got, false);
    await waitFor(async () => ((await ch.checkQueue('cc.dlq')).messageCount === 1 ? true : undefined));

    let leader = await c.leaderOf('cc.dlq');
    const viewer = c.nodes.find((n) => n.name !== leader)?.name as string;
    const base = c.node(viewer).broker.managementUrl as string;
    const page: Page = await watchedPage(browser as Browser, watch);
    await logIn(page, base, 'guest', 'guest');

    await page.goto(`${base}/#/nodes`);
    await page.waitForSelector('[data-testid=nodes] tbody tr:nth-child(3)', { timeout: WAIT_MS });
    const rows = await page.locator('[data-testid=nodes] tbody tr').allTextContents();
    expect(rows.map((r) => r.slice(0, 2)).sort()).toEqual(['n1', 'n2', 'n3']);
    for (const row of rows) expect(row).toContain('online');
    expect(rows.find((r) => r.startsWith(viewer))).toContain('(this node)');
    await shot(page, 'cluster-01-nodes');

    await page.goto(`${base}/#/queues`);
    const dlqRow = page.locator('tr:has([data-queue="cc.dlq"])');
    await dlqRow.waitFor({ timeout: WAIT_MS });
    // The row names the queue's leader with every replica online. The leader is read again on each
    // poll: the cluster's rebalance, 10 s after the last member joined, may move it meanwhile.
    await eventually(
      'the DLQ row to show its leader with 3/3 replicas online',
      async () => {
        leader = await c.leaderOf('cc.dlq');
        return ((await dlqRow.textContent()) ?? '').includes(`${leader} (3/3 online)`);
      },
      WAIT_MS,
    );
    await shot(page, 'cluster-02-queues');

    await page.goto(`${base}/#/inspect/${encodeURIComponent('/')}/cc.dlq`);
    await page.waitForSelector(`text=read on ${leader}`, { timeout: WAIT_MS });
    const message = page.locator('[data-testid=messages] tbody tr').first();
    expect(await message.textContent()).toContain('cc.work');
    await shot(page, 'cluster-03-inspector');

    await page.goto(`${base}/#/redrive/${encodeURIComponent('/')}/cc.dlq`);
    await page.waitForSelector('[data-testid=sources]:has-text("cc.work (1)")', { timeout: WAIT_MS });
    await page.click('button:has-text("Dry run")');
    const dry = page.locator('[data-testid=redrive-dry] [data-testid=redrive-counts]');
    await dry.waitFor({ timeout: WAIT_MS });
    expect(await dry.textContent()).toContain('would move 1');
    await page.click('button.primary:has-text("Redrive")');
    await page.waitForSelector('[data-testid=redrive-real]:has-text("done")', { timeout: 30_000 });
    expect(await page.textContent('[data-testid=redrive-real] [data-testid=redrive-counts]')).toContain(
      'moved 1',
    );
    await shot(page, 'cluster-04-redrive');

    const back = await waitFor(async () => (await ch.get('cc.work')) || undefined, 30_000);
    expect(back.content.toString()).toBe('bounced');
    ch.ack(back);
    expect(watch.dialogs).toEqual([]);
    expect(watch.errors).toEqual([]);
  }, 180_000);
});
