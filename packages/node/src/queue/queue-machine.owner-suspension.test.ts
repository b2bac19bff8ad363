import { describe, expect, it } from 'vitest';
import { QueueMachine } from './queue-machine.ts';
import { deliveredIds, deliveries, MachineHarness } from './queue-test-harness.ts';

/** Owners on two nodes: A's node gets suspected. */
const A = 'node-a:run1.1/1';
const B = 'node-b:run1.1/1';

describe('QueueMachine owner suspension (a suspected node keeps what it holds)', () => {
  it('sends no new message to a suspended owner: the others get them', () => {
    const h = new MachineHarness();
    h.consume(A, 'ca');
    h.consume(B, 'cb');
    h.apply({ type: 'suspendOwner', owner: A });
    const tags: string[] = [];
    for (let i = 0; i < 3; i++) tags.push(...deliveries(h.enqueue()).map((d) => d.tag));
    expect(tags).toEqual(['cb', 'cb', 'cb']);
    expect(h.machine.consumers().find((c) => c.owner === A)?.unacked).toBe(0);
  });

  it('keeps a suspended owner’s unacked messages, and its acks count', () => {
    const h = new MachineHarness();
    h.consume(A, 'ca', { prefetch: 10 });
    const ids = h.enqueueMany(3);
    h.apply({ type: 'suspendOwner', owner: A });
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 3, consumers: 1 });
    const acked = h.apply({ type: 'settle', owner: A, ids: [ids[0] as number, ids[1] as number] });
    expect(acked.removed).toEqual([ids[0], ids[1]]);
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 1 });
    // The ack freed credit, but a suspended owner takes nothing new.
    expect(deliveries(h.enqueue())).toEqual([]);
    expect(h.machine.counts()).toMatchObject({ ready: 1, unacked: 1 });
  });

  it('resumes an owner: its consumers take the backlog, nothing redelivered', () => {
    const h = new MachineHarness();
    h.consume(A, 'ca', { prefetch: 2 });
    const [first] = h.enqueueMany(1);
    h.apply({ type: 'suspendOwner', owner: A });
    const waitingIds = h.enqueueMany(2);
    const resumed = h.apply({ type: 'resumeOwner', owner: A });
    // One slot of credit left (prefetch 2, one held): the first of the backlog, first delivery.
    expect(deliveries(resumed).map((d) => [d.id, d.redelivered, d.deliveryCount])).toEqual([
      [waitingIds[0], false, 0],
    ]);
    expect(h.machine.heldBy(first as number)).toBe(A);
  });

  it('gives up a suspended owner with ownerDown: its messages return once, count + 1, redelivered', () => {
    const h = new MachineHarness();
    h.consume(A, 'ca');
    const ids = h.enqueueMany(2);
    h.apply({ type: 'suspendOwner', owner: A });
    h.consume(B, 'cb');
    const result = h.apply({ type: 'ownerDown', owner: A });
    expect(deliveries(result).map((d) => [d.owner, d.id, d.redelivered, d.deliveryCount])).toEqual([
      [B, ids[0], true, 1],
      [B, ids[1], true, 1],
    ]);
    expect(h.machine.hasOwner(A)).toBe(false);
    expect(h.machine.isOwnerSuspended(A)).toBe(false);
  });

  it('a consumer a suspended owner attaches waits until it is resumed', () => {
    const h = new MachineHarness();
    h.consume(A, 'ca', { prefetch: 1 });
    h.enqueueMany(1);
    h.apply({ type: 'suspendOwner', owner: A });
    h.consume(A, 'ca2');
    expect(deliveredIds(h.enqueue())).toEqual([]);
    expect(deliveries(h.apply({ type: 'resumeOwner', owner: A })).map((d) => d.tag)).toEqual(['ca2']);
  });

  it('ignores a suspension of an unknown owner, and repeated ones', () => {
    const h = new MachineHarness();
    h.apply({ type: 'suspendOwner', owner: A });
    expect(h.machine.hasOwner(A)).toBe(false);
    h.consume(A, 'ca');
    expect(h.machine.isOwnerSuspended(A)).toBe(false);
    h.apply({ type: 'suspendOwner', owner: A });
    h.apply({ type: 'suspendOwner', owner: A });
    expect(h.machine.isOwnerSuspended(A)).toBe(true);
    h.apply({ type: 'resumeOwner', owner: A });
    h.apply({ type: 'resumeOwner', owner: A });
    expect(deliveredIds(h.enqueue())).toEqual([h.index]);
  });

  it('replicas applying the same entries agree, and a snapshot keeps the suspension', () => {
    const a = new MachineHarness();
    const b = new MachineHarness();
    for (const h of [a, b]) {
      h.consume(A, 'ca', { prefetch: 5 });
      h.consume(B, 'cb', { prefetch: 1 });
      h.enqueueMany(3);
      h.apply({ type: 'suspendOwner', owner: A });
      h.enqueueMany(3);
    }
    const bytes = a.machine.snapshot();
    expect(bytes).toStrictEqual(b.machine.snapshot());
    expect(bytes[0]).toBe(3);
    const restored = new QueueMachine();
    restored.restore(bytes, { index: a.index, term: 1, ts: a.ts });
    expect(restored.isOwnerSuspended(A)).toBe(true);
    expect(restored.recount()).toEqual(a.machine.counts());
    expect(restored.snapshot()).toStrictEqual(bytes);
    // After the restore the replica still skips A, then resumes it like the others.
    const meta = { index: a.index + 1, term: 1, ts: a.ts };
    const resumed = restored.apply({ type: 'resumeOwner', owner: A }, meta);
    expect(deliveries(resumed).every((d) => d.owner === A)).toBe(true);
    expect(deliveries(resumed)).toHaveLength(3);
    expect(deliveries(a.apply({ type: 'resumeOwner', owner: A }))).toEqual(deliveries(resumed));
  });

  it('writes a version 2 snapshot while no owner is suspended (readable by older nodes)', () => {
    const h = new MachineHarness();
    h.consume(A, 'ca');
    h.apply({ type: 'suspendOwner', owner: A });
    h.apply({ type: 'resumeOwner', owner: A });
    expect(h.machine.snapshot()[0]).toBe(2);
  });
});
