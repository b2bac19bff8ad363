import { describe, expect, it } from 'vitest';
import type { CounterCommand, CounterResult } from './compliance/index.ts';
import { CounterMachine, replicatedLogCompliance } from './compliance/index.ts';
import { InMemoryLog } from './in-memory-log.ts';

replicatedLogCompliance('InMemoryLog', {
  create: (groupId, { clock }) => new InMemoryLog(groupId, { clock }),
});

describe('InMemoryLog', () => {
  it('applies a whole turn of proposals before resolving any of them', async () => {
    const log = new InMemoryLog<CounterCommand, CounterResult>('g');
    const machine = new CounterMachine();
    await log.open(machine);
    const seenAtResolution: number[] = [];
    const proposals = [1, 2, 3].map((add) =>
      log.propose({ add }).then(() => seenAtResolution.push(machine.state.values.length)),
    );
    expect(machine.state.values).toEqual([]); // nothing applied synchronously inside propose
    await Promise.all(proposals);
    expect(seenAtResolution).toEqual([3, 3, 3]);
  });

  it('starts a new batch for proposals made while a batch is applied', async () => {
    const log = new InMemoryLog<number, number>('g');
    const order: number[] = [];
    let nested: Promise<number> | undefined;
    await log.open({
      apply: (command, meta) => {
        order.push(command);
        if (command === 1) nested = log.propose(3);
        return meta.index;
      },
      snapshot: () => new Uint8Array(),
      restore: () => {},
    });
    const indexes = await Promise.all([log.propose(1), log.propose(2)]);
    expect(await nested).toBe(3);
    expect(indexes).toEqual([1, 2]);
    expect(order).toEqual([1, 2, 3]);
  });

  it('reports term 1 and the configured node as leader', async () => {
    const log = new InMemoryLog('g', { nodeId: 'node-a' });
    const changes: unknown[] = [];
    log.onRole((change) => changes.push(change));
    await log.open(new CounterMachine());
    expect(changes).toEqual([{ role: 'leader', term: 1, leader: 'node-a' }]);
  });

  it('compact and destroy keep nothing and need nothing', async () => {
    const log = new InMemoryLog('g');
    const machine = new CounterMachine();
    await log.open(machine);
    await log.propose({ add: 1 });
    await expect(log.compact()).resolves.toBeUndefined();
    await log.destroy();
    expect(machine.restored).toEqual([]);
  });
});
