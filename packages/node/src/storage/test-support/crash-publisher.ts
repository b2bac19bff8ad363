/**
 * Child process of the durable queue crash test: opens the node storage in `argv[2]`, runs a durable
 * queue on it (compaction every `COMPACT_EVERY` entries, so snapshots and truncations happen during
 * the stream) and publishes sequence numbers from `argv[3]` on, `IN_FLIGHT` at a time, while a
 * consumer (owner `argv[4]`) acks most of what it receives. The parent SIGKILLs it at an arbitrary
 * moment. It reports on stdout, one event per line:
 *   ready                 — open and replayed
 *   confirmed <seq>       — the enqueue of <seq> committed (a publisher confirm)
 *   got <seq>             — <seq> was delivered to the consumer
 *   acking <seq>          — a settle of <seq> is about to be proposed (it may or may not commit)
 */
import type { OwnerSink, QueueActorSinks, QueueLogger } from '../../queue/queue-actor.ts';
import { QueueActor } from '../../queue/queue-actor.ts';
import type { StoredMessage } from '../../queue/types.ts';
import { DEFAULT_QUEUE_CONFIG } from '../../queue/types.ts';
import { durableQueueLog } from '../durable-queue-log.ts';
import { openNodeStorage } from '../node-storage.ts';
import { CRASH_QUEUE_GROUP, crashMessage, sequenceOf } from './crash-messages.ts';

/** Enqueues in flight at once. */
const IN_FLIGHT = 64;
/** Entries between compactions. */
const COMPACT_EVERY = 300;
/** The consumer's prefetch (messages). */
const PREFETCH = 100;
/** The consumer keeps (never acks) every message whose sequence number is a multiple of this. */
const KEEP_EVERY = 10;

const [dataDir, firstArg, owner] = process.argv.slice(2);
if (dataDir === undefined || firstArg === undefined || owner === undefined) {
  throw new Error('usage: crash-publisher <data dir> <first sequence number> <owner id>');
}
const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const silent: QueueLogger = { child: () => silent, debug() {}, info() {}, warn() {}, error() {} };

const storage = await openNodeStorage(dataDir);
let actor: QueueActor | undefined;

const consumer: OwnerSink = {
  deliver(_queue, _tag, id, _redelivered, _count, message: StoredMessage) {
    const seq = sequenceOf(message);
    out(`got ${seq}`);
    if (seq % KEEP_EVERY === 0) return;
    out(`acking ${seq}`);
    // Never re-enter the log from inside an apply.
    queueMicrotask(() => {
      actor?.settle(owner, [id]).catch(() => {});
    });
  },
  consumerCancelled() {},
};
const sinks: QueueActorSinks = {
  resolveOwner: (id) => (id === owner ? consumer : undefined),
  routeDeadLetter: () => 'no-exchange',
  onQueueExpired() {},
};

actor = new QueueActor({
  vhost: '/',
  name: 'crash',
  groupId: CRASH_QUEUE_GROUP,
  log: durableQueueLog(storage, CRASH_QUEUE_GROUP, {
    compaction: { maxEntries: COMPACT_EVERY, snapshotRatio: 0 },
  }),
  bodyStore: storage.bodyStore,
  config: DEFAULT_QUEUE_CONFIG,
  logger: silent,
  sinks,
});
await actor.open();
await actor.consume(owner, 'ctag', PREFETCH, false, false);
out('ready');

const queue = actor;
let next = Number(firstArg);
function publish(): void {
  const seq = next++;
  queue.enqueue(crashMessage(seq), undefined).then(
    () => {
      out(`confirmed ${seq}`);
      publish();
    },
    (error: unknown) => {
      process.stderr.write(`enqueue ${seq} failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
}
for (let i = 0; i < IN_FLIGHT; i++) publish();
