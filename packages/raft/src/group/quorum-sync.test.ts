import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CounterCommand, CounterResult } from '../compliance/index.ts';
import { CounterMachine, counterCodec } from '../compliance/index.ts';
import { LogFailedError } from '../errors.ts';
import { LogStore } from '../storage/log-store.ts';
import { ManualSyncLogStorage } from '../storage/manual-sync-log-storage.ts';
import { InProcessHub } from './in-process-transport.ts';
import type { RaftGroupLog } from './raft-group-log.ts';
import { RaftHost } from './raft-host.ts';

type CounterLog = RaftGroupLog<CounterCommand, CounterResult>;

/** Turns of the event loop (setImmediate), enough for messages and Readys to go round many times. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 2));
}

/**
 * Three hosts whose storages withhold every sync until the test opens that host's gate: what a
 * proposal's promise waits for is then visible.
 */
class GatedNodes {
  readonly ids = ['n1', 'n2', 'n3'];
  readonly storages = this.ids.map(() => new ManualSyncLogStorage({ mode: 'manual' }));
  readonly gates = this.ids.map(() => true);
  readonly hub = new InProcessHub();
  readonly hosts: RaftHost[];
  readonly #pump: NodeJS.Timeout;

  /** `tickMs`: the hosts' tick; a long one keeps timers (heartbeats, elections) out of a test. */
  constructor(tickMs = 10) {
    this.hosts = this.ids.map(
      (id, i) =>
        new RaftHost({
          nodeId: id,
          logStore: new LogStore(this.storages[i] as ManualSyncLogStorage),
          transport: this.hub.connect(id),
          tickMs,
          raft: { electionTicks: id === 'n1' ? 10 : 50 },
        }),
    );
    this.#pump = setInterval(() => {
      this.storages.forEach((storage, i) => {
        if (this.gates[i]) storage.releaseAll();
      });
    }, 1);
  }

  async group(groupId: string): Promise<{ leader: CounterLog; machines: CounterMachine[] }> {
    const machines = this.ids.map(() => new CounterMachine());
    const followers = [1, 2].map((i) =>
      (this.hosts[i] as RaftHost).createLog<CounterCommand, CounterResult>(groupId, counterCodec, {
        voters: this.ids,
      }),
    );
    await Promise.all(followers.map((log, i) => log.open(machines[i + 1] as CounterMachine)));
    const leader = (this.hosts[0] as RaftHost).createLog<CounterCommand, CounterResult>(
      groupId,
      counterCodec,
      {
        voters: this.ids,
        campaignOnOpen: true,
      },
    );
    await leader.open(machines[0] as CounterMachine);
    await eventually(() => leader.role === 'leader');
    return { leader, machines };
  }

  async close(): Promise<void> {
    clearInterval(this.#pump);
    for (const host of this.hosts) await host.close();
  }
}

describe('RaftGroupLog: committed means synced on a quorum', () => {
  let nodes: GatedNodes;
  beforeEach(() => {
    nodes = new GatedNodes();
  });
  afterEach(async () => {
    await nodes.close();
  });

  it('resolves a proposal only once the leader and one follower have synced its entry', async () => {
    const { leader } = await nodes.group('g');
    await leader.propose({ add: 1 });
    nodes.gates[1] = false;
    nodes.gates[2] = false;
    let resolved = false;
    const proposal = leader.propose({ add: 2 }).then((result) => {
      resolved = true;
      return result;
    });
    await turns(200);
    expect(resolved).toBe(false);
    // The followers have the entry in memory, not on disk: their acks are still held back.
    expect(nodes.storages[1]?.pendingSyncs).toBeGreaterThan(0);
    nodes.gates[2] = true;
    const result = await proposal;
    expect(result.total).toBe(3);
    expect([...(nodes.storages[2]?.durable.entries('g', 0) ?? [])].length).toBeGreaterThan(0);
  });

  it('does not apply on the leader before its own sync, even with both followers synced', async () => {
    const { leader, machines } = await nodes.group('g');
    nodes.gates[0] = false;
    let resolved = false;
    const proposal = leader.propose({ add: 5 }).then(() => {
      resolved = true;
    });
    await turns(200);
    expect(resolved).toBe(false);
    expect(machines[0]?.state.total).toBe(0);
    nodes.gates[0] = true;
    await proposal;
    expect(machines[0]?.state.total).toBe(5);
  });

  it('fails the proposals waiting on a failed sync, with LogFailedError', async () => {
    const { leader } = await nodes.group('g');
    nodes.gates[0] = false;
    const proposal = leader.propose({ add: 1 });
    await eventually(() => (nodes.storages[0]?.pendingSyncs ?? 0) > 0);
    nodes.storages[0]?.failSync(new Error('disk on fire'));
    await expect(proposal).rejects.toBeInstanceOf(LogFailedError);
    await expect(leader.propose({ add: 1 })).rejects.toBeInstanceOf(LogFailedError);
  });
});

describe('RaftGroupLog: pipelined storage writes', () => {
  // Ticks of 1 s: no heartbeat or election comes between the steps of the script, however slow
  // the machine (a leader whose pipeline waits on a withheld sync sends no heartbeats).
  let slow: GatedNodes;
  beforeEach(() => {
    slow = new GatedNodes(1000);
  });
  afterEach(async () => {
    await slow.close();
  });

  it('pipelines: the next entry is replicated while the leader still syncs the previous one, and each confirm waits for the sync of its own entry', async () => {
    const { leader, machines } = await slow.group('g');
    await leader.propose({ add: 1 });
    const storage = slow.storages[0] as ManualSyncLogStorage;
    const follower = slow.storages[1] as ManualSyncLogStorage;
    const base = follower.durable.lastIndex('g');
    slow.gates[0] = false;
    // Per proposal: the leader's durable last index when its confirm arrived.
    const confirmedAt = new Map<string, number>();
    const first = leader.propose({ add: 10 }).then(() => {
      confirmedAt.set('first', storage.durable.lastIndex('g'));
    });
    await eventually(() => follower.durable.lastIndex('g') > base);
    const firstIndex = follower.durable.lastIndex('g');
    const second = leader.propose({ add: 100 }).then(() => {
      confirmedAt.set('second', storage.durable.lastIndex('g'));
    });
    // With one Ready at a time the leader would send the second entry only after its own sync of
    // the first: here it reaches the followers' disks while that sync is still withheld.
    await eventually(() => follower.durable.lastIndex('g') > firstIndex);
    const secondIndex = follower.durable.lastIndex('g');
    await turns(100);
    expect(storage.durable.lastIndex('g')).toBeLessThan(firstIndex);
    // A quorum without the leader has both entries, yet the leader confirms nothing before its sync.
    expect(confirmedAt.size).toBe(0);
    expect(machines[0]?.state.total).toBe(1);
    while (confirmedAt.size < 2 && storage.releaseSync()) await turns(50);
    slow.gates[0] = true;
    await Promise.all([first, second]);
    expect(confirmedAt.get('first')).toBeGreaterThanOrEqual(firstIndex);
    expect(confirmedAt.get('second')).toBeGreaterThanOrEqual(secondIndex);
    expect(machines[0]?.state.total).toBe(111);
  });
});
