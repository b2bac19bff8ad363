// The browser bundle of @styx/client (dist/browser/styx-client.js) in a real headless Chromium (the
// Debian package at /usr/bin/chromium, driven by playwright-core): a page served from loopback loads
// the bundle, connects to a real `styx server` over the browser's own WebSocket, declares a queue,
// publishes with confirms, consumes and acks. What the page saw comes back from page.evaluate.
//
// Chromium is a hard requirement: without it this file FAILS (never skips), saying how to install it.
// `npx -y pnpm@10 test` installs it first (test/support/ensure-test-deps.ts); this failure is for a
// run of vitest on its own.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';
import { CHROMIUM, MISSING_CHROMIUM } from '../support/ensure-test-deps.ts';

const CLIENT = join(REPO_ROOT, 'packages', 'client');
const BUNDLE = join(CLIENT, 'dist', 'browser', 'styx-client.js');
/** The last line esbuild writes: a bundle read without it is incomplete (being rewritten). */
const BUNDLE_END = '//# sourceMappingURL=styx-client.js.map';
/** Bound on one page-side scenario, ms (the page reports a timeout as an error, never hangs). */
const PAGE_WAIT_MS = 15_000;

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>styx browser test</title></head>
<body><script type="module">
  import * as styx from '/styx-client.js';
  window.styx = styx;
</script></body></html>
`;

/** Newest modification time under `dir` of files that go into the bundle (tests excluded), ms. */
async function newestSource(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

/** Builds the bundle when it is missing or older than its sources; returns its text. */
async function loadBundle(): Promise<string> {
  const sourcesChanged = Math.max(
    await newestSource(join(CLIENT, 'src')),
    (await stat(join(CLIENT, 'scripts', 'build-browser.ts'))).mtimeMs,
  );
  const built = existsSync(BUNDLE) ? (await stat(BUNDLE)).mtimeMs : 0;
  if (built < sourcesChanged) {
    execFileSync(process.execPath, [join('packages', 'client', 'scripts', 'build-browser.ts')], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
  }
  // Another test (packages/client/src/browser-build.test.ts) may be rewriting the same file right now:
  // read until a complete bundle is seen.
  for (let attempt = 0; ; attempt++) {
    const text = await readFile(BUNDLE, 'utf8');
    if (text.trimEnd().endsWith(BUNDLE_END)) return text;
    if (attempt === 50) throw new Error(`${BUNDLE} is incomplete (no source map comment at its end)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Serves the test page and the bundle on 127.0.0.1 (an empty favicon); anything else is 404. */
async function serve(bundle: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    if (req.url === '/' || req.url === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGE);
    } else if (req.url === '/styx-client.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      res.end(bundle);
    } else if (req.url === '/favicon.ico') {
      res.writeHead(204);
      res.end();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

// Outside the suite so that, when Chromium is missing, it is reported as a failed test (the suite's
// beforeAll fails too, and vitest would otherwise count its tests only as skipped).
it(`needs Debian's Chromium at ${CHROMIUM}`, () => {
  expect(existsSync(CHROMIUM), MISSING_CHROMIUM).toBe(true);
});

describe('@styx/client in headless Chromium', () => {
  let broker: BrokerProcess | undefined;
  let http: Server | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(MISSING_CHROMIUM);
    const bundle = await loadBundle();
    broker = await startBroker();
    const served = await serve(bundle);
    http = served.server;
    // Playwright gives every launch() a fresh temporary profile (user-data dir) and removes it on close.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      timeout: 30_000,
    });
    page = await browser.newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') pageErrors.push(msg.text());
    });
    await page.goto(`${served.origin}/`, { timeout: 15_000 });
    await page.waitForFunction(() => 'styx' in window, undefined, { timeout: 15_000 });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    if (http !== undefined) {
      const server = http;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    if (broker !== undefined) {
      await broker.stop();
      await broker.cleanup();
    }
  });

  it('loads the bundle as an ES module exposing the amqplib-shaped API', async () => {
    const api = await page.evaluate(() => {
      const styx = (window as unknown as { styx: typeof import('@styx/client') }).styx;
      return {
        connect: typeof styx.connect,
        credentialsPlain: typeof styx.credentials.plain,
        hasBuffer: 'Buffer' in window,
      };
    });
    expect(api).toEqual({ connect: 'function', credentialsPlain: 'function', hasBuffer: false });
  });

  it('connects, declares, publishes with confirms, consumes and acks', async () => {
    const url = (broker as BrokerProcess).url;
    const result = await page.evaluate(
      async ({ url, waitMs }) => {
        // Runs in the page: only the bundle's exports and browser APIs are available.
        type Styx = typeof import('@styx/client');
        const styx = (window as unknown as { styx: Styx }).styx;
        const within = <T>(p: Promise<T>, what: string): Promise<T> =>
          Promise.race([
            p,
            new Promise<T>((_, reject) =>
              setTimeout(() => reject(new Error(`${what}: no answer in ${waitMs} ms`)), waitMs),
            ),
          ]);
        const conn = await within(styx.connect(url), 'connect');
        const ch = await conn.createConfirmChannel();
        const declared = await ch.assertQueue('browser.q', { durable: true });
        const encoder = new TextEncoder();
        const total = 20;
        const confirmed: number[] = [];
        for (let i = 0; i < total; i++) {
          ch.sendToQueue(
            'browser.q',
            encoder.encode(`message ${i}`),
            {
              correlationId: `c${i}`,
              headers: { seq: i, from: 'chromium' },
            },
            (err) => {
              if (err === null || err === undefined) confirmed.push(i);
            },
          );
        }
        await within(ch.waitForConfirms(), 'waitForConfirms');
        const beforeConsume = (await ch.checkQueue('browser.q')).messageCount;

        const consumer = await conn.createChannel();
        await consumer.prefetch(5);
        const decoder = new TextDecoder();
        const seen: Array<{
          body: string;
          correlationId: unknown;
          seq: unknown;
          from: unknown;
          isUint8Array: boolean;
        }> = [];
        await within(
          new Promise<void>((resolve, reject) => {
            consumer
              .consume('browser.q', (msg) => {
                if (msg === null) return reject(new Error('consumer cancelled by the server'));
                seen.push({
                  body: decoder.decode(msg.content),
                  correlationId: msg.properties.correlationId,
                  seq: msg.properties.headers?.seq,
                  from: msg.properties.headers?.from,
                  isUint8Array: msg.content instanceof Uint8Array,
                });
                consumer.ack(msg);
                if (seen.length === total) resolve();
              })
              .catch(reject);
          }),
          'consume',
        );
        await consumer.close();
        const afterAcks = (await ch.checkQueue('browser.q')).messageCount;
        await ch.deleteQueue('browser.q');
        await conn.close();
        return { declared: declared.queue, confirmed, beforeConsume, seen, afterAcks };
      },
      { url, waitMs: PAGE_WAIT_MS },
    );

    expect(result.declared).toBe('browser.q');
    expect(result.confirmed).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(result.beforeConsume).toBe(20);
    expect(result.seen).toEqual(
      Array.from({ length: 20 }, (_, i) => ({
        body: `message ${i}`,
        correlationId: `c${i}`,
        seq: i,
        from: 'chromium',
        isUint8Array: true,
      })),
    );
    expect(result.afterAcks).toBe(0);
    expect(pageErrors).toEqual([]);
  });

  it('reports a refused login in the page as an error with the AMQP code', async () => {
    const url = (broker as BrokerProcess).url.replace('ws://', 'ws://guest:wrong@');
    const refused = await page.evaluate(async (url) => {
      const styx = (window as unknown as { styx: typeof import('@styx/client') }).styx;
      try {
        await styx.connect(url);
        return { ok: true as const };
      } catch (err) {
        return { ok: false as const, code: (err as { code?: unknown }).code, message: String(err) };
      }
    }, url);
    expect(refused).toMatchObject({ ok: false, code: 403 });
    expect(refused.ok === false && refused.message).toMatch(/ACCESS.REFUSED|login refused/);
  });
});
