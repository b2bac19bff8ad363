import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OWNER_GRACE_MS } from './queue-actor.ts';
import type { RecordingOwner } from './queue-actor-test-support.ts';
import { enqueueCommand, makeActor, OWNER, ScriptedLog } from './queue-actor-test-support.ts';
import { queueConfig, storedMessage, T0 } from './queue-test-harness.ts';
import type { QueueCommand } from './types.ts';

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

/**
 * A follower whose state has `OWNER` consuming with message 3 checked out to it, and whose owner
 * does not resolve (its node counted down, as a leader just resumed from a pause sees every peer).
 */
async function followerWithUnreachableOwner(prefetch = 1) {
  const log = new ScriptedLog('follower');
  const t = makeActor(log);
  const owner: RecordingOwner = t.sinks.owner(OWNER);
  await t.actor.open();
  log.append({ type: 'setConfig', config: queueConfig() });
  log.append({ type: 'consume', owner: OWNER, tag: 'ctag', prefetch, noAck: false, exclusive: false });
  log.append(enqueueCommand(storedMessage(1)));
  t.sinks.owners.delete(OWNER);
  const ownerDowns = (): QueueCommand[] => log.proposed.filter((c) => c.type === 'ownerDown');
  return { ...t, log, owner, ownerDowns };
}

describe('QueueActor taking leadership: owners it cannot reach', () => {
  it('does not give up an owner it cannot reach before the grace, and redelivers to it once it resolves', async () => {
    const t = await followerWithUnreachableOwner();
    t.log.setRole('leader');
    await vi.advanceTimersByTimeAsync(OWNER_GRACE_MS - 1);
    expect(t.ownerDowns()).toEqual([]);
    expect(t.actor.counts()).toMatchObject({ unacked: 1, consumers: 1 });
    // Its node answers again within the grace: the outstanding delivery goes to it, redelivered.
    t.sinks.owners.set(OWNER, t.owner);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.owner.deliveries).toEqual([
      { tag: 'ctag', id: 3, redelivered: true, deliveryCount: 0, message: storedMessage(1) },
    ]);
    await vi.advanceTimersByTimeAsync(OWNER_GRACE_MS * 2);
    expect(t.ownerDowns()).toEqual([]);
    expect(t.actor.counts()).toMatchObject({ unacked: 1, consumers: 1 });
  });

  it('does not give up, within the grace, an owner it cannot reach a new delivery for', async () => {
    const t = await followerWithUnreachableOwner(0);
    t.log.setRole('leader');
    await t.actor.enqueue(storedMessage(2), undefined); // delivered to OWNER, which does not resolve
    await vi.advanceTimersByTimeAsync(OWNER_GRACE_MS - 1);
    expect(t.ownerDowns()).toEqual([]);
    t.sinks.owners.set(OWNER, t.owner);
    await vi.advanceTimersByTimeAsync(1);
    // Every delivery it holds goes to it once it resolves again.
    expect(t.owner.deliveries.map((d) => [d.id, d.redelivered])).toEqual([
      [3, true],
      [4, true],
    ]);
    expect(t.ownerDowns()).toEqual([]);
    // After the grace, an owner that does not resolve is given up at once again.
    t.sinks.owners.delete(OWNER);
    await t.actor.enqueue(storedMessage(3), undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(t.ownerDowns()).toEqual([{ type: 'ownerDown', owner: OWNER }]);
  });

  it('gives up, after the grace, an owner that still does not resolve', async () => {
    const t = await followerWithUnreachableOwner();
    t.log.setRole('leader');
    await vi.advanceTimersByTimeAsync(OWNER_GRACE_MS - 1);
    expect(t.ownerDowns()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.ownerDowns()).toEqual([{ type: 'ownerDown', owner: OWNER }]);
    expect(t.actor.counts()).toMatchObject({ ready: 1, unacked: 0, consumers: 0 });
  });

  it('checks nothing after the grace once it no longer leads', async () => {
    const t = await followerWithUnreachableOwner();
    t.log.setRole('leader');
    t.log.setRole('follower');
    await vi.advanceTimersByTimeAsync(OWNER_GRACE_MS);
    expect(t.log.proposed).toEqual([]);
  });

  it('gives up at once the owners that do not resolve when it leads as its log opens (this node restarted)', async () => {
    const history: QueueCommand[] = [
      { type: 'setConfig', config: queueConfig() },
      { type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 1, noAck: false, exclusive: false },
      enqueueCommand(storedMessage(1)),
    ];
    const log = new ScriptedLog('leader', history);
    const { actor } = makeActor(log);
    await actor.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(log.proposed).toEqual([{ type: 'ownerDown', owner: OWNER }]);
    expect(actor.counts()).toMatchObject({ ready: 1, unacked: 0 });
  });
});

describe('QueueActor.whenLeaderKnown: a command held through an election', () => {
  async function leaderless() {
    const log = new ScriptedLog('follower');
    const t = makeActor(log);
    await t.actor.open();
    let known = false;
    const wait = (ms: number): void => {
      void t.actor.whenLeaderKnown(ms).then(() => {
        known = true;
      });
    };
    return { ...t, log, wait, known: () => known };
  }

  it('waits while no leader is known and ends the moment a follower learns one', async () => {
    const t = await leaderless();
    t.wait(1_000);
    await vi.advanceTimersByTimeAsync(500);
    expect(t.known()).toBe(false);
    t.log.setRole('follower', 'n2');
    await vi.advanceTimersByTimeAsync(0);
    expect(t.known()).toBe(true);
    expect(t.actor.leaderId).toBe('n2');
  });

  it('ends when this replica wins, already leading (a held command then runs here)', async () => {
    const t = await leaderless();
    let leadingThen: boolean | undefined;
    void t.actor.whenLeaderKnown(1_000).then(() => {
      leadingThen = t.actor.isLeader;
    });
    t.log.setRole('candidate');
    await vi.advanceTimersByTimeAsync(0);
    expect(leadingThen).toBeUndefined();
    t.log.setRole('leader');
    await vi.advanceTimersByTimeAsync(0);
    expect(leadingThen).toBe(true);
  });

  it('gives up after its timeout while the election goes on', async () => {
    const t = await leaderless();
    t.wait(1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(t.known()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.known()).toBe(true);
    expect(t.actor.leaderId).toBeUndefined();
  });

  it('ends when the replica closes, and at once while a leader is known or once closed', async () => {
    const t = await leaderless();
    t.wait(1_000);
    await t.actor.close();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.known()).toBe(true);
    let again = false;
    void t.actor.whenLeaderKnown(1_000).then(() => {
      again = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(again).toBe(true);

    const u = await leaderless();
    u.log.setRole('follower', 'n3');
    u.wait(1_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(u.known()).toBe(true);
  });
});
