/**
 * `node bench/src/large-message-memory.ts [MIB] [--durable]`: what one large message costs in memory
 * on its way through a node (issue 27 item 5: "large bodies stream to and from the body store
 * without several copies in memory"). One `styx server` (fresh temp data dir, max_message_size
 * 512 MiB) takes a MIB-MiB publish with a confirm through the SDK (in BodyPart frames of the
 * negotiated 8 MiB frame_max), then the message is consumed and acked. The node's resident memory
 * is read from /proc/<pid>/status before, at its peak (VmHWM, reset before each step through
 * /proc/<pid>/clear_refs) and after each step; the peak over the resting level, divided by the body
 * size, is how many copies of the body the node held at once. The client's own peak is given too.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as amqp from '@styx/client';
import { startStyxNode } from './brokers/styx-node.ts';

const MIB = 1024 * 1024;

/** VmRSS and VmHWM (the peak since the last reset) of `pid`, bytes. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
}

/** Resets the peak (VmHWM) to the current RSS (Linux: write 5 to clear_refs). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { durable: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
});
if (values.help) {
  process.stdout.write(
    'usage: node bench/src/large-message-memory.ts [MIB] [--durable]\n' +
      "  one MIB-MiB message (default 64) published and consumed through one node; the node's peak\n" +
      '  resident memory per step, in copies of the body; --durable: a durable queue (LMDB)\n',
  );
  process.exit(0);
}
const mib = Number(positionals[0] ?? 64);
if (!Number.isInteger(mib) || mib < 1 || mib > 512)
  throw new Error(`MIB must be a whole number 1-512, got ${positionals[0]}`);
const size = mib * MIB;
const root = await mkdtemp(join(tmpdir(), 'styx-bench-large-'));
const node = await startStyxNode('large', [
  '--data-dir',
  join(root, 'data'),
  '--port',
  '0',
  '--management-port',
  '0',
  '--max-message-size',
  String(512 * MIB),
]);
const rows: string[] = [];
const mb = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;
try {
  const conn = await amqp.connect(node.url);
  const ch = await conn.createConfirmChannel();
  const { queue } = await ch.assertQueue('large-memory', { durable: values.durable, autoDelete: false });
  const body = Buffer.alloc(size, 7);
  // Let the node settle (the handshake's allocations) before the resting level is read.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const step = async (name: string, run: () => Promise<void>): Promise<void> => {
    const before = memoryOf(node.pid);
    resetPeak(node.pid);
    const clientBefore = process.memoryUsage().rss;
    const started = performance.now();
    await run();
    const ms = performance.now() - started;
    const after = memoryOf(node.pid);
    const over = after.peak - before.rss;
    rows.push(
      `${name.padEnd(20)} node RSS ${mb(before.rss)} -> peak ${mb(after.peak)} -> ${mb(after.rss)}: ` +
        `peak ${mb(over)} over rest = ${(over / size).toFixed(2)} x body; client RSS +${mb(process.memoryUsage().rss - clientBefore)}; ${ms.toFixed(0)} ms`,
    );
  };
  await step(
    `publish ${mib} MiB`,
    () =>
      new Promise<void>((resolve, reject) =>
        ch.sendToQueue(queue, body, {}, (err) => (err ? reject(err) : resolve())),
      ),
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  await step(`consume ${mib} MiB`, async () => {
    const got = await new Promise<amqp.ConsumeMessage>((resolve) => {
      void ch.consume(queue, (msg) => {
        if (msg !== null) resolve(msg);
      });
    });
    if (got.content.length !== size) throw new Error(`got ${got.content.length} bytes, sent ${size}`);
    ch.ack(got);
    await ch.waitForConfirms();
  });
  await conn.close();
  process.stdout.write(
    `large message, ${values.durable ? 'durable' : 'non-durable'} queue, frame_max 8 MiB:\n${rows.join('\n')}\n`,
  );
} finally {
  await node.stop();
  await rm(root, { recursive: true, force: true });
}
