/**
 * Replicas of a durable queue as the node wires them (`durableQueueGroup`: a Raft group on each
 * node's LMDB storage, compacting by policy, bodies in each node's LMDB body store), three nodes on
 * the in-process hub. The seam that lost bodies (issue 19): a replica that catches up by snapshot
 * must receive the live bodies with it, keep them across a restart, and serve every message once
 * it leads.
 */
import type { ReplicatedLog } from '@styx/raft';
import { InProcessHub } from '@styx/raft';
import { afterEach, describe, expect, it } from 'vitest';
import { QueueActor } from '../queue/queue-actor.ts';
import { OWNER, RecordingLogger, RecordingSinks } from '../queue/queue-actor-test-support.ts';
import { queueConfig } from '../queue/queue-test-harness.ts';
import type { QueueApplyResult, QueueCommand, StoredMessage } from '../queue/types.ts';
import type { DurableQueueGroup } from './durable-queue-log.ts';
import { durableQueueGroup } from './durable-queue-log.ts';
import type { NodeStorage } from './node-storage.ts';
import { openNodeStorage } from './node-storage.ts';
import { raftHostOf } from './raft-groups.ts';
import { tempDir } from './test-support/storage-fixtures.ts';

const GROUP = 'q-replicas-test';
const NODES = ['n1', 'n2', 'n3'] as const;
/** Compaction every 200 entries: a replica cut off for 600 publishes must catch up by snapshot. */
const COMPACTION = { maxEntries: 200 };

function message(n: number): StoredMessage {
  const body = Buffer.alloc(256, 0x2e);
  body.write(`message ${n}`);
  return { exchange: '', routingKey: 'q', properties: {}, body, bcc: undefined };
}

function numberOf(m: StoredMessage | undefined): number {
  const text = Buffer.from(m?.body ?? new Uint8Array()).toString('latin1');
  return Number(/^message (\d+)/.exec(text)?.[1] ?? Number.NaN);
}

async function eventually(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface Replica {
  readonly id: string;
  readonly dir: string;
  storage: NodeStorage;
  group: DurableQueueGroup;
  actor: QueueActor;
}

describe('durable queue replicas on LMDB: catching up by snapshot', () => {
  const hub = new InProcessHub();
  const replicas: Replica[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  afterEach(async () => {
    for (const replica of replicas.splice(0)) {
      await replica.actor.close().catch(() => undefined);
      await replica.storage.close().catch(() => undefined);
    }
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  /** Open (or reopen) node `id`'s storage, group and actor; `start`: how an empty replica starts. */
  async function openReplica(id: string, dir: string, start: 'bootstrap' | 'join'): Promise<Replica> {
    const storage = await openNodeStorage(dir, undefined, { nodeId: id });
    raftHostOf(storage, hub.connect(id));
    const group = durableQueueGroup(storage, GROUP, { start, compaction: COMPACTION });
    const actor = new QueueActor({
      vhost: '/',
      name: 'q',
      groupId: GROUP,
      log: group.log as ReplicatedLog<QueueCommand, QueueApplyResult>,
      bodyStore: storage.bodyStore,
      config: queueConfig(),
      logger: new RecordingLogger(),
      sinks: new RecordingSinks(),
    });
    const replica: Replica = { id, dir, storage, group, actor };
    replicas.push(replica);
    return replica;
  }

  /** The live messages of `replica` whose body its store lacks. */
  function missingBodies(replica: Replica): number[] {
    const missing: number[] = [];
    for (const id of replica.actor.liveIds()) {
      if (replica.storage.bodyStore.get(GROUP, id) === undefined) missing.push(id);
    }
    return missing;
  }

  it('receives every live body, keeps them through a restart, and serves them all as leader', async () => {
    const dirs = NODES.map(() => tempDir('styx-replicas-'));
    for (const dir of dirs) cleanups.push(async () => dir.remove());
    const [r1, r2, r3] = await Promise.all(
      NODES.map((id, i) =>
        openReplica(id, (dirs[i] as { path: string }).path, i === 0 ? 'bootstrap' : 'join'),
      ),
    );
    if (r1 === undefined || r2 === undefined || r3 === undefined) throw new Error('replicas');
    await Promise.all([r2.actor.open(), r3.actor.open()]);
    await r1.actor.open();
    await eventually(() => r1.group.log.role === 'leader', 'n1 to lead');
    await r1.group.group.changeMembership([{ type: 'addVoter', nodeId: 'n2' }]);
    await r1.group.group.changeMembership([{ type: 'addVoter', nodeId: 'n3' }]);

    // n3 cut off while 600 messages arrive and a few leave: the leader compacts past its log.
    hub.setFilter((from, to) => from !== 'n3' && to !== 'n3');
    for (let n = 0; n < 600; n++) await r1.actor.enqueue(message(n), undefined);
    for (let k = 0; k < 50; k++) expect(await r1.actor.get(OWNER, true)).toBeDefined();
    await eventually(() => (r1.storage.logStore.snapshot(GROUP)?.meta.index ?? 0) > 400, 'a compaction');
    hub.setFilter(undefined);
    await eventually(() => r3.group.group.appliedIndex === r1.group.group.appliedIndex, 'n3 to catch up');
    expect(r3.storage.logStore.snapshot(GROUP)?.meta.index ?? 0).toBeGreaterThan(400);
    expect(r3.actor.counts().ready).toBe(550);
    expect(missingBodies(r3)).toStrictEqual([]);

    // n3 restarts from its own disk (bodies held only in memory are gone) ...
    await r3.actor.close();
    await r3.storage.close();
    replicas.splice(replicas.indexOf(r3), 1);
    hub.disconnect('n3');
    const again = await openReplica('n3', r3.dir, 'join');
    await again.actor.open();
    await eventually(() => again.group.group.appliedIndex === r1.group.group.appliedIndex, 'n3 to replay');
    expect(missingBodies(again)).toStrictEqual([]);

    // ... and, leading, serves every message in order.
    await eventually(() => {
      if (again.group.log.role === 'leader') return true;
      if (r1.group.log.role === 'leader') r1.group.group.transferLeadership('n3');
      if (r2.group.log.role === 'leader') r2.group.group.transferLeadership('n3');
      return false;
    }, 'n3 to lead');
    const got: number[] = [];
    for (;;) {
      const result = await again.actor.get(OWNER, true);
      if (result === undefined) break;
      got.push(numberOf(result.message));
    }
    expect(got).toStrictEqual(Array.from({ length: 550 }, (_, k) => k + 50));
  }, 60_000);
});
