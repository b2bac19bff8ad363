import { describe, expect, it } from 'vitest';
import { QueueMachine } from './queue-machine.ts';
import type { QueueCommand } from './types.ts';

// The return keys behind redrive's browse position: derived from the log alone, kept by snapshots.

function run(machine: QueueMachine, commands: readonly QueueCommand[], from = 1): number {
  let index = from;
  for (const command of commands) machine.apply(command, { index: index++, term: 1, ts: 1000 + index });
  return index;
}

const enqueue: QueueCommand = {
  type: 'enqueue',
  size: 1,
  ttl: undefined,
  message: { exchange: '', routingKey: 'q', properties: {}, body: Buffer.from('m'), bcc: undefined },
};
const get: QueueCommand = { type: 'get', owner: 'c', noAck: false };

describe('QueueMachine return keys', () => {
  it('a position past a removed returned message goes on with the next, never the main FIFO alone', () => {
    const machine = new QueueMachine();
    const next = run(machine, [
      enqueue,
      enqueue,
      enqueue,
      enqueue,
      get,
      get,
      get,
      { type: 'return', owner: 'c', ids: [3, 1, 2] },
    ]);
    const [first] = [...machine.browseEntries(undefined)];
    expect(first?.entry.id).toBe(3);
    run(machine, [{ type: 'remove', ids: [3] }], next);
    expect([...machine.browseEntries(undefined, first?.position)].map((r) => r.entry.id)).toEqual([1, 2, 4]);
  });

  it('snapshots keep the keys (version 4 while messages are returned) and restore the same positions', () => {
    const machine = new QueueMachine();
    run(machine, [enqueue, enqueue, get, get, { type: 'return', owner: 'c', ids: [2, 1] }]);
    const snapshot = machine.snapshot();
    expect(snapshot[0]).toBe(4);
    const copy = new QueueMachine();
    copy.restore(snapshot, { index: 5, term: 1, ts: 0 });
    expect([...copy.browseEntries(undefined)].map((r) => r.position)).toEqual(
      [...machine.browseEntries(undefined)].map((r) => r.position),
    );
    expect(copy.snapshot()).toEqual(snapshot);
  });

  it('a queue with nothing returned still writes version 2, readable by builds before the keys', () => {
    const machine = new QueueMachine();
    run(machine, [enqueue]);
    expect(machine.snapshot()[0]).toBe(2);
  });
});
