/**
 * `node bench/src/console-queues.ts`: how fast the web console's queues page is on a node with
 * many queues (issue 21: "thousands of queues stay fast"; the figure asked for is the page's load
 * time with 10,000 queues).
 *
 * Starts one `styx server` (fresh temp data dir, management API on a free loopback port), declares
 * N durable queues, one in ten with a dead-letter exchange, with a policy on a tenth of them, and
 * publishes one message to each. Then measures, each R times after one unmeasured warm-up:
 * - the API as the page calls it: `GET /api/queues?page=1&page_size=100` in the list's order,
 *   sorted by depth (sort=messages, deepest first) and filtered by name; and, for comparison, the
 *   whole unpaged list (what a page without paging would have to fetch);
 * - the page in Debian's Chromium (playwright-core, /usr/bin/chromium): logged in, a full load of
 *   `/#/queues` until its table shows its 100 rows and the pager counts N queues (the script and
 *   stylesheet revalidated from the browser's cache, as on a reload), and a move to the page from
 *   the overview inside the app.
 * The page's times are by its own clock (navigation start, or the move, to the table shown); the
 * API's are what the client sees on loopback; p50/p99/max. The node is stopped and its data dir
 * removed at the end.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as styx from '@styx/client';
import type { Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { startManagedStyxNode } from './brokers/styx-managed-node.ts';

const USAGE = `Usage: node bench/src/console-queues.ts [options]

Options:
  --queues N     queues to declare (default: 10000)
  --rounds N     measured rounds of each measurement (default: 10), after one warm-up
  --json         print the figures as one JSON object instead of text
  -h, --help     this help

Needs Debian's Chromium at /usr/bin/chromium (sudo apt-get install chromium).`;

const CHROMIUM = '/usr/bin/chromium';
/** Queue declarations in flight at once (each is a metadata commit and a queue group start). */
const DECLARE_WINDOW = 200;
const PAGE_SIZE = 100;
const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
const WAIT_MS = 60_000;

interface Timing {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

function fail(message: string): never {
  process.stderr.write(`console-queues: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function count(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) fail(`--${name} must be a positive integer, got '${value}'`);
  return n;
}

function summary(times: number[]): Timing {
  times.sort((a, b) => a - b);
  const at = (p: number): number => {
    const value = times[
      Math.min(times.length - 1, Math.max(0, Math.ceil((p / 100) * times.length) - 1))
    ] as number;
    return Number(value.toFixed(1));
  };
  return { p50Ms: at(50), p99Ms: at(99), maxMs: at(100) };
}

/** `measure` once unmeasured, then `rounds` times, timed here: p50, p99, max (ms). */
async function timed(rounds: number, measure: () => Promise<void>): Promise<Timing> {
  return timedByPage(rounds, async () => {
    const start = performance.now();
    await measure();
    return performance.now() - start;
  });
}

/**
 * A fixed piece of CPU work timed here (ms): the same figure on every run of an unloaded machine,
 * so a page time measured while other work shares the cores can be judged by it.
 */
function cpuCalibration(): number {
  const start = performance.now();
  let x = 0;
  for (let i = 0; i < 50_000_000; i++) x += i % 7;
  if (x < 0) throw new Error('unreachable');
  return Number((performance.now() - start).toFixed(1));
}

async function declareQueues(url: string, queues: number): Promise<void> {
  const conn = await styx.connect(url);
  const ch = await conn.createConfirmChannel();
  await ch.assertExchange('bench.dlx', 'fanout', { durable: true });
  for (let from = 0; from < queues; from += DECLARE_WINDOW) {
    const batch: Promise<unknown>[] = [];
    for (let i = from; i < Math.min(queues, from + DECLARE_WINDOW); i++) {
      const args = i % 10 === 0 ? { 'x-dead-letter-exchange': 'bench.dlx' } : {};
      batch.push(ch.assertQueue(`bench.q.${String(i).padStart(5, '0')}`, { durable: true, arguments: args }));
    }
    await Promise.all(batch);
    process.stderr.write(`\rdeclared ${Math.min(queues, from + DECLARE_WINDOW)}/${queues}`);
  }
  for (let i = 0; i < queues; i++) {
    ch.sendToQueue(`bench.q.${String(i).padStart(5, '0')}`, Buffer.from('x'.repeat(i % 100)));
    if (i % 1000 === 999) await ch.waitForConfirms();
  }
  await ch.waitForConfirms();
  await conn.close();
  process.stderr.write(`\rdeclared ${queues} queues, one message each\n`);
}

/**
 * Waits until the queues page shows its first page (100 rows, or all, and the pager counting every
 * queue) and answers when that happened by the page's own clock (`performance.now()`, ms since the
 * page's navigation started), so the time excludes the test driver's polling and round trips.
 */
async function queuesShownAt(page: Page, queues: number): Promise<number> {
  const rows = Math.min(PAGE_SIZE, queues);
  const total = queues.toLocaleString('en');
  const handle = await page.waitForFunction(
    ([n, text]) =>
      document.querySelectorAll('[data-testid=queues] tbody tr').length === n &&
      (document.querySelector('.pager')?.textContent ?? '').includes(`of ${text} queues`) &&
      performance.now(),
    [rows, total] as const,
    { timeout: WAIT_MS, polling: 5 },
  );
  return (await handle.jsonValue()) as number;
}

/** `measure` (which answers a duration in ms) once unmeasured, then `rounds` times. */
async function timedByPage(rounds: number, measure: () => Promise<number>): Promise<Timing> {
  const times: number[] = [];
  await measure();
  for (let i = 0; i < rounds; i++) times.push(await measure());
  return summary(times);
}

async function main(): Promise<void> {
  let values: { queues?: string; rounds?: string; json?: boolean; help?: boolean };
  try {
    values = parseArgs({
      args: process.argv.slice(2).filter((a) => a !== '--'),
      strict: true,
      options: {
        queues: { type: 'string' },
        rounds: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    fail((err as Error).message);
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!existsSync(CHROMIUM)) fail(`Chromium is missing at ${CHROMIUM}`);
  const queues = count(values.queues, 10_000, 'queues');
  const rounds = count(values.rounds, 10, 'rounds');

  const managed = await startManagedStyxNode('styx-console-bench');
  const base = managed.managementUrl;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'].concat([
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ]),
  });
  try {
    await declareQueues(managed.node.url, queues);
    const policy = await fetch(`${base}/api/policies/%2F/bench-ttl`, {
      method: 'PUT',
      headers: { Authorization: AUTH, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        pattern: '^bench\\.q\\.0',
        definition: { 'message-ttl': 3_600_000 },
        'apply-to': 'queues',
      }),
    });
    if (!policy.ok) throw new Error(`PUT policy answered ${policy.status}`);

    const get = (path: string) => async (): Promise<void> => {
      const response = await fetch(`${base}${path}`, { headers: { Authorization: AUTH } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`);
    };
    const api = {
      firstPage: await timed(rounds, get(`/api/queues?page=1&page_size=${PAGE_SIZE}`)),
      byDepth: await timed(
        rounds,
        get(`/api/queues?page=1&page_size=${PAGE_SIZE}&sort=messages&sort_reverse=true`),
      ),
      filtered: await timed(rounds, get(`/api/queues?page=1&page_size=${PAGE_SIZE}&name=q.09`)),
      unpaged: await timed(Math.min(rounds, 3), get('/api/queues')),
    };

    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/`);
    await page.fill('input[name=username]', 'guest');
    await page.fill('input[name=password]', 'guest');
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=whoami]', { timeout: WAIT_MS });
    // From the start of the page's navigation (a reload) to its table shown.
    const fullLoad = await timedByPage(rounds, async () => {
      await page.goto(`${base}/#/queues`);
      await page.reload();
      return queuesShownAt(page, queues);
    });
    // From the click-equivalent (the fragment set to the queues page) to its table shown.
    const inApp = await timedByPage(rounds, async () => {
      await page.evaluate(() => {
        location.hash = '#/overview';
      });
      await page.waitForSelector('text=Queued messages', { timeout: WAIT_MS });
      const start = await page.evaluate(() => {
        const at = performance.now();
        location.hash = '#/queues';
        return at;
      });
      return (await queuesShownAt(page, queues)) - start;
    });
    await context.close();

    const calibrationMs = cpuCalibration();
    const figures = { queues, rounds, api, page: { fullLoad, inApp }, calibrationMs };
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
      return;
    }
    const line = (t: Timing): string => `p50 ${t.p50Ms} ms, p99 ${t.p99Ms} ms, max ${t.maxMs} ms`;
    process.stdout.write(
      [
        `Console queues page with ${queues} queues (${rounds} rounds each):`,
        `  page load in Chromium (reload of /#/queues to 100 rows shown): ${line(fullLoad)}`,
        `  in-app move overview -> queues:                                ${line(inApp)}`,
        `  GET /api/queues?page=1&page_size=${PAGE_SIZE}:                         ${line(api.firstPage)}`,
        `  ... sorted by depth (sort=messages&sort_reverse=true):          ${line(api.byDepth)}`,
        `  ... filtered by name (name=q.09):                               ${line(api.filtered)}`,
        `  GET /api/queues unpaged (every queue, for comparison):          ${line(api.unpaged)}`,
        `  CPU calibration (a fixed loop; compare runs by it): ${calibrationMs} ms`,
        '',
      ].join('\n'),
    );
  } finally {
    await browser.close();
    await managed.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `console-queues: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
