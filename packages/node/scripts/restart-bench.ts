/**
 * Restart time of durable queues against queue length and history.
 *
 *   node --expose-gc packages/node/scripts/restart-bench.ts \
 *     [--lengths 10000,100000,1000000] [--size 1024] [--histories 100000,1000000] [--backlog 100]
 *
 * For each queue length L: fill a durable queue with L messages of `--size` body bytes (default
 * compaction policy, as the node runs it), stop WITHOUT the snapshot a clean close takes (as a
 * crash would leave it), and time a restart in a fresh process: opening the node storage, then
 * the queue (snapshot restore + replay of the log tail). That restart then closes cleanly
 * (snapshot), and a second restart is timed.
 * For each history H: H publish+ack pairs through a consumer, leaving `--backlog` messages queued;
 * then the same two restarts.
 *
 * Restarts run in a child process (this script with --reopen <dir>), so each is timed cold and its
 * heap is measured alone. Data dirs are in a temp dir, removed at the end. To profile a restart by
 * hand: `--fill-only <length> --dir <dir>`, then `node --cpu-prof … --reopen <dir>`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { OwnerSink, QueueActorSinks, QueueLogger } from '../src/queue/queue-actor.ts';
import { QueueActor } from '../src/queue/queue-actor.ts';
import type { StoredMessage } from '../src/queue/types.ts';
import { DEFAULT_QUEUE_CONFIG } from '../src/queue/types.ts';
import { durableQueueLog } from '../src/storage/durable-queue-log.ts';
import type { NodeStorage } from '../src/storage/node-storage.ts';
import { openNodeStorage } from '../src/storage/node-storage.ts';

const { values } = parseArgs({
  options: {
    lengths: { type: 'string', default: '10000,100000,1000000' },
    size: { type: 'string', default: '1024' },
    histories: { type: 'string', default: '100000,1000000' },
    backlog: { type: 'string', default: '100' },
    reopen: { type: 'string' },
    'compact-on-close': { type: 'boolean', default: false },
    /** Only fill a queue of this length into --dir and stop (to profile restarts by hand). */
    'fill-only': { type: 'string' },
    dir: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write(`Usage: node --expose-gc packages/node/scripts/restart-bench.ts [options]

Restart time of durable queues against queue length and against history length.

  --lengths L1,L2,...     queue lengths to fill and restart (default 10000,100000,1000000)
  --size BYTES            body size (default 1024)
  --histories H1,H2,...   publish+ack pairs before a restart (default 100000,1000000)
  --backlog N             messages left queued after a history (default 100)
  --fill-only L --dir D   only fill a queue of length L into D (to profile a restart by hand)
  --reopen D              time one restart of D (what the script runs in a child process)
  -h, --help              show this help
`);
  process.exit(0);
}
const GROUP = '/:bench:1';
/** Enqueues in flight while filling (a pipelining publisher). */
const IN_FLIGHT = 5000;
const silent: QueueLogger = { child: () => silent, debug() {}, info() {}, warn() {}, error() {} };
const log = (line: string): void => {
  process.stderr.write(line);
};

function openActor(storage: NodeStorage, sinks: QueueActorSinks, compactOnClose: boolean): QueueActor {
  return new QueueActor({
    vhost: '/',
    name: 'bench',
    groupId: GROUP,
    log: durableQueueLog(storage, GROUP, { compactOnClose }),
    bodyStore: storage.bodyStore,
    config: DEFAULT_QUEUE_CONFIG,
    logger: silent,
    sinks,
  });
}

const noOwners: QueueActorSinks = { resolveOwner: () => undefined, onDeadLetter() {}, onQueueExpired() {} };

function message(n: number, size: number): StoredMessage {
  return {
    exchange: 'amq.direct',
    routingKey: 'bench',
    properties: { deliveryMode: 2 },
    body: Buffer.alloc(size, n & 0xff),
    bcc: undefined,
  };
}

/** What a timed restart reports (printed as JSON by the child). */
interface Restart {
  readonly tailEntries: number;
  readonly snapshotBytes: number;
  readonly storageMs: number;
  readonly queueMs: number;
  readonly ready: number;
  readonly heapMiB: number;
}

// ------------------------------------------------------------------------------ child: one restart

async function reopen(dir: string, compactOnClose: boolean): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const storage = await openNodeStorage(dir);
  const t1 = performance.now();
  // Counted before the queue opens (not timed): what the replay will read.
  const snapshot = storage.logStore.snapshot(GROUP);
  let tailEntries = 0;
  for (const _ of storage.logStore.entries(GROUP, (snapshot?.meta.index ?? 0) + 1)) tailEntries++;
  const t2 = performance.now();
  const actor = openActor(storage, noOwners, compactOnClose);
  await actor.open();
  const t3 = performance.now();
  gc?.();
  const result: Restart = {
    tailEntries,
    snapshotBytes: snapshot?.data.length ?? 0,
    storageMs: t1 - t0,
    queueMs: t3 - t2,
    ready: actor.counts().ready,
    heapMiB: (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20,
  };
  await actor.close();
  await storage.close();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function timedRestart(dir: string, compactOnClose: boolean): Restart {
  const args = ['--expose-gc', fileURLToPath(import.meta.url), '--reopen', dir];
  if (compactOnClose) args.push('--compact-on-close');
  const output = execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 20 });
  return JSON.parse(output.trim().split('\n').pop() as string) as Restart;
}

// ------------------------------------------------------------------------------ parent: fill, restart

async function fill(dir: string, length: number, size: number): Promise<void> {
  const storage = await openNodeStorage(dir);
  const actor = openActor(storage, noOwners, false);
  await actor.open();
  const step = Math.max(1, Math.floor(length / 20));
  let sent = 0;
  while (sent < length) {
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < IN_FLIGHT && sent < length; i++)
      batch.push(actor.enqueue(message(++sent, size), undefined));
    await Promise.all(batch);
    if (sent % step < IN_FLIGHT)
      log(`\r  filling: ${sent.toLocaleString('en')} / ${length.toLocaleString('en')}`);
  }
  log('\n');
  await actor.close();
  await storage.close();
}

async function churn(dir: string, history: number, backlog: number, size: number): Promise<void> {
  const storage = await openNodeStorage(dir);
  let actor: QueueActor | undefined;
  let toAck: number[] = [];
  let acking: Promise<void> = Promise.resolve();
  const consumer: OwnerSink = {
    deliver(_q, _tag, id) {
      if (toAck.length === 0) {
        // One settle per turn for everything delivered in it (as a client acking with multiple).
        queueMicrotask(() => {
          const ids = toAck;
          toAck = [];
          acking = Promise.all([acking, actor?.settle('bench/1', ids)]).then(() => {});
        });
      }
      toAck.push(id);
    },
    consumerCancelled() {},
  };
  const sinks: QueueActorSinks = {
    ...noOwners,
    resolveOwner: (owner) => (owner === 'bench/1' ? consumer : undefined),
  };
  actor = openActor(storage, sinks, false);
  await actor.open();
  await actor.consume('bench/1', 'ctag', 0, false, false);
  const step = Math.max(1, Math.floor(history / 20));
  let sent = 0;
  while (sent < history) {
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < IN_FLIGHT && sent < history; i++)
      batch.push(actor.enqueue(message(++sent, size), undefined));
    await Promise.all(batch);
    if (sent % step < IN_FLIGHT)
      log(`\r  publish+ack: ${sent.toLocaleString('en')} / ${history.toLocaleString('en')}`);
  }
  await acking;
  await actor.cancel('bench/1', 'ctag');
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < backlog; i++) batch.push(actor.enqueue(message(++sent, size), undefined));
  await Promise.all(batch);
  log('\n');
  await actor.close();
  await storage.close();
}

interface Row {
  readonly scenario: string;
  readonly stop: string;
  readonly restart: Restart;
}

function printTable(rows: readonly Row[], size: number): void {
  const out = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  out(`\ndurable queue restart, ${size} B bodies (restart = open node storage + open queue, fresh process)`);
  const header = [
    'scenario'.padEnd(34),
    'stop'.padEnd(8),
    'queued'.padStart(10),
    'tail entries'.padStart(12),
    'snapshot KiB'.padStart(12),
    'storage ms'.padStart(10),
    'queue ms'.padStart(9),
    'heap MiB'.padStart(9),
  ];
  out(header.join(' '));
  for (const { scenario, stop, restart } of rows) {
    out(
      [
        scenario.padEnd(34),
        stop.padEnd(8),
        restart.ready.toLocaleString('en').padStart(10),
        restart.tailEntries.toLocaleString('en').padStart(12),
        (restart.snapshotBytes / 1024).toFixed(0).padStart(12),
        restart.storageMs.toFixed(1).padStart(10),
        restart.queueMs.toFixed(0).padStart(9),
        restart.heapMiB.toFixed(1).padStart(9),
      ].join(' '),
    );
  }
}

async function main(): Promise<void> {
  const size = Number(values.size);
  if (values.reopen !== undefined) {
    await reopen(values.reopen, values['compact-on-close']);
    return;
  }
  if (values['fill-only'] !== undefined) {
    if (values.dir === undefined) throw new Error('--fill-only needs --dir');
    await fill(values.dir, Number(values['fill-only']), size);
    return;
  }
  const backlog = Number(values.backlog);
  const lengths = values.lengths.split(',').filter(Boolean).map(Number);
  const histories = values.histories.split(',').filter(Boolean).map(Number);
  const root = mkdtempSync(join(tmpdir(), 'styx-restart-bench-'));
  const rows: Row[] = [];
  try {
    for (const length of lengths) {
      const dir = join(root, `length-${length}`);
      log(`queue of ${length.toLocaleString('en')} messages\n`);
      await fill(dir, length, size);
      const scenario = `${length.toLocaleString('en')} queued, no history`;
      rows.push({ scenario, stop: 'crash', restart: timedRestart(dir, true) });
      rows.push({ scenario, stop: 'clean', restart: timedRestart(dir, false) });
      rmSync(dir, { recursive: true, force: true });
    }
    for (const history of histories) {
      const dir = join(root, `history-${history}`);
      log(`history of ${history.toLocaleString('en')} publish+ack pairs\n`);
      await churn(dir, history, backlog, size);
      const scenario = `${history.toLocaleString('en')} pub+ack, ${backlog} queued`;
      rows.push({ scenario, stop: 'crash', restart: timedRestart(dir, true) });
      rows.push({ scenario, stop: 'clean', restart: timedRestart(dir, false) });
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  printTable(rows, size);
}

await main();
