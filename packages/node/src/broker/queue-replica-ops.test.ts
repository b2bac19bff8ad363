import { describe, expect, it, vi } from 'vitest';
import type { GroupStatus } from '../cluster/queue-rpc-codec.ts';
import { silentLogger } from '../logging/logger.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { QueueRecord } from '../metadata/types.ts';
import { Fixture } from '../router/test-support.ts';
import type { QueueReplicaOpsHost } from './queue-replica-ops.ts';
import { QueueReplicaOperations, REBALANCE_BATCH, REBALANCE_PAUSE_MS } from './queue-replica-ops.ts';

const NODES = ['id-1', 'id-2', 'id-3'];

/** Three members and `count` queues with a replica on each, all led by id-2 (id-1 just came back). */
function metadataWithQueues(count: number): MetadataMachine {
  const f = new Fixture();
  for (const [i, id] of NODES.entries()) {
    f.run({ type: 'addClusterNode', id, peerId: id, name: `styx-${i + 1}`, address: `10.0.0.${i}:25680` });
  }
  for (let i = 0; i < count; i++) {
    const name = `q${i}`;
    f.queue(name).run({ type: 'setQueueMembers', vhost: '/', name, groupId: name, members: NODES });
  }
  return f.m;
}

/** When each transfer was asked, and how many were asked but not yet answered at most. */
interface Asked {
  readonly at: number[];
  maxOutstanding: number;
  /** The queues asked, in order (when the test wants them). */
  readonly names?: string[];
}

interface Cluster {
  /** Each queue's leader: id-2 for all at first; a transfer moves it once answered. */
  readonly leaders: Map<string, string>;
  leadsMetadata: boolean;
  /** Members whose replicas do not hold their leaders' whole logs yet: transfers to them are refused. */
  behind?: Set<string>;
}

function operations(metadata: MetadataMachine, asked: Asked, cluster?: Cluster): QueueReplicaOperations {
  let outstanding = 0;
  const leaders = cluster?.leaders ?? new Map<string, string>();
  const host: QueueReplicaOpsHost = {
    metadata,
    logger: silentLogger(),
    cluster: { isDown: () => false },
    clusterQueues: {
      membersOf: (record: QueueRecord) => record.members ?? [],
      handle: (record: QueueRecord) =>
        ({ leader: leaders.get(record.name) ?? 'id-2' }) as ReturnType<
          NonNullable<QueueReplicaOpsHost['clusterQueues']>['handle']
        >,
      status: async () => ({}) as GroupStatus,
      // A remote leader answers a transfer after a round trip (the new leader known from then on
      // when the test keeps leaders).
      transferLeadership: async (record: QueueRecord, to: string) => {
        asked.at.push(performance.now());
        asked.names?.push(record.name);
        asked.maxOutstanding = Math.max(asked.maxOutstanding, ++outstanding);
        await new Promise((resolve) => setTimeout(resolve, 5));
        outstanding--;
        if (cluster?.behind?.has(to) === true) return false;
        if (cluster !== undefined) leaders.set(record.name, to);
        return true;
      },
    },
    leadsMetadata: () => cluster?.leadsMetadata ?? true,
    runMeta: async () => undefined,
  };
  return new QueueReplicaOperations(host);
}

describe('QueueReplicaOperations.rebalanceQueues', () => {
  it('moves leaders to a returning member gradually: batches of REBALANCE_BATCH, a pause between', async () => {
    const metadata = metadataWithQueues(3 * REBALANCE_BATCH);
    const asked: Asked = { at: [], maxOutstanding: 0 };
    const transfers = await operations(metadata, asked).rebalanceQueues();
    // 150 queues led by id-2: a third each to id-1 and id-3.
    expect(transfers.length).toBe(2 * REBALANCE_BATCH);
    expect(transfers.filter((t) => t.to === 'id-1').length).toBe(REBALANCE_BATCH);
    expect(asked.at.length).toBe(transfers.length);
    expect(asked.maxOutstanding).toBe(REBALANCE_BATCH);
    const gap = (asked.at[REBALANCE_BATCH] as number) - (asked.at[REBALANCE_BATCH - 1] as number);
    expect(gap).toBeGreaterThanOrEqual(REBALANCE_PAUSE_MS - 5);
  });

  it('asks no more transfers once stopped (the node shuts down mid-rebalance)', async () => {
    const metadata = metadataWithQueues(3 * REBALANCE_BATCH);
    const asked: Asked = { at: [], maxOutstanding: 0 };
    const ops = operations(metadata, asked);
    const done = ops.rebalanceQueues();
    ops.stop();
    await done;
    expect(asked.at.length).toBe(REBALANCE_BATCH);
  });

  it('runs one rebalance at a time: one asked meanwhile plans after it and moves nothing twice', async () => {
    const metadata = metadataWithQueues(3 * REBALANCE_BATCH);
    const asked: Asked = { at: [], maxOutstanding: 0, names: [] };
    const ops = operations(metadata, asked, { leaders: new Map(), leadsMetadata: true });
    const [first, second] = await Promise.all([ops.rebalanceQueues(), ops.rebalanceQueues()]);
    expect(first.length).toBe(2 * REBALANCE_BATCH);
    expect(second).toEqual([]);
    expect(new Set(asked.names).size).toBe(asked.names?.length);
  });

  it('skips a transfer whose queue another node or an election moved meanwhile', async () => {
    const metadata = metadataWithQueues(3 * REBALANCE_BATCH);
    const asked: Asked = { at: [], maxOutstanding: 0, names: [] };
    const cluster: Cluster = { leaders: new Map(), leadsMetadata: true };
    const done = operations(metadata, asked, cluster).rebalanceQueues();
    // While the first batch is answered, every queue not asked yet gets a leader by election.
    await vi.waitFor(() => expect(asked.names?.length).toBe(REBALANCE_BATCH));
    for (let i = 0; i < 3 * REBALANCE_BATCH; i++) {
      if (!asked.names?.includes(`q${i}`)) cluster.leaders.set(`q${i}`, 'id-3');
    }
    const transfers = await done;
    expect(transfers.length).toBe(REBALANCE_BATCH);
    expect(asked.names?.length).toBe(REBALANCE_BATCH);
  });

  it("stops the metadata leader's own rebalance once it no longer leads the metadata group", async () => {
    vi.useFakeTimers();
    try {
      const metadata = metadataWithQueues(3 * REBALANCE_BATCH);
      const asked: Asked = { at: [], maxOutstanding: 0, names: [] };
      const cluster: Cluster = { leaders: new Map(), leadsMetadata: true };
      operations(metadata, asked, cluster).scheduleRebalance();
      await vi.advanceTimersByTimeAsync(10_000 + 10);
      expect(asked.names?.length).toBe(REBALANCE_BATCH);
      cluster.leadsMetadata = false;
      await vi.advanceTimersByTimeAsync(5 * REBALANCE_PAUSE_MS);
      expect(asked.names?.length).toBe(REBALANCE_BATCH);
    } finally {
      vi.useRealTimers();
    }
  });

  it('rebalances again later for transfers refused while their target was catching up', async () => {
    vi.useFakeTimers();
    try {
      const metadata = metadataWithQueues(3 * REBALANCE_BATCH);
      const asked: Asked = { at: [], maxOutstanding: 0, names: [] };
      const cluster: Cluster = { leaders: new Map(), leadsMetadata: true, behind: new Set(['id-1']) };
      operations(metadata, asked, cluster).scheduleRebalance();
      await vi.advanceTimersByTimeAsync(10_000 + 5 * REBALANCE_PAUSE_MS);
      const led = (id: string): number => [...cluster.leaders.values()].filter((l) => l === id).length;
      expect(led('id-3')).toBe(REBALANCE_BATCH);
      expect(led('id-1')).toBe(0);
      cluster.behind?.clear(); // id-1 caught up
      await vi.advanceTimersByTimeAsync(10_000 + 5 * REBALANCE_PAUSE_MS);
      expect(led('id-1')).toBe(REBALANCE_BATCH);
      expect(led('id-3')).toBe(REBALANCE_BATCH);
    } finally {
      vi.useRealTimers();
    }
  });
});
