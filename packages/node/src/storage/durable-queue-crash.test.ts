/**
 * Crash test: a durable queue's process is SIGKILLed during a stream of confirmed publishes (with
 * a consumer acking, and compactions truncating the log); after restart, every confirmed message
 * is there exactly once unless its ack was proposed, acked ones never come back, and a message
 * delivered before the crash comes back marked redelivered.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OwnerSink, QueueLogger } from '../queue/queue-actor.ts';
import { QueueActor } from '../queue/queue-actor.ts';
import type { StoredMessage } from '../queue/types.ts';
import { DEFAULT_QUEUE_CONFIG } from '../queue/types.ts';
import { durableQueueLog } from './durable-queue-log.ts';
import { openNodeStorage } from './node-storage.ts';
import { CRASH_QUEUE_GROUP, sequenceOf } from './test-support/crash-messages.ts';
import { tempDir } from './test-support/storage-fixtures.ts';

const PUBLISHER = fileURLToPath(new URL('./test-support/crash-publisher.ts', import.meta.url));
/** Confirms to see before each kill: enough for several compactions (every 300 entries). */
const CONFIRMS_BEFORE_KILL = 1500;
/** Sequence numbers of run k start at k × RUN_STRIDE + 1, so runs never reuse one. */
const RUN_STRIDE = 1_000_000;

/** What the parent learnt from the children's reports. */
interface Observed {
  readonly confirmed: Set<number>;
  readonly got: Set<number>;
  readonly acking: Set<number>;
}

async function runAndKill(dir: string, run: number, observed: Observed): Promise<void> {
  const child = spawn(process.execPath, [PUBLISHER, dir, String(run * RUN_STRIDE + 1), `run${run}/1`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  let confirms = 0;
  // Read to the end, past the kill: the child goes on until the signal lands, and a settle it
  // proposed meanwhile may commit. Its `acking` line is in the pipe before the proposal (stdout
  // writes to a pipe are synchronous on Linux), so stopping at the kill would miss acks that took
  // effect and count their messages as lost.
  for await (const line of createInterface({ input: child.stdout })) {
    const [event, value] = line.split(' ');
    const seq = Number(value);
    if (event === 'confirmed') {
      observed.confirmed.add(seq);
      if (++confirms === CONFIRMS_BEFORE_KILL) child.kill('SIGKILL');
    } else if (event === 'got') {
      observed.got.add(seq);
    } else if (event === 'acking') {
      observed.acking.add(seq);
    }
  }
  const exit = await exited;
  if (exit !== 'SIGKILL') throw new Error(`publisher exited with ${String(exit)} before the kill: ${stderr}`);
}

interface Survivor {
  readonly seq: number;
  readonly redelivered: boolean;
}

/** Open the queue in-process, let it return what dead owners held, and read every message. */
async function survivors(dir: string): Promise<Survivor[]> {
  const storage = await openNodeStorage(dir);
  // The child compacted during the stream: its log starts after a snapshot.
  expect(storage.logStore.snapshot(CRASH_QUEUE_GROUP)?.meta.index).toBeGreaterThan(0);
  const found: Survivor[] = [];
  const reader: OwnerSink = {
    deliver(_q, _tag, _id, redelivered, _count, message: StoredMessage) {
      found.push({ seq: sequenceOf(message), redelivered });
    },
    consumerCancelled() {},
  };
  const silent: QueueLogger = { child: () => silent, debug() {}, info() {}, warn() {}, error() {} };
  const actor = new QueueActor({
    vhost: '/',
    name: 'crash',
    groupId: CRASH_QUEUE_GROUP,
    log: durableQueueLog(storage, CRASH_QUEUE_GROUP),
    bodyStore: storage.bodyStore,
    config: DEFAULT_QUEUE_CONFIG,
    logger: silent,
    sinks: {
      resolveOwner: (owner) => (owner === 'reader/1' ? reader : undefined),
      routeDeadLetter: () => 'no-exchange',
      onQueueExpired() {},
    },
  });
  await actor.open();
  for (let i = 0; i < 4000 && actor.counts().unacked > 0; i++) await new Promise((r) => setTimeout(r, 5));
  expect(actor.counts().unacked).toBe(0);
  const total = actor.counts().ready;
  await actor.consume('reader/1', 'all', 0, false, false);
  expect(found).toHaveLength(total);
  expect(storage.bodyStore.count(CRASH_QUEUE_GROUP)).toBe(total);
  await actor.close();
  await storage.close();
  return found;
}

function check(found: readonly Survivor[], observed: Observed): void {
  const present = new Map<number, Survivor>();
  for (const survivor of found) {
    // Never duplicated: each sequence number was published once.
    expect(present.has(survivor.seq)).toBe(false);
    present.set(survivor.seq, survivor);
  }
  const lost: number[] = [];
  for (const seq of observed.confirmed) if (!present.has(seq) && !observed.acking.has(seq)) lost.push(seq);
  expect(lost, 'confirmed, never acked, and gone').toEqual([]);
  for (const survivor of found) {
    // Delivered before a crash and not acked: back, and marked redelivered.
    if (observed.got.has(survivor.seq)) expect(survivor.redelivered).toBe(true);
  }
}

describe('durable queue under SIGKILL', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('queue-crash');
  });
  afterEach(() => {
    dir.remove();
  });

  it('keeps every confirmed message across two kills, none duplicated, redelivered marked', async () => {
    const observed: Observed = { confirmed: new Set(), got: new Set(), acking: new Set() };
    await runAndKill(dir.path, 1, observed);
    check(await survivors(dir.path), observed);
    // The survivors() pass attached and detached a consumer; a second run continues on top.
    await runAndKill(dir.path, 2, observed);
    const found = await survivors(dir.path);
    check(found, observed);
    // The test exercised what it claims: acks went through and messages were kept unacked.
    expect(observed.acking.size).toBeGreaterThan(0);
    expect(found.some((s) => s.redelivered)).toBe(true);
    expect(found.length).toBeGreaterThan(CONFIRMS_BEFORE_KILL);
  }, 120_000);
});
