/**
 * Drain memory: K cycles of publishing M persistent 1 KiB messages with confirms into one durable
 * queue and draining them (consume + ack), on a fresh single Styx node. After each drain (and a
 * settle pause) prints the node's resident memory from /proc/<pid>/status (RssAnon, RssFile) and the
 * size of its data directory (allocated blocks, as `du`), so a drained node can be compared with its
 * idle start: anonymous memory should come back, and the data dir stop growing across cycles.
 *
 *   node bench/src/drain-memory.ts [--messages 200000] [--cycles 3] [--settle-ms 5000] [--heap-snapshot]
 *     [--hold-ms N] [--restart]
 *
 * `--heap-snapshot` starts the node with --heapsnapshot-signal=SIGUSR2 and sends it SIGUSR2 after
 * the last drain (the snapshot lands in the repository root, Heap.*.heapsnapshot). `--hold-ms` keeps
 * the node up that long at the end (to read its /proc/<pid>/smaps); `--restart` then stops it
 * cleanly and starts it on the same data dir, and reads again.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { styxAdapter } from './adapters/styx-adapter.ts';
import { startStyx } from './brokers/styx-broker.ts';
import { sleep } from './scenarios/support/clock.ts';
import { startConsumer } from './scenarios/support/consumer.ts';
import { publishWithConfirms } from './scenarios/support/publisher.ts';

const MIB = 2 ** 20;

interface Reading {
  readonly rssAnonMiB: number;
  readonly rssFileMiB: number;
  readonly dataDirMiB: number;
}

function statusKiB(text: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match === null ? Number.NaN : Number(match[1]);
}

/** Bytes allocated on disk under `dir` (sparse files count what they use, as `du` does). */
function allocatedBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += allocatedBytes(path);
    else if (entry.isFile()) total += statSync(path).blocks * 512;
  }
  return total;
}

/** The `--data-dir` the node was started with (styx-broker.ts gives every node one). */
function dataDirOf(pid: number): string {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const dir = argv[argv.indexOf('--data-dir') + 1];
  if (dir === undefined || argv.indexOf('--data-dir') < 0) throw new Error(`node ${pid} has no --data-dir`);
  return dir;
}

function read(pid: number, dataDir: string): Reading {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    rssAnonMiB: statusKiB(status, 'RssAnon') / 1024,
    rssFileMiB: statusKiB(status, 'RssFile') / 1024,
    dataDirMiB: allocatedBytes(dataDir) / MIB,
  };
}

function show(label: string, r: Reading): void {
  console.log(
    `${label.padEnd(14)} RssAnon ${r.rssAnonMiB.toFixed(1).padStart(7)} MiB  RssFile ${r.rssFileMiB
      .toFixed(1)
      .padStart(7)} MiB  data dir ${r.dataDirMiB.toFixed(1).padStart(7)} MiB`,
  );
}

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '200000' },
    cycles: { type: 'string', default: '3' },
    'settle-ms': { type: 'string', default: '5000' },
    'heap-snapshot': { type: 'boolean', default: false },
    'hold-ms': { type: 'string', default: '0' },
    restart: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(
    'usage: node bench/src/drain-memory.ts [--messages N] [--cycles K] [--settle-ms MS] [--restart]\n' +
      '         [--heap-snapshot] [--hold-ms MS]\n' +
      'Publishes N x 1 KiB with confirms and drains them, K times, on a fresh Styx node; prints RssAnon,\n' +
      'RssFile and the data dir size after each drain (and after a restart with --restart).',
  );
  process.exit(0);
}
const messages = Number(values.messages);
const cycles = Number(values.cycles);
const settleMs = Number(values['settle-ms']);
if (!Number.isSafeInteger(messages) || messages < 1) throw new RangeError(`--messages: ${values.messages}`);
if (!Number.isSafeInteger(cycles) || cycles < 1) throw new RangeError(`--cycles: ${values.cycles}`);
if (values['heap-snapshot']) {
  process.env.STYX_BENCH_NODE_ARGS = `${process.env.STYX_BENCH_NODE_ARGS ?? ''} --heapsnapshot-signal=SIGUSR2`;
}

const broker = await startStyx(1);
try {
  const pid = broker.pid;
  const dataDir = dataDirOf(pid);
  const conn = await styxAdapter.connect(broker.url);
  const setup = await conn.createChannel();
  await setup.assertQueue('q', styxAdapter.queueOptions({}));
  await sleep(settleMs);
  show('idle', read(pid, dataDir));
  const pub = await conn.createConfirmChannel();
  for (let c = 1; c <= cycles; c++) {
    const t0 = performance.now();
    await publishWithConfirms(pub, {
      exchange: '',
      routingKey: 'q',
      count: messages,
      window: 1000,
      firstSeq: 0,
    });
    const t1 = performance.now();
    show(`c${c} queued`, read(pid, dataDir));
    let seen = 0;
    let done: () => void = () => {};
    const drained = new Promise<void>((r) => {
      done = r;
    });
    const consumer = await startConsumer(conn, 'q', 1000, (msg, ch) => {
      ch.ack(msg);
      if (++seen === messages) done();
    });
    await drained;
    const t2 = performance.now();
    await consumer.channel.close();
    await sleep(settleMs);
    console.log(
      `cycle ${c}: publish ${Math.round(messages / ((t1 - t0) / 1000))}/s, drain ${Math.round(
        messages / ((t2 - t1) / 1000),
      )}/s`,
    );
    show(`c${c} drained`, read(pid, dataDir));
  }
  if (values['heap-snapshot']) {
    process.kill(pid, 'SIGUSR2');
    await sleep(Math.max(settleMs, 10_000));
    console.log('heap snapshot requested (Heap.*.heapsnapshot in the repository root)');
    show('after snapshot', read(pid, dataDir));
  }
  const holdMs = Number(values['hold-ms']);
  if (holdMs > 0) {
    console.log(`holding the node (pid ${pid}) for ${holdMs} ms`);
    await sleep(holdMs);
  }
  if (process.env.STYX_DRAIN_MEMORY_LOGS === '1') for (const line of broker.recentLogs()) console.log(line);
  await conn.close();
  if (values.restart) {
    // A clean stop and a start on the same data: a drained data dir gives its free pages back.
    const { stopMs } = await broker.restart();
    await sleep(settleMs);
    console.log(`restarted (clean stop ${Math.round(stopMs)} ms)`);
    show('restarted', read(broker.pid, dataDir));
  }
} finally {
  await broker.stop();
}
