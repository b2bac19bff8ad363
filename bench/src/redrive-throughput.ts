/**
 * `node bench/src/redrive-throughput.ts [MESSAGES]`: how fast a redrive moves a dead-letter queue
 * back to its source on one node (issue 21 item 3), without a rate limit: the dry run's time (count
 * and route every message), and the real redrive's time from the POST to its record saying `done`
 * (polled every 50 ms), as messages per second. Each message is published, confirmed by its source
 * queue, committed in the metadata group with its batch, and removed from the DLQ through its log.
 *
 * Starts one `styx server` (fresh temp data dir), dead-letters MESSAGES (default 10,000) messages of
 * 256 bytes by rejecting them from a work queue (so each carries a real `x-death`), measures, checks
 * that the source queue holds them all again, then stops the node and removes its data dir.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as styx from '@styx/client';
import { freeLoopbackPort } from './brokers/free-port.ts';
import { startStyxNode } from './brokers/styx-node.ts';
import { parseCountArgs } from './count-arg.ts';

const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

type Json = Record<string, unknown>;

async function call(url: string, method = 'GET', body?: unknown): Promise<Json> {
  const response = await fetch(url, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return JSON.parse(text) as Json;
}

async function main(): Promise<void> {
  const args = parseCountArgs(process.argv.slice(2), 10_000);
  if ('error' in args) {
    process.stderr.write(`redrive-throughput: ${args.error}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(
      'Usage: npx -y pnpm@10 exec node bench/src/redrive-throughput.ts [MESSAGES]  (default 10000)\n',
    );
    return;
  }
  const total = args.count;
  const dataDir = await mkdtemp(join(tmpdir(), 'styx-redrive-bench-'));
  const port = await freeLoopbackPort();
  const node = await startStyxNode('redrive-bench', [
    '--data-dir',
    dataDir,
    '--port',
    '0',
    '--management-port',
    String(port),
  ]);
  const api = `http://127.0.0.1:${port}/api`;
  try {
    const conn = await styx.connect(node.url);
    const publisher = await conn.createConfirmChannel();
    await publisher.assertQueue('rd.dlq', { durable: true });
    await publisher.assertQueue('rd.work', {
      durable: true,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'rd.dlq',
    });
    const payload = Buffer.alloc(256, 'r');
    for (let sent = 0; sent < total; sent++) {
      publisher.sendToQueue('rd.work', payload, { persistent: true });
      if (sent % 1000 === 999) await publisher.waitForConfirms();
    }
    await publisher.waitForConfirms();
    const rejecter = await conn.createChannel();
    await rejecter.prefetch(1000);
    const { consumerTag } = await rejecter.consume('rd.work', (m) => {
      if (m !== null) rejecter.reject(m, false);
    });
    while (((await call(`${api}/queues/%2F/rd.dlq`)).messages_ready as number | undefined) !== total)
      await new Promise((resolve) => setTimeout(resolve, 200));
    await rejecter.cancel(consumerTag);

    const dryStart = performance.now();
    const dry = await call(`${api}/queues/%2F/rd.dlq/redrive`, 'POST', { target: 'source', dry_run: true });
    const dryMs = performance.now() - dryStart;
    if (dry.would_move !== total)
      throw new Error(`dry run would move ${String(dry.would_move)}, not ${total}`);

    const start = performance.now();
    const started = await call(`${api}/queues/%2F/rd.dlq/redrive`, 'POST', { target: 'source' });
    let record = started;
    while (record.state === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 50));
      record = await call(`${api}/redrives/${String(started.id)}`);
    }
    const ms = performance.now() - start;
    if (record.state !== 'done' || record.moved !== total)
      throw new Error(`redrive ended ${String(record.state)} with ${String(record.moved)} moved`);
    const back = (await call(`${api}/queues/%2F/rd.work`)).messages_ready;
    await conn.close();
    process.stdout.write(
      `redrive of ${total} dead letters (256 B, real x-death) back to their source, one node:\n` +
        `  dry run (count and route each): ${dryMs.toFixed(0)} ms\n` +
        `  redrive, unthrottled:           ${ms.toFixed(0)} ms, ${((total / ms) * 1000).toFixed(0)} msgs/s ` +
        `(source queue holds ${String(back)})\n`,
    );
  } finally {
    await node.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `redrive-throughput: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
