import type { ReplicatedLog, Role, RoleChange, StateMachine } from '@styx/raft';
import { InMemoryLog } from '@styx/raft';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InMemoryBodyStore } from './body-store.ts';
import type { OwnerSink, QueueActorSinks, QueueLogger } from './queue-actor.ts';
import { QueueActor } from './queue-actor.ts';
import { queueConfig, storedMessage, T0 } from './queue-test-harness.ts';
import type {
  OwnerId,
  QueueApplyResult,
  QueueCommand,
  QueueConfig,
  RemovalReason,
  StoredMessage,
} from './types.ts';

const GROUP = 'vh/q/1';
const OWNER = 'conn-1/1';

const silent: QueueLogger = {
  child: () => silent,
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};

interface Delivery {
  readonly tag: string;
  readonly id: number;
  readonly redelivered: boolean;
  readonly deliveryCount: number;
  readonly message: StoredMessage;
}

/** An owner that records what it receives. */
class RecordingOwner implements OwnerSink {
  readonly deliveries: Delivery[] = [];
  readonly cancelled: string[] = [];
  deliver(
    _queue: QueueActor,
    tag: string,
    id: number,
    redelivered: boolean,
    deliveryCount: number,
    message: StoredMessage,
  ): void {
    this.deliveries.push({ tag, id, redelivered, deliveryCount, message });
  }
  consumerCancelled(_queue: QueueActor, tag: string): void {
    this.cancelled.push(tag);
  }
}

/** Sinks with a table of live owners and records of dead-letters and expiries. */
class RecordingSinks implements QueueActorSinks {
  readonly owners = new Map<OwnerId, RecordingOwner>();
  readonly deadLetters: { reason: RemovalReason; messages: readonly StoredMessage[] }[] = [];
  expiredCalls = 0;
  owner(id: OwnerId): RecordingOwner {
    const owner = new RecordingOwner();
    this.owners.set(id, owner);
    return owner;
  }
  resolveOwner(owner: OwnerId): OwnerSink | undefined {
    return this.owners.get(owner);
  }
  onDeadLetter(_queue: QueueActor, reason: RemovalReason, messages: readonly StoredMessage[]): void {
    this.deadLetters.push({ reason, messages });
  }
  onQueueExpired(): void {
    this.expiredCalls++;
  }
}

/**
 * A log whose role the test sets and whose entries it can append as if replicated from another
 * leader; it records every proposal. Proposals are applied one microtask later.
 */
class ScriptedLog implements ReplicatedLog<QueueCommand, QueueApplyResult> {
  readonly groupId = GROUP;
  role: Role;
  readonly proposed: QueueCommand[] = [];
  private machine: StateMachine<QueueCommand, QueueApplyResult> | undefined;
  private readonly listeners = new Set<(change: RoleChange) => void>();
  private readonly history: QueueCommand[];
  private index = 0;
  closed = false;

  /** `history`: committed entries replayed by open(). */
  constructor(role: Role, history: QueueCommand[] = []) {
    this.role = role;
    this.history = history;
  }

  async open(machine: StateMachine<QueueCommand, QueueApplyResult>): Promise<void> {
    this.machine = machine;
    for (const command of this.history) this.append(command);
    this.emit();
  }

  propose(command: QueueCommand): Promise<QueueApplyResult> {
    if (this.closed) return Promise.reject(Object.assign(new Error('closed'), { code: 'LOG_CLOSED' }));
    if (this.role !== 'leader')
      return Promise.reject(Object.assign(new Error('follower'), { code: 'NOT_LEADER' }));
    this.proposed.push(command);
    return Promise.resolve().then(() => this.append(command));
  }

  /** Apply an entry as committed (from this leader or a remote one). */
  append(command: QueueCommand): QueueApplyResult {
    if (this.machine === undefined) throw new Error('not open');
    return this.machine.apply(command, { index: ++this.index, term: 1, ts: Date.now() });
  }

  setRole(role: Role): void {
    this.role = role;
    this.emit();
  }

  onRole(listener: (change: RoleChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async compact(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
  }

  async destroy(): Promise<void> {
    this.closed = true;
  }

  private emit(): void {
    for (const listener of this.listeners) listener({ role: this.role, term: 1, leader: undefined });
  }
}

function makeActor(
  log: ReplicatedLog<QueueCommand, QueueApplyResult>,
  config: Partial<QueueConfig> = {},
): { actor: QueueActor; sinks: RecordingSinks; store: InMemoryBodyStore } {
  const sinks = new RecordingSinks();
  const store = new InMemoryBodyStore();
  const actor = new QueueActor({
    vhost: '/',
    name: 'q',
    groupId: GROUP,
    log,
    bodyStore: store,
    config: queueConfig(config),
    logger: silent,
    sinks,
  });
  return { actor, sinks, store };
}

function enqueueCommand(message: StoredMessage, ttl?: number): QueueCommand {
  return { type: 'enqueue', size: message.body.byteLength, ttl, message };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('QueueActor on an in-memory log', () => {
  it('delivers stored bodies to the owner and deletes them once acked', async () => {
    const { actor, sinks, store } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const owner = sinks.owner(OWNER);
    const m1 = storedMessage(3);
    const m2 = storedMessage(4);
    expect(await actor.enqueue(m1, undefined)).toEqual({ type: 'ok' });
    await actor.enqueue(m2, undefined);
    expect(store.size(GROUP)).toBe(2);
    expect(await actor.consume(OWNER, 'ctag', 0, false, false)).toEqual({ type: 'ok' });
    expect(owner.deliveries.map((d) => [d.tag, d.message])).toEqual([
      ['ctag', m1],
      ['ctag', m2],
    ]);
    expect(actor.counts()).toEqual({ ready: 0, unacked: 2, readyBytes: 0, consumers: 1 });
    await actor.settle(OWNER, [owner.deliveries[0]?.id ?? 0]);
    expect(store.size(GROUP)).toBe(1);
    await actor.discard(OWNER, [owner.deliveries[1]?.id ?? 0]);
    expect(store.size(GROUP)).toBe(0);
    expect(sinks.deadLetters).toEqual([{ reason: 'rejected', messages: [m2] }]);
  });

  it('redelivers returned messages with their delivery count', async () => {
    const { actor, sinks } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const owner = sinks.owner(OWNER);
    await actor.enqueue(storedMessage(), undefined);
    await actor.consume(OWNER, 'ctag', 1, false, false);
    const first = owner.deliveries[0] as Delivery;
    await actor.returnMessages(OWNER, [first.id]);
    expect(owner.deliveries[1]).toMatchObject({ id: first.id, redelivered: true, deliveryCount: 1 });
  });

  it('answers basic.get with the body, deleting it at once for noAck', async () => {
    const { actor, store } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const m1 = storedMessage(5);
    await actor.enqueue(m1, undefined);
    await actor.enqueue(storedMessage(6), undefined);
    const got = await actor.get(OWNER, true);
    expect(got).toMatchObject({ redelivered: false, deliveryCount: 0, messageCount: 1, message: m1 });
    expect(store.size(GROUP)).toBe(1);
    const held = await actor.get(OWNER, false);
    expect(held?.messageCount).toBe(0);
    expect(store.size(GROUP)).toBe(1);
    expect(await actor.get(OWNER, false)).toBeUndefined();
    expect(await actor.purge()).toBe(0);
  });

  it('fires its timer at the deadline and dead-letters the expired messages', async () => {
    const { actor, sinks, store } = makeActor(new InMemoryLog(GROUP), { messageTtl: 1000 });
    await actor.open();
    const m1 = storedMessage(1);
    const m2 = storedMessage(2);
    await actor.enqueue(m1, 100);
    await actor.enqueue(m2, undefined);
    await vi.advanceTimersByTimeAsync(99);
    expect(sinks.deadLetters).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sinks.deadLetters).toEqual([{ reason: 'expired', messages: [m1] }]);
    await vi.advanceTimersByTimeAsync(900);
    expect(sinks.deadLetters).toHaveLength(2);
    expect(sinks.deadLetters[1]).toEqual({ reason: 'expired', messages: [m2] });
    expect(actor.counts().ready).toBe(0);
    expect(store.size(GROUP)).toBe(0);
  });

  it('reports x-expires once the queue has been unused for that long', async () => {
    const { actor, sinks } = makeActor(new InMemoryLog(GROUP), { expires: 5000 });
    await actor.open();
    await vi.advanceTimersByTimeAsync(3000);
    await actor.touch();
    await vi.advanceTimersByTimeAsync(4999);
    expect(sinks.expiredCalls).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(sinks.expiredCalls).toBe(1);
  });

  it('hands a message refused by reject-publish-dlx to the dead-letter hook', async () => {
    const { actor, sinks, store } = makeActor(new InMemoryLog(GROUP), {
      maxLength: 1,
      overflow: 'reject-publish-dlx',
    });
    await actor.open();
    await actor.enqueue(storedMessage(), undefined);
    const refused = storedMessage(7);
    expect(await actor.enqueue(refused, undefined)).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(sinks.deadLetters).toEqual([{ reason: 'maxlen', messages: [refused] }]);
    expect(store.size(GROUP)).toBe(1);
  });

  it('returns the messages of an owner that no longer resolves', async () => {
    const { actor } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    await actor.consume('gone/1', 'ctag', 0, false, false);
    await actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(actor.counts()).toEqual({ ready: 1, unacked: 0, readyBytes: 10, consumers: 0 });
  });

  it('names the queue when a consume is refused for exclusivity', async () => {
    const { actor } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    await actor.consume(OWNER, 'a', 0, false, true);
    const reply = await actor.consume('conn-2/1', 'b', 0, false, false);
    expect(reply.type).toBe('locked');
    expect(reply.type === 'locked' && reply.text).toMatch(/^queue 'q' in vhost '\/' in exclusive use/);
  });

  it('delete cancels every consumer and drops every body', async () => {
    const { actor, sinks, store } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const owner = sinks.owner(OWNER);
    await actor.consume(OWNER, 'ctag', 1, false, false);
    await actor.enqueue(storedMessage(), undefined);
    await actor.enqueue(storedMessage(), undefined);
    await actor.enqueue(storedMessage(), undefined);
    expect(await actor.delete()).toBe(2);
    expect(owner.cancelled).toEqual(['ctag']);
    expect(store.size(GROUP)).toBe(0);
    await expect(actor.enqueue(storedMessage(), undefined)).rejects.toMatchObject({ code: 'LOG_CLOSED' });
  });
});

describe('QueueActor roles and timers', () => {
  it('records the initial config as the first entry of a fresh group', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { maxLength: 3 });
    await actor.open();
    expect(log.proposed).toEqual([{ type: 'setConfig', config: queueConfig({ maxLength: 3 }) }]);
    expect(actor.config().maxLength).toBe(3);
  });

  it('keeps bodies in step on a follower without executing effects', async () => {
    const log = new ScriptedLog('follower');
    const { actor, sinks, store } = makeActor(log);
    const owner = sinks.owner(OWNER);
    await actor.open();
    log.append({ type: 'setConfig', config: queueConfig({ messageTtl: 100 }) });
    log.append(enqueueCommand(storedMessage()));
    log.append({ type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 0, noAck: false, exclusive: false });
    expect(owner.deliveries).toEqual([]);
    expect(store.size(GROUP)).toBe(1);
    log.append({ type: 'settle', owner: OWNER, ids: [2] });
    expect(store.size(GROUP)).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(log.proposed).toEqual([]);
  });

  it('re-derives its duties on becoming leader: timer, redeliveries, vanished owners', async () => {
    const log = new ScriptedLog('follower');
    const { actor, sinks } = makeActor(log);
    const owner = sinks.owner(OWNER);
    await actor.open();
    const m1 = storedMessage(1);
    log.append({ type: 'setConfig', config: queueConfig({ messageTtl: 500 }) });
    log.append({ type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 1, noAck: false, exclusive: false });
    log.append(enqueueCommand(m1));
    log.append({ type: 'consume', owner: 'gone/1', tag: 'g', prefetch: 1, noAck: false, exclusive: false });
    log.append(enqueueCommand(storedMessage(2)));
    log.append(enqueueCommand(storedMessage(3)));
    expect(actor.counts()).toMatchObject({ ready: 1, unacked: 2 });

    log.setRole('leader');
    expect(owner.deliveries).toEqual([
      { tag: 'ctag', id: 3, redelivered: true, deliveryCount: 0, message: m1 },
    ]);
    await vi.advanceTimersByTimeAsync(0);
    expect(log.proposed).toEqual([{ type: 'ownerDown', owner: 'gone/1' }]);
    expect(actor.counts()).toMatchObject({ ready: 2, unacked: 1, consumers: 1 });

    await vi.advanceTimersByTimeAsync(500);
    expect(log.proposed.map((c) => c.type)).toEqual(['ownerDown', 'expire']);
    expect(sinks.deadLetters.map((d) => [d.reason, d.messages.length])).toEqual([['expired', 2]]);
  });

  it('stops its timer when it loses leadership', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { messageTtl: 100 });
    await actor.open();
    await actor.enqueue(storedMessage(), undefined);
    log.setRole('follower');
    await vi.advanceTimersByTimeAsync(1000);
    expect(log.proposed.map((c) => c.type)).toEqual(['setConfig', 'enqueue']);
  });

  it('does not replay effects while the log replays at open', async () => {
    const history: QueueCommand[] = [
      { type: 'setConfig', config: queueConfig() },
      { type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 0, noAck: false, exclusive: false },
      enqueueCommand(storedMessage()),
    ];
    const log = new ScriptedLog('leader', history);
    const { actor, sinks } = makeActor(log);
    const owner = sinks.owner(OWNER);
    await actor.open();
    // Only the re-derived redelivery, not the replayed original.
    expect(owner.deliveries).toHaveLength(1);
    expect(owner.deliveries[0]).toMatchObject({ id: 3, redelivered: true });
    expect(log.proposed).toEqual([]);
  });

  it('never proposes expire before the deadline when the deadline moves later', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { messageTtl: 100 });
    await actor.open();
    await actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(50);
    await actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(10);
    await actor.get(OWNER, true);
    // The timer armed for the first message fires at +100 and re-arms for +150 without proposing.
    await vi.advanceTimersByTimeAsync(40);
    expect(log.proposed.filter((c) => c.type === 'expire')).toEqual([]);
    await vi.advanceTimersByTimeAsync(49);
    expect(log.proposed.filter((c) => c.type === 'expire')).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(log.proposed.filter((c) => c.type === 'expire')).toHaveLength(1);
    expect(actor.counts().ready).toBe(0);
  });
});
