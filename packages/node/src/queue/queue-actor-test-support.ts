/**
 * Test support for the queue actor (used by the *.test.ts files beside it): recording owners, a
 * fake dead-letter router with scriptable target queues, and a log whose role the test sets.
 */
import type { FieldTable } from '@styx/client/wire';
import { tableGet } from '@styx/client/wire';
import type { HandOffId } from '@styx/dlx';
import { readXDeath, X_DEATH_HEADER } from '@styx/dlx';
import type { ReplicatedLog, Role, RoleChange, StateMachine } from '@styx/raft';
import type { BodySource } from './body-repair.ts';
import { InMemoryBodyStore } from './body-store.ts';
import type { DeadLetterRoute, DeadLetterTarget } from './dead-letter-route.ts';
import type { DeadLetteringOptions, OwnerSink, QueueActorSinks } from './queue-actor.ts';
import { QueueActor } from './queue-actor.ts';
import type { QueueLogger } from './queue-logger.ts';
import { queueConfig } from './queue-test-harness.ts';
import type {
  OwnerId,
  QueueApplyResult,
  QueueCommand,
  QueueConfig,
  QueueReply,
  StoredMessage,
} from './types.ts';

export const GROUP = 'vh/q/1';
export const OWNER = 'conn-1/1';

/** A log line as the recording logger keeps it. */
export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly obj: unknown;
  readonly msg: string | undefined;
}

/** A logger that keeps every line (children share the list). */
export class RecordingLogger implements QueueLogger {
  readonly lines: LogLine[];
  constructor(lines: LogLine[] = []) {
    this.lines = lines;
  }
  child(): QueueLogger {
    return new RecordingLogger(this.lines);
  }
  debug(obj: unknown, msg?: string): void {
    this.lines.push({ level: 'debug', obj, msg });
  }
  info(obj: unknown, msg?: string): void {
    this.lines.push({ level: 'info', obj, msg });
  }
  warn(obj: unknown, msg?: string): void {
    this.lines.push({ level: 'warn', obj, msg });
  }
  error(obj: unknown, msg?: string): void {
    this.lines.push({ level: 'error', obj, msg });
  }
}

export interface Delivery {
  readonly tag: string;
  readonly id: number;
  readonly redelivered: boolean;
  readonly deliveryCount: number;
  readonly message: StoredMessage;
}

/** An owner that records what it receives. */
export class RecordingOwner implements OwnerSink {
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

/** One enqueue a fake target received. */
export interface Received {
  readonly message: StoredMessage;
  readonly handOff: HandOffId | undefined;
}

/**
 * How a fake target answers an enqueue: a reply (resolved at once), 'hang' (commits but never
 * answers: a lost confirm), 'defer' (commits, answers when the test calls `release`: a slow
 * confirm), or 'fail' (rejects: unreachable).
 */
export type TargetBehaviour = QueueReply | 'hang' | 'defer' | 'fail';

/** A dead-letter target queue whose answers the test scripts. It dedupes like a real queue. */
export class FakeTarget implements DeadLetterTarget {
  readonly name: string;
  /** Every enqueue, duplicates included. */
  readonly received: Received[] = [];
  /** Copies kept (first arrival of each hand-off id; every copy without one). */
  readonly kept: StoredMessage[] = [];
  /** Answers for the next enqueues, in order; `ok` when empty. */
  readonly script: TargetBehaviour[] = [];
  private readonly seen = new Set<string>();
  private readonly deferred: (() => void)[] = [];

  constructor(name: string) {
    this.name = name;
  }

  enqueue(message: StoredMessage, _ttl: number | undefined, handOff?: HandOffId): Promise<QueueReply> {
    this.received.push({ message, handOff });
    const behaviour = this.script.shift() ?? { type: 'ok' };
    if (behaviour === 'fail') return Promise.reject(new Error(`${this.name} unreachable`));
    if (behaviour === 'hang') {
      this.keep(message, handOff);
      return new Promise(() => {});
    }
    if (behaviour === 'defer') {
      const reply: QueueReply = this.keep(message, handOff) ? { type: 'ok' } : { type: 'duplicate' };
      return new Promise((resolve) => this.deferred.push(() => resolve(reply)));
    }
    if (behaviour.type === 'rejected') return Promise.resolve(behaviour);
    return Promise.resolve(this.keep(message, handOff) ? behaviour : { type: 'duplicate' });
  }

  /** Answer every deferred enqueue. */
  release(): void {
    for (const answer of this.deferred.splice(0)) answer();
  }

  /** Keeps the copy unless its hand-off id was seen; true when kept. */
  private keep(message: StoredMessage, handOff: HandOffId | undefined): boolean {
    if (handOff !== undefined) {
      const key = `${handOff.source}/${handOff.messageId}`;
      if (this.seen.has(key)) return false;
      this.seen.add(key);
    }
    this.kept.push(message);
    return true;
  }
}

/** Sinks with live owners, a fake router (exchange → targets) and records of expiries and routes. */
export class RecordingSinks implements QueueActorSinks {
  readonly owners = new Map<OwnerId, RecordingOwner>();
  /** The exchanges that exist, each with the targets it routes every copy to (or 'unavailable'). */
  readonly exchanges = new Map<string, DeadLetterTarget[] | 'unavailable'>();
  readonly routed: { exchange: string; routingKeys: readonly string[] }[] = [];
  expiredCalls = 0;

  owner(id: OwnerId): RecordingOwner {
    const owner = new RecordingOwner();
    this.owners.set(id, owner);
    return owner;
  }

  /** Declare exchange `name` routing to `targets`. */
  exchange(name: string, ...targets: DeadLetterTarget[]): void {
    this.exchanges.set(name, targets);
  }

  resolveOwner(owner: OwnerId): OwnerSink | undefined {
    return this.owners.get(owner);
  }

  readonly routeDeadLetter = (
    _vhost: string,
    exchange: string,
    routingKeys: readonly string[],
    _headers: FieldTable | undefined,
  ): DeadLetterRoute => {
    this.routed.push({ exchange, routingKeys });
    return this.exchanges.get(exchange) ?? 'no-exchange';
  };

  onQueueExpired(): void {
    this.expiredCalls++;
  }
}

/** The reason and queue of a copy's newest x-death entry. */
export function deathOf(message: StoredMessage): { reason: string | undefined; queue: string | undefined } {
  const [newest] = readXDeath(tableGet(message.properties.headers, X_DEATH_HEADER));
  return { reason: newest?.reason, queue: newest?.queue };
}

/**
 * A log whose role the test sets and whose entries it can append as if replicated from another
 * leader; it records every proposal. Proposals are applied one microtask later, or, while
 * `holding`, when the test calls `commitHeld()` (stamped with their proposal time, as a leader
 * stamps entries).
 */
export class ScriptedLog implements ReplicatedLog<QueueCommand, QueueApplyResult> {
  readonly groupId = GROUP;
  role: Role;
  readonly proposed: QueueCommand[] = [];
  private machine: StateMachine<QueueCommand, QueueApplyResult> | undefined;
  private readonly listeners = new Set<(change: RoleChange) => void>();
  private leader: string | undefined = undefined;
  private readonly history: QueueCommand[];
  private index = 0;
  closed = false;
  /** Proposals wait for `commitHeld()` instead of committing at once. */
  holding = false;
  private held: (() => void)[] = [];

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
    if (this.holding) {
      const ts = Date.now();
      return new Promise((resolve) => this.held.push(() => resolve(this.append(command, ts))));
    }
    return Promise.resolve().then(() => this.append(command));
  }

  /** Commit (apply, in order) every proposal held so far. */
  commitHeld(): void {
    const held = this.held;
    this.held = [];
    for (const commit of held) commit();
  }

  /** Apply an entry as committed (from this leader or a remote one), stamped `ts`. */
  append(command: QueueCommand, ts = Date.now()): QueueApplyResult {
    if (this.machine === undefined) throw new Error('not open');
    return this.machine.apply(command, { index: ++this.index, term: 1, ts });
  }

  /** `leader`: the leader the change names (none by default, the leader role included). */
  setRole(role: Role, leader?: string): void {
    this.role = role;
    this.leader = leader;
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
    for (const listener of this.listeners) listener({ role: this.role, term: 1, leader: this.leader });
  }
}

export interface ActorUnderTest {
  readonly actor: QueueActor;
  readonly sinks: RecordingSinks;
  readonly store: InMemoryBodyStore;
  readonly logger: RecordingLogger;
}

export function makeActor(
  log: ReplicatedLog<QueueCommand, QueueApplyResult>,
  config: Partial<QueueConfig> = {},
  deadLettering: DeadLetteringOptions = {},
  sinks = new RecordingSinks(),
  bodySource?: BodySource,
  dedupeWindow?: () => number,
): ActorUnderTest {
  const store = new InMemoryBodyStore();
  const logger = new RecordingLogger();
  const actor = new QueueActor({
    vhost: '/',
    name: 'q',
    groupId: log.groupId,
    log,
    bodyStore: store,
    config: queueConfig(config),
    logger,
    sinks,
    deadLettering,
    ...(bodySource === undefined ? {} : { bodySource }),
    ...(dedupeWindow === undefined ? {} : { dedupeWindow }),
  });
  return { actor, sinks, store, logger };
}

export function enqueueCommand(message: StoredMessage, ttl?: number): QueueCommand {
  return { type: 'enqueue', size: message.body.byteLength, ttl, message };
}
