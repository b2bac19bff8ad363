import { describe, expect, it } from 'vitest';
import type { CounterCommand, CounterResult } from '../compliance/index.ts';
import { CounterMachine, counterCodec } from '../compliance/index.ts';
import { LogClosedError } from '../errors.ts';
import { MessageType, message } from '../raft/types.ts';
import { LogStore } from '../storage/log-store.ts';
import { ManualSyncLogStorage } from '../storage/manual-sync-log-storage.ts';
import { AdmissionQueueFullError, GroupOverloadedError, PeerUnreachableError } from './errors.ts';
import { InProcessHub } from './in-process-transport.ts';
import { RaftHost } from './raft-host.ts';
import type { PeerBatch } from './transport.ts';

const store = (): LogStore => new LogStore(new ManualSyncLogStorage({ mode: 'auto' }));

async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 2));
}

const batch = (from: string, n: number): PeerBatch => ({
  from,
  messages: [{ groupId: 'g', message: message(MessageType.Heartbeat, from, 'b', n) }],
  quiesce: [],
});

describe('InProcessHub', () => {
  it('delivers batches later, in send order, and resolves send on delivery', async () => {
    const hub = new InProcessHub();
    const a = hub.connect('a');
    const b = hub.connect('b');
    const terms: number[] = [];
    b.onReceive((received) => terms.push(received.messages[0]?.message.term ?? -1));
    const sent = [1, 2, 3].map((n) => a.send('b', batch('a', n)));
    expect(terms).toEqual([]); // never synchronously inside send
    await Promise.all(sent);
    expect(terms).toEqual([1, 2, 3]);
  });

  it('drops what the filter refuses, rejects sends to unknown peers, and reports disconnected peers down', async () => {
    const hub = new InProcessHub();
    const a = hub.connect('a');
    const b = hub.connect('b');
    const received: number[] = [];
    const down: string[] = [];
    b.onReceive((r) => received.push(r.messages[0]?.message.term ?? -1));
    a.onPeerDown((peer) => down.push(peer));
    hub.setFilter((_from, _to, r) => (r.messages[0]?.message.term ?? 0) % 2 === 1);
    await Promise.all([1, 2, 3].map((n) => a.send('b', batch('a', n))));
    expect(received).toEqual([1, 3]);
    await expect(a.send('nobody', batch('a', 1))).rejects.toBeInstanceOf(PeerUnreachableError);
    hub.disconnect('b');
    expect(down).toEqual(['b']);
    await expect(a.send('b', batch('a', 5))).rejects.toBeInstanceOf(PeerUnreachableError);
  });
});

describe('RaftHost', () => {
  it('quiesces an idle one-voter group: the timer stops, a proposal wakes it', async () => {
    const host = new RaftHost({ nodeId: 'a', logStore: store(), tickMs: 5 });
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec);
    await log.open(new CounterMachine());
    await log.propose({ add: 1 });
    await eventually(() => host.stats.activeGroups === 0);
    const ticks = host.stats.ticks;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(host.stats.ticks).toBe(ticks);
    expect((await log.propose({ add: 2 })).total).toBe(3);
    await host.close();
  });

  it('holds proposals past the in-flight bound and runs them in order as bytes drain', async () => {
    const host = new RaftHost({ nodeId: 'a', logStore: store(), maxBytesInFlight: 1 });
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec);
    const machine = new CounterMachine();
    await log.open(machine);
    const proposals = Array.from({ length: 20 }, (_, i) => log.propose({ add: i + 1 }));
    expect(host.stats.waitingProposals).toBe(19);
    const results = await Promise.all(proposals);
    expect(results.map((r) => r.index)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(machine.state.values).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(host.stats.bytesInFlight).toBe(0);
    await host.close();
  });

  it('admits a burst far over the node bound into one group in turn: its core never drops any', async () => {
    const host = new RaftHost({ nodeId: 'a', logStore: store(), maxBytesInFlight: 4096 });
    // Unless tuned, a group's uncommitted bound sits above the node's in-flight bound.
    expect(host.tuning.maxUncommittedEntriesBytes).toBe(8192);
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec);
    const machine = new CounterMachine();
    await log.open(machine);
    const n = 5_000;
    const proposals = Array.from({ length: n }, (_, i) => log.propose({ add: i + 1 }));
    const results = await Promise.all(proposals);
    expect(results).toHaveLength(n);
    expect(machine.state.values).toHaveLength(n);
    expect(host.stats.bytesInFlight).toBe(0);
    await host.close();
  });

  it('bounds the proposals waiting for the in-flight bound: past it one is refused at once, clearly', async () => {
    const host = new RaftHost({
      nodeId: 'a',
      logStore: store(),
      maxBytesInFlight: 1,
      maxWaitingProposals: 100,
    });
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec);
    const machine = new CounterMachine();
    await log.open(machine);
    const proposals = Array.from({ length: 1_000 }, (_, i) => log.propose({ add: i + 1 }));
    // One admitted, 100 waiting; the rest refused, not held.
    expect(host.stats.waitingProposals).toBe(100);
    const outcomes = await Promise.allSettled(proposals);
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(refused).toHaveLength(899);
    for (const reason of refused) {
      expect(reason).toBeInstanceOf(AdmissionQueueFullError);
      // An overload: callers that retry a full group retry this too.
      expect(reason).toBeInstanceOf(GroupOverloadedError);
      expect((reason as AdmissionQueueFullError).code).toBe('ADMISSION_QUEUE_FULL');
    }
    expect(machine.state.values).toEqual(Array.from({ length: 101 }, (_, i) => i + 1));
    // Room again once they drained.
    expect((await log.propose({ add: 5 })).index).toBe(102);
    await host.close();
  });

  it('rejects proposals still waiting for the bound when the host closes', async () => {
    const host = new RaftHost({ nodeId: 'a', logStore: store(), maxBytesInFlight: 1 });
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec);
    await log.open(new CounterMachine());
    const proposals = [1, 2, 3].map((add) => log.propose({ add }));
    await host.close();
    const outcomes = await Promise.allSettled(proposals);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(LogClosedError);
    }
  });

  it('refuses a second replica of the same group on one host', async () => {
    const host = new RaftHost({ nodeId: 'a', logStore: store() });
    await host.createLog('g', counterCodec).open(new CounterMachine());
    await expect(host.createLog('g', counterCodec).open(new CounterMachine())).rejects.toThrow(
      /already open/,
    );
    await host.close();
  });
});
