/**
 * `node bench/src/inspector-pages.ts [MESSAGES]`: what the dead-letter inspector costs on a deep
 * queue (issue 21 item 2): the time of `GET /api/queues/%2F/{q}/messages` as the client sees it
 * (request to last byte, loopback), and of `GET .../dead-lettering`.
 *
 * Starts one `styx server` (fresh temp data dir), fills a durable DLQ with MESSAGES (default
 * 100,000) messages of 256 bytes by rejecting them from a work queue (so each carries a real
 * `x-death`), one in 100 with the header `tenant: acme`, then measures, after two unmeasured runs:
 * - `head`: the first page (50 messages, 4 KiB previews);
 * - `filtered`: `header=tenant:acme&limit=50`, which scans up to 10,000 messages to find them;
 * - `walk`: every page of the whole queue with `limit=500&body_bytes=64`, following `next`;
 * - `explain`: the dead-lettering explanation of the work queue.
 * Prints p50 / max per kind. The node is stopped and its data dir removed at the end.
 */
import * as styx from '@styx/client';
import { startManagedStyxNode } from './brokers/styx-managed-node.ts';
import { parseCountArgs } from './count-arg.ts';

const AUTH = { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` };
const RUNS = 10;
const WARM_UP = 2;

interface Page {
  readonly next: number | null;
  readonly messages: readonly unknown[];
}

async function timed<T>(url: string): Promise<{ ms: number; body: T }> {
  const start = performance.now();
  const response = await fetch(url, { headers: AUTH });
  const text = await response.text();
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${text}`);
  return { ms, body: JSON.parse(text) as T };
}

/** p50 and max of `runs` measured calls of `once`, after `WARM_UP` unmeasured ones. */
async function measure(runs: number, once: () => Promise<number>): Promise<string> {
  const times: number[] = [];
  for (let i = 0; i < WARM_UP + runs; i++) {
    const ms = await once();
    if (i >= WARM_UP) times.push(ms);
  }
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor((times.length - 1) / 2)] as number;
  return `p50 ${p50.toFixed(1)} ms, max ${(times.at(-1) as number).toFixed(1)} ms (${runs} runs)`;
}

async function main(): Promise<void> {
  const args = parseCountArgs(process.argv.slice(2), 100_000);
  if ('error' in args) {
    process.stderr.write(`inspector-pages: ${args.error}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(
      'Usage: npx -y pnpm@10 exec node bench/src/inspector-pages.ts [MESSAGES]  (default 100000)\n',
    );
    return;
  }
  const total = args.count;
  const managed = await startManagedStyxNode('styx-inspector-bench');
  const node = managed.node;
  try {
    const conn = await styx.connect(node.url);
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue('bench.dlq', { durable: true });
    await ch.assertQueue('bench.work', {
      durable: true,
      arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'bench.dlq' },
    });
    const body = Buffer.alloc(256, 'x');
    for (let i = 0; i < total; i++) {
      const headers = i % 100 === 0 ? { tenant: 'acme' } : { tenant: 'other' };
      ch.sendToQueue('bench.work', body, { persistent: true, headers });
      if (i % 1000 === 999) await ch.waitForConfirms();
    }
    await ch.waitForConfirms();
    const rejecter = await conn.createChannel();
    await rejecter.prefetch(500);
    await rejecter.consume('bench.work', (m) => {
      if (m !== null) rejecter.nack(m, false, false);
    });
    const base = `${managed.managementUrl}/api/queues/%2F`;
    for (;;) {
      const { body: q } = await timed<{ messages_ready?: number }>(`${base}/bench.dlq`);
      process.stderr.write(`\rdead-lettered ${q.messages_ready ?? 0}/${total}`);
      if ((q.messages_ready ?? 0) >= total) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    process.stderr.write('\n');
    await rejecter.close();

    const pages = `${base}/bench.dlq/messages`;
    const head = await measure(RUNS, async () => (await timed<Page>(pages)).ms);
    const filtered = await measure(RUNS, async () => (await timed<Page>(`${pages}?header=tenant:acme`)).ms);
    let walked = 0;
    let requests = 0;
    const walk = await measure(2, async () => {
      const start = performance.now();
      let after: number | null = null;
      walked = 0;
      requests = 0;
      do {
        const query: string = `limit=500&body_bytes=64${after === null ? '' : `&after=${after}`}`;
        const { body: page } = await timed<Page>(`${pages}?${query}`);
        walked += page.messages.length;
        requests++;
        after = page.next;
      } while (after !== null);
      return performance.now() - start;
    });
    const explain = await measure(
      RUNS,
      async () => (await timed<unknown>(`${base}/bench.work/dead-lettering`)).ms,
    );
    await conn.close();
    process.stdout.write(
      `inspector on a DLQ of ${total} messages (256 B, real x-death):\n` +
        `  head page (50):                 ${head}\n` +
        `  filtered page (1 in 100):       ${filtered}\n` +
        `  whole queue, 500 per page:      ${walk}; ${walked} messages in ${requests} requests\n` +
        `  explain:                        ${explain}\n`,
    );
  } finally {
    await managed.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `inspector-pages: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
