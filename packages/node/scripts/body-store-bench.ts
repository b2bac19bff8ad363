/**
 * Throughput of the LMDB body store: put, get (from LMDB, after the puts committed), get of
 * not-yet-committed puts (from memory), delete, and deleteGroup, on a fresh data dir in a temp dir.
 *
 *   node packages/node/scripts/body-store-bench.ts [--messages 200000] [--size 1024] [--per-turn 1000]
 *
 * Puts are made `--per-turn` at a time per event-loop turn, as a busy node would make them while
 * applying a batch of enqueues; a phase ends when everything it wrote is durable.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { StoredMessage } from '../src/queue/types.ts';
import { openNodeStorage } from '../src/storage/node-storage.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '200000' },
    size: { type: 'string', default: '1024' },
    'per-turn': { type: 'string', default: '1000' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write(`Usage: node packages/node/scripts/body-store-bench.ts [options]

Put, get and delete throughput of the LMDB body store (a temp dir, removed after).

  --messages N     messages to store (default 200000)
  --size BYTES     body size (default 1024)
  --per-turn N     puts per event-loop turn (default 1000)
  -h, --help       show this help
`);
  process.exit(0);
}
const messages = Number(values.messages);
const size = Number(values.size);
const perTurn = Number(values['per-turn']);
const GROUP = '/:bench:1';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function message(n: number): StoredMessage {
  const body = Buffer.alloc(size, n & 0xff);
  return {
    exchange: 'amq.direct',
    routingKey: 'bench',
    properties: { deliveryMode: 2, headers: { entries: [{ key: 'n', value: { i64: n } }] } },
    body,
    bcc: undefined,
  };
}

interface Row {
  readonly phase: string;
  readonly ops: number;
  readonly ms: number;
}
const rows: Row[] = [];
async function phase(name: string, ops: number, run: () => Promise<void> | void): Promise<void> {
  const start = performance.now();
  await run();
  rows.push({ phase: name, ops, ms: performance.now() - start });
}

const dir = mkdtempSync(join(tmpdir(), 'styx-body-bench-'));
try {
  const storage = await openNodeStorage(dir);
  const store = storage.bodyStore;
  // Messages are built up front: the phases measure the store, not the building.
  const built = Array.from({ length: messages }, (_, i) => message(i + 1));

  await phase('put (async, durable at end)', messages, async () => {
    for (let id = 1; id <= messages; id++) {
      store.put(GROUP, id, built[id - 1] as StoredMessage);
      if (id % perTurn === 0) await nextTurn();
    }
    await store.flushed();
  });

  await phase('get (from LMDB, decoded)', messages, () => {
    let bytes = 0;
    for (let id = 1; id <= messages; id++) bytes += store.get(GROUP, id)?.body.length ?? 0;
    if (bytes !== messages * size) throw new Error(`read ${bytes} body bytes`);
  });

  await phase('get (random order, from LMDB)', messages, () => {
    let x = 12345;
    for (let i = 0; i < messages; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      if (store.get(GROUP, 1 + (x % messages)) === undefined) throw new Error('missing body');
    }
  });

  await phase(`put + get in the same turn (${perTurn} per turn)`, messages, async () => {
    for (let id = 1; id <= messages; id++) {
      store.put('/:bench:2', id, built[id - 1] as StoredMessage);
      if (store.get('/:bench:2', id) === undefined) throw new Error('missing body');
      if (id % perTurn === 0) await nextTurn();
    }
    await store.flushed();
  });

  await phase('delete (async, durable at end)', messages, async () => {
    for (let id = 1; id <= messages; id++) {
      store.delete(GROUP, id);
      if (id % perTurn === 0) await nextTurn();
    }
    await store.flushed();
  });

  await phase('deleteGroup (range, chunked)', messages, async () => {
    store.deleteGroup('/:bench:2');
    await store.flushed();
  });
  if (store.count(GROUP) + store.count('/:bench:2') !== 0) throw new Error('bodies left behind');
  await storage.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
out(
  `body store: ${messages.toLocaleString('en')} messages of ${size} B body (+ headers), ${perTurn} writes per turn`,
);
out(`${'phase'.padEnd(44)} ${'ops/s'.padStart(12)} ${'MiB/s'.padStart(8)} ${'total ms'.padStart(10)}`);
for (const row of rows) {
  const perSecond = (row.ops / row.ms) * 1000;
  const mib = row.phase.startsWith('delete') ? '' : ((perSecond * size) / 2 ** 20).toFixed(1);
  out(
    `${row.phase.padEnd(44)} ${Math.round(perSecond).toLocaleString('en').padStart(12)} ${mib.padStart(8)} ${row.ms.toFixed(0).padStart(10)}`,
  );
}
