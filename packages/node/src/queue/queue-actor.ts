/**
 * A queue's actor: it runs a `QueueMachine` on a `ReplicatedLog` and turns the machine's effects
 * into actions. On every replica it keeps the body store in step with the machine (a body is
 * stored when its enqueue is applied and deleted once the message has left for good); on the
 * leader only it executes effects: deliveries to owners (channels), dead-letters, the queue's
 * single expiry timer, `x-expires`.
 *
 * Dead-lettering (leader only): at-most-once copies are published from the effect, fire and forget
 * (`AtMostOnceDeadLetters`); at-least-once hand-offs are driven by `AtLeastOnceHandOffs`, which
 * proposes `deadLetterSettled` once every target confirmed. Both route through the node's
 * `routeDeadLetter` sink and count and log what they drop. The actor is itself a
 * `DeadLetterTarget`: other queues hand their copies to `enqueue` with a hand-off id.
 *
 * Effects run synchronously inside the apply, before the proposer's promise resolves: bodies are
 * still in the store while they run, and a delivery can reach a channel before that channel's
 * `consume()` resolves (the channel holds it until consume-ok is out).
 *
 * Leadership: when this replica becomes leader it re-derives its duties from the state — re-arms
 * the timer, re-announces a pending `x-expires`, proposes `ownerDown` for owners that no longer
 * exist here and re-delivers outstanding deliveries to those that do (the previous leader may have
 * died before sending them; an owner must ignore a delivery of an id it already holds), and resumes
 * the hand-off of every pending dead-letter at once.
 */

import type { DedupeLimits, HandOffId, HandOffSchedulerOptions, PendingLimits } from '@styx/dlx';
import { DEFAULT_DEDUPE_LIMITS, isDedupeWindow } from '@styx/dlx';
import type { Clock, EntryMeta, ReplicatedLog, RoleChange, StateMachine } from '@styx/raft';
import { GroupOverloadedError, NotLeaderError, systemClock } from '@styx/raft';
import { plainStoredMessage } from '../storage/stored-message-codec.ts';
import {
  CONFIRM_BEFORE_COMMIT,
  HAND_OFF_BEFORE_COMMIT,
  TRANSFER_WITHOUT_BODIES,
} from '../test-support/test-breaks.ts';
import { AggregatedLog, DEFAULT_AGGREGATION_INTERVAL_MS } from './aggregated-log.ts';
import { AtLeastOnceHandOffs } from './at-least-once-hand-offs.ts';
import { AtMostOnceDeadLetters } from './at-most-once-dead-letters.ts';
import type { BodyRepairStatus, BodySource } from './body-repair.ts';
import { BodyRepair } from './body-repair.ts';
import type { BodyStore } from './body-store.ts';
import { DeadLetterDrops } from './dead-letter-drops.ts';
import type { DeadLetterTarget, RouteDeadLetter } from './dead-letter-route.ts';
import type { DeadLetterTimings } from './dead-letter-timings.ts';
import { QueueActorStateError, QueueBodyMissingError } from './errors.ts';
import type { BrowsePage, BrowseRequest } from './message-browse.ts';
import { browseMessages } from './message-browse.ts';
import type { QueueFlowTotals } from './queue-flow-counters.ts';
import { QueueFlowCounters } from './queue-flow-counters.ts';
import type { QueueGetResult, QueueHandle } from './queue-handle.ts';
import type { QueueLogger } from './queue-logger.ts';
import type { ConsumerInfo } from './queue-machine.ts';
import { QueueMachine } from './queue-machine.ts';
import type { TransferredBody } from './transfer-snapshot.ts';
import { decodeTransferSnapshot, encodeTransferSnapshot } from './transfer-snapshot.ts';
import type {
  DeadLetterTotals,
  OwnerId,
  QueueApplyResult,
  QueueCommand,
  QueueConfig,
  QueueCounts,
  QueueEffect,
  QueueReply,
  RemovalReason,
  RemovalTotals,
  StoredMessage,
} from './types.ts';

export type { QueueGetResult } from './queue-handle.ts';
export type { QueueLogger } from './queue-logger.ts';

/**
 * A channel as its queues see it. A replica hands itself (`Q` = QueueActor); in a cluster the node
 * hands channels the queue's handle instead (`OwnerSink<QueueHandle>`), never a replica.
 */
export interface OwnerSink<Q extends QueueHandle = QueueActor> {
  /**
   * Deliver message `id` to consumer `tag`. May be called again for an id already delivered after
   * a leader change: the owner must ignore a duplicate (same queue, same id).
   */
  deliver(
    queue: Q,
    tag: string,
    id: number,
    redelivered: boolean,
    deliveryCount: number,
    message: StoredMessage,
  ): void;
  /** The queue removed consumer `tag` (queue deleted): send basic.cancel to the client. */
  consumerCancelled(queue: Q, tag: string): void;
}

/** What the node gives every actor. */
export interface QueueActorSinks {
  /** The live owner (channel) with this id, or undefined if it is gone. */
  resolveOwner(owner: OwnerId): OwnerSink | undefined;
  /**
   * The queues a dead-lettered copy published to `exchange` (the DLX) on `routingKeys` reaches, or
   * `no-exchange`. Called synchronously, on the leader, possibly inside an apply: a pure lookup.
   */
  routeDeadLetter: RouteDeadLetter;
  /** `x-expires` elapsed: delete the queue. Called again by a new leader until it is deleted. */
  onQueueExpired(queue: QueueActor): void;
  /** This replica took up the leader's duties (a cluster re-checks its config and membership). */
  onLeader?(queue: QueueActor): void;
}

/** Bounds and timings of dead-lettering; every field has a documented default. */
export interface DeadLetteringOptions {
  /** The pending cap (default `DEFAULT_PENDING_LIMITS`: 100 000 messages or 128 MiB). */
  readonly pendingLimits?: PendingLimits;
  /** Hand-off ids remembered for dedupe (default `DEFAULT_DEDUPE_LIMITS`). */
  readonly dedupeLimits?: DedupeLimits;
  /** Retry back-off (capped at 5 s) and confirm timeout (default `DEFAULT_HAND_OFF_OPTIONS`). */
  readonly handOff?: HandOffSchedulerOptions;
  /** Shortest time between two summed log lines of drops or waiting hand-offs, ms (default 5000). */
  readonly logIntervalMs?: number;
}

export interface QueueActorOptions {
  readonly vhost: string;
  readonly name: string;
  /** The group id of this queue incarnation: the body store's key. */
  readonly groupId: string;
  readonly log: ReplicatedLog<QueueCommand, QueueApplyResult>;
  readonly bodyStore: BodyStore;
  /** The configuration a fresh queue starts with (the log's first entry records it). */
  readonly config: QueueConfig;
  /** The clock the log stamps entries with; timers are computed against it. */
  readonly clock?: Clock;
  readonly logger: QueueLogger;
  readonly sinks: QueueActorSinks;
  readonly deadLettering?: DeadLetteringOptions;
  /**
   * Where a leader missing a live message's body asks for it: the group's other replicas (see
   * body-repair.ts). Undefined on a node alone: a missing body is then lost, and its message removed.
   */
  readonly bodySource?: BodySource;
  /**
   * Whether deliveries carry `x-delivery-count` (RabbitMQ quorum queues do, classic ones do not;
   * see `showsDeliveryCount`); default false. The node reads it when it builds a delivery's
   * properties.
   */
  readonly deliveryCountHeader?: boolean;
  /** The node's totals: this replica adds what it applies while it leads (metrics/node-metrics.ts). */
  readonly nodeFlow?: QueueFlowCounters | undefined;
  /** The node's dead-letter stage timings: this replica adds to them while it leads. */
  readonly deadLetterTimings?: DeadLetterTimings | undefined;
  /**
   * The dedupe window (hand-off ids per source) every queue of the cluster may take now: the wide
   * one once feature flag `wide_dedupe_window` is enabled, else 1,024 (the default when absent).
   * Asked on the leader only: as a target it records a wider window in its log before the first
   * hand-off it takes (so every replica applies it from the same index); as a source it keeps half
   * of it in progress.
   */
  readonly dedupeWindow?: () => number;
}

/** A `got` apply result with the body attached by the actor (read before a noAck get deletes it). */
export interface GotApplyResult extends QueueApplyResult {
  readonly message: StoredMessage | undefined;
}

/**
 * Longest delay handed to setTimeout, ms (its limit is 2^31 - 1); a later deadline is reached by
 * re-arming when the timer fires.
 */
const MAX_TIMER_DELAY_MS = 2_147_483_647;

/**
 * How long a replica that became leader waits before giving up an owner that does not resolve, ms:
 * one whose channel is not found (closed meanwhile, or on a node that restarted or was forgotten).
 * Owners of nodes that are merely suspected still resolve: the cluster suspends them and gives them
 * up only past their queue's consumer-disconnected timeout (cluster-queues.ts). After the grace
 * the owners that still do not resolve are given up, and those that do get their deliveries again.
 */
export const OWNER_GRACE_MS = 3_500;

/** Live messages checked for their body per turn when a replica takes over a queue. */
const BODY_SCAN_CHUNK = 4096;
/**
 * How long publishes sent behind one this leader refused are refused too, at most, ms (see
 * `refusedPublishes`): the source sends a refused one again within its retry back-off (25 to
 * 500 ms) plus a round trip, unless it went to another leader or gave up.
 */
const REFUSED_PUBLISH_HOLD_MS = 2_000;

/**
 * While messages come due faster than `expire` entries commit: how stale the newest proposed
 * entry may get before another `expire` is proposed, ms. Every apply expires what its entry's ts
 * makes due, so without it a queue nobody publishes to expired in rounds of one commit each (the
 * next expire proposed only once the previous one applied): under a load that made commits take
 * 300 ms, a message came due up to 300 ms before any entry that could expire it was even proposed.
 */
export const EXPIRE_PIPELINE_MS = 5;
/**
 * `expire` entries in flight at once, at most: 64 cover commits of 320 ms at EXPIRE_PIPELINE_MS,
 * and a leader whose entries do not commit (no quorum) stops adding them there.
 */
const MAX_EXPIRES_IN_FLIGHT = 64;

/** The window every queue starts with, and keeps while the cluster has not agreed on another. */
const legacyDedupeWindow = (): number => DEFAULT_DEDUPE_LIMITS.maxIdsPerSource;

const EXPIRE_COMMAND: QueueCommand = Object.freeze({ type: 'expire' });
const TOUCH_COMMAND: QueueCommand = Object.freeze({ type: 'touch' });
const PURGE_COMMAND: QueueCommand = Object.freeze({ type: 'purge' });

type ActorState = 'new' | 'open' | 'closed';

export class QueueActor implements DeadLetterTarget, QueueHandle {
  readonly vhost: string;
  readonly name: string;
  readonly groupId: string;
  /** See `QueueActorOptions.deliveryCountHeader`. */
  readonly deliveryCountHeader: boolean;
  private readonly log: ReplicatedLog<QueueCommand, QueueApplyResult>;
  private readonly bodyStore: BodyStore;
  private readonly initialConfig: QueueConfig;
  private readonly clock: Clock;
  private readonly logger: QueueLogger;
  private readonly sinks: QueueActorSinks;
  private readonly machine: QueueMachine;
  /** What the log drives: the machine, with the body store kept in step and effects executed. */
  private readonly driven: StateMachine<QueueCommand, QueueApplyResult>;
  private state: ActorState = 'new';
  /**
   * Settles once the actor takes commands in log order (see `propose`): resolved by `open` right after
   * the log opened (and a fresh group's first config was proposed), rejected if opening failed.
   */
  private readonly opened: Promise<void>;
  private settleOpened: (error?: unknown) => void = () => {};
  /** Duties taken for the current leadership (reset when leadership is lost). */
  private leading = false;
  /**
   * Publish sources whose publish this leader refused with nothing appended (overloaded, or not
   * leading any more): the lowest such id, and when. A source pipelines its publishes (a channel's,
   * through its node's `ClusterQueue`), so those sent behind the refused one are already on their
   * way: if room came back meanwhile, they would land first and the refused one, sent again, after
   * them (chaos seeds 323 and 407: a channel's publishes out of order across a membership change).
   * They are refused too, until the refused one comes again (the source resends in order), its
   * source says it is answered (a horizon past it), or `REFUSED_PUBLISH_HOLD_MS` passed. Forgotten
   * on a role change: a new leadership starts clean.
   */
  private readonly refusedPublishes = new Map<string, { id: number; at: number }>();
  /**
   * Publishes proposed and not answered yet, per source: how many in the current leadership (its
   * number, `leaderships`) and how many in earlier ones. A leader that lost the leadership and won
   * it back keeps its earlier proposals pending; those whose entries another leader overwrote
   * meanwhile are refused only once their index applies, after anything proposed since has
   * committed. A publish of a source with publishes pending from an earlier leadership is refused
   * (retried by its source, which then sends it after the earlier ones: chaos seeds 323 and 407,
   * a channel's publish landing before a run of its earlier ones across a membership change).
   */
  private readonly pendingPublishes = new Map<
    string,
    { leadership: number; current: number; older: number }
  >();
  /** The leader this replica last heard of (itself while it leads). */
  private knownLeader: string | undefined = undefined;
  /** Callers of `whenLeaderKnown` waiting for an election to end (or this replica to close). */
  private readonly leaderWaiters = new Set<() => void>();
  /** The fresh group's first entry (its config), proposed when this replica first leads it. */
  private firstConfig: Promise<unknown> | undefined = undefined;
  private unsubscribeRole: (() => void) | undefined = undefined;
  /** Leaderships taken so far: a check scheduled by one is void in a later one. */
  private leaderships = 0;
  /**
   * While the grace after a leader change runs (`OWNER_GRACE_MS`): the owners that did not resolve
   * meanwhile, checked again when it ends. Undefined otherwise.
   */
  private graceOwners: Set<OwnerId> | undefined = undefined;
  /** Owners with an `ownerDown` proposal in flight (so a burst of failed deliveries proposes one). */
  private readonly ownersGoing = new Set<OwnerId>();
  /** Owners with a `suspendOwner` or `resumeOwner` proposal in flight. */
  private readonly ownersSuspending = new Set<OwnerId>();

  /** The machine's earliest deadline as last announced, ms since the epoch. */
  private deadline: number | undefined = undefined;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** When the armed timer fires (<= deadline: an early fire re-arms, never proposes early). */
  private timerAt = 0;
  /**
   * This clock when this leader last proposed an entry: that entry's ts is at least this, so when
   * applied it expires every message due by then (see EXPIRE_PIPELINE_MS).
   */
  private lastProposedAt = Number.NEGATIVE_INFINITY;
  /** `expire` proposals not yet answered. */
  private expiresInFlight = 0;

  private readonly deadLettering: DeadLetteringOptions;
  private readonly drops: DeadLetterDrops;
  /** Cycle drops of at-least-once hand-offs (those of `drops` are at-most-once), for metrics. */
  private readonly handOffDrops: DeadLetterDrops;
  /** What this replica applied (queue-flow-counters.ts), and the node's share while it leads. */
  private readonly flow = new QueueFlowCounters();
  private readonly nodeFlow: QueueFlowCounters | undefined;
  private readonly timings: DeadLetterTimings | undefined;
  private readonly waitingLog: AggregatedLog;
  private readonly atMostOnce: AtMostOnceDeadLetters;
  /** The at-least-once hand-offs of the current leadership; undefined while not leading. */
  private handOffs: AtLeastOnceHandOffs | undefined = undefined;
  /** Fetches bodies this replica lacks from the others while it leads (see body-repair.ts). */
  private readonly repair: BodyRepair;
  /** See `QueueActorOptions.dedupeWindow`. */
  private readonly agreedDedupeWindow: () => number;
  /** A `setDedupeWindow` proposal is in flight (one at a time). */
  private wideningDedupeWindow = false;

  constructor(options: QueueActorOptions) {
    this.opened = new Promise<void>((resolve, reject) => {
      this.settleOpened = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.opened.catch(() => undefined); // nobody may be waiting: not an unhandled rejection
    this.vhost = options.vhost;
    this.name = options.name;
    this.groupId = options.groupId;
    this.log = options.log;
    this.bodyStore = options.bodyStore;
    this.initialConfig = options.config;
    this.agreedDedupeWindow = options.dedupeWindow ?? legacyDedupeWindow;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    this.sinks = options.sinks;
    this.deliveryCountHeader = options.deliveryCountHeader ?? false;
    this.deadLettering = options.deadLettering ?? {};
    const logIntervalMs = this.deadLettering.logIntervalMs ?? DEFAULT_AGGREGATION_INTERVAL_MS;
    const dropLog = new AggregatedLog(
      this.logger,
      'info',
      'dead-lettered copies dropped',
      this.clock,
      logIntervalMs,
    );
    this.drops = new DeadLetterDrops(dropLog);
    this.handOffDrops = new DeadLetterDrops(dropLog);
    this.nodeFlow = options.nodeFlow;
    this.timings = options.deadLetterTimings;
    this.waitingLog = new AggregatedLog(
      this.logger,
      'warn',
      'dead-letter hand-offs waiting (at-least-once: kept and retried)',
      this.clock,
      logIntervalMs,
    );
    this.atMostOnce = new AtMostOnceDeadLetters({
      vhost: this.vhost,
      queue: this.name,
      route: this.sinks.routeDeadLetter,
      drops: this.drops,
      logger: this.logger,
      clock: this.clock,
      ...(this.timings === undefined ? {} : { timings: this.timings }),
    });
    this.repair = new BodyRepair({
      groupId: this.groupId,
      bodyStore: this.bodyStore,
      source: options.bodySource,
      logger: this.logger,
      isLive: (id) => this.machine.isLive(id),
    });
    this.machine = new QueueMachine(options.config, {
      ...(this.deadLettering.pendingLimits === undefined
        ? {}
        : { pendingLimits: this.deadLettering.pendingLimits }),
      ...(this.deadLettering.dedupeLimits === undefined
        ? {}
        : { dedupeLimits: this.deadLettering.dedupeLimits }),
    });
    this.driven = {
      apply: (command, meta) => this.applyEntry(command, meta),
      snapshot: () => {
        // The log truncates behind this snapshot: bodies kept in memory only must be written first.
        this.bodyStore.persistLogged(this.groupId);
        return this.machine.snapshot();
      },
      restore: (snapshot, meta) => this.machine.restore(snapshot, meta),
      transferSnapshot: (snapshot, meta) => this.transferSnapshot(snapshot, meta),
      installTransferSnapshot: (transfer) => this.installTransferSnapshot(transfer),
    };
  }

  // ------------------------------------------------------------------------------ lifecycle

  /**
   * Open the log (restore + replay), then, on the leader, record the initial config as the first
   * entry of a fresh group and take up the leader's duties.
   */
  async open(): Promise<void> {
    if (this.state !== 'new')
      throw new QueueActorStateError(`queue ${this.name}: open() on a ${this.state} actor`);
    this.unsubscribeRole = this.log.onRole(this.onRole);
    try {
      // Effects are not executed while the log replays: they were executed (or are re-derived below).
      await this.log.open(this.driven);
    } catch (error) {
      this.settleOpened(error);
      throw error;
    }
    this.state = 'open';
    // Leading now: the duties are taken (and a fresh group's first config proposed) before the
    // commands that arrived while the log opened go in.
    // Leading as the log opens (this node restarted): an owner that does not resolve is gone.
    if (this.log.role === 'leader') this.takeLeadership(true);
    if (this.knownLeader !== undefined) this.wakeLeaderWaiters();
    this.settleOpened();
    await this.firstConfig;
  }

  /** Whether this replica leads its group now (commands to it commit here). */
  get isLeader(): boolean {
    return this.state !== 'closed' && this.log.role === 'leader';
  }

  /** The leader this replica knows of, if any (its own node id while it leads). */
  get leaderId(): string | undefined {
    return this.knownLeader;
  }

  /**
   * Resolves once this replica knows a serving leader (itself included), closes, or `timeoutMs`
   * pass, whichever is first: a command that reaches a replica in the middle of an election waits
   * for its end here rather than sending its caller off to poll. Never rejects; the caller reads
   * `isLeader` / `leaderId` afterwards.
   */
  whenLeaderKnown(timeoutMs: number): Promise<void> {
    if (this.knownLeader !== undefined || this.state === 'closed') return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.leaderWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.leaderWaiters.add(done);
    });
  }

  private wakeLeaderWaiters(): void {
    for (const done of [...this.leaderWaiters]) done();
  }

  /**
   * Run any command and resolve with the machine's full result (a `got` with its body attached):
   * how commands forwarded from other nodes run on the leader. `NotLeaderError` on a follower.
   */
  run(command: QueueCommand): Promise<QueueApplyResult> {
    const id = command.type === 'enqueue' && command.handOff === undefined ? command.publishId : undefined;
    if (id === undefined) return this.propose(command);
    const refused = this.refusedPublishes.get(id.source);
    if (refused !== undefined) {
      if (
        id.messageId > refused.id &&
        id.horizon <= refused.id &&
        this.clock.now() - refused.at < REFUSED_PUBLISH_HOLD_MS
      ) {
        // Sent behind a publish refused here and not sent again yet: refused too, so it lands after.
        return Promise.reject(new GroupOverloadedError(this.groupId));
      }
      // The refused one again (or an earlier one), or it was answered since, or given up.
      this.refusedPublishes.delete(id.source);
    }
    // Publishes of this source proposed in an earlier leadership and still pending may yet be
    // refused (their entries overwritten while another node led) after this one commits: it waits.
    const leadership = this.leaderships;
    let pending = this.pendingPublishes.get(id.source);
    if (pending !== undefined && pending.leadership !== leadership) {
      pending.older += pending.current;
      pending.current = 0;
      pending.leadership = leadership;
    }
    if (pending !== undefined && pending.older > 0)
      return Promise.reject(new GroupOverloadedError(this.groupId));
    if (pending === undefined) {
      pending = { leadership, current: 0, older: 0 };
      this.pendingPublishes.set(id.source, pending);
    }
    pending.current++;
    const counted = pending;
    const answered = (): void => {
      if (counted.leadership === leadership) counted.current--;
      else counted.older--;
      if (counted.current === 0 && counted.older === 0 && this.pendingPublishes.get(id.source) === counted)
        this.pendingPublishes.delete(id.source);
    };
    const proposed = this.propose(command);
    proposed.then(answered, answered);
    proposed.catch((error: unknown) => {
      // Refused with nothing appended (or by a leader on its way out): what its source sent behind
      // it must not land first. Recorded within this turn: the next request comes in a later one.
      if (!(error instanceof GroupOverloadedError) && !(error instanceof NotLeaderError)) return;
      const known = this.refusedPublishes.get(id.source);
      if (known !== undefined && known.id <= id.messageId) return;
      const now = this.clock.now();
      if (this.refusedPublishes.size >= 256)
        for (const [source, entry] of this.refusedPublishes)
          if (now - entry.at >= REFUSED_PUBLISH_HOLD_MS) this.refusedPublishes.delete(source);
      this.refusedPublishes.set(id.source, { id: id.messageId, at: now });
    });
    return proposed;
  }

  /**
   * An owner this node reached through the cluster is gone (its node answered that it has no such
   * channel, or the node is down): its consumers go and its unacked messages come back.
   */
  ownerLost(owner: OwnerId): void {
    if (this.state === 'open' && this.log.role === 'leader') this.ownerGone(owner, true);
  }

  /**
   * The owner's node is suspected (`suspended`), or answers again: its consumers stop, or resume,
   * taking messages; what it holds stays its own. Leader only; nothing is proposed when the state
   * says so already or the same change is in flight (callers re-check every second).
   */
  setOwnerSuspended(owner: OwnerId, suspended: boolean): void {
    if (this.state !== 'open' || this.log.role !== 'leader' || !this.machine.hasOwner(owner)) return;
    if (this.machine.isOwnerSuspended(owner) === suspended || this.ownersSuspending.has(owner)) return;
    this.ownersSuspending.add(owner);
    const done = (): void => {
      this.ownersSuspending.delete(owner);
    };
    this.log
      .propose({ type: suspended ? 'suspendOwner' : 'resumeOwner', owner })
      .then(done, (err: unknown) => {
        done();
        this.logger.debug({ err, owner, suspended }, 'owner suspension not proposed');
      });
  }

  /** Whether `owner`'s consumers are suspended here (its node suspected by a leader). */
  isOwnerSuspended(owner: OwnerId): boolean {
    return this.machine.isOwnerSuspended(owner);
  }

  /** Propose `command`; one made before the log is open waits for it (the broker shows an actor at once). */
  private propose(command: QueueCommand): Promise<QueueApplyResult> {
    this.lastProposedAt = this.clock.now();
    if (command.type === 'enqueue' && command.handOff !== undefined) this.widenDedupeWindow();
    const proposed =
      this.state === 'new' ? this.opened.then(() => this.log.propose(command)) : this.log.propose(command);
    if (
      EARLY_REPLY_BREAK &&
      command.type === 'enqueue' &&
      repliesBeforeCommit(command.handOff !== undefined)
    ) {
      // Deliberately broken (test-breaks.ts): the reply no longer waits for the commit.
      proposed.catch(toVoid);
      return Promise.resolve(EARLY_OK);
    }
    return proposed;
  }

  /**
   * Before a hand-off is proposed: when the cluster agreed on a wider dedupe window than the log
   * set, propose it first, so the log holds it ahead of the hand-off and every replica dedupes that
   * hand-off, and all after it, under the wider window. Never narrows (a source may have counted on
   * the wider one). A proposal refused (not leading) is made again by a later hand-off.
   */
  private widenDedupeWindow(): void {
    if (this.wideningDedupeWindow) return;
    const wanted = this.agreedDedupeWindow();
    if (!isDedupeWindow(wanted) || wanted <= this.machine.dedupeWindow()) return;
    this.wideningDedupeWindow = true;
    const command: QueueCommand = { type: 'setDedupeWindow', maxIdsPerSource: wanted };
    const proposed =
      this.state === 'new' ? this.opened.then(() => this.log.propose(command)) : this.log.propose(command);
    proposed.then(
      () => {
        this.wideningDedupeWindow = false;
        this.logger.info({ maxIdsPerSource: wanted }, 'dedupe window widened');
      },
      (err: unknown) => {
        this.wideningDedupeWindow = false;
        this.logger.debug({ err, maxIdsPerSource: wanted }, 'dedupe window not widened');
      },
    );
  }

  /** Stop the timer and close the log; stored state is kept. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.shutDown();
    await this.log.close();
  }

  /**
   * Delete the queue's data: tell every consumer's owner its consumer is cancelled, destroy the
   * log and delete every body. Resolves with the number of ready messages deleted.
   */
  async delete(options: { readonly notifyConsumers?: boolean } = {}): Promise<number> {
    const count = this.machine.readyCount();
    const { deadLetterPending } = this.machine.counts();
    if (deadLetterPending > 0) {
      // Deleting a queue deletes its messages, those waiting for their hand-off included (as in
      // RabbitMQ); never silently.
      this.logger.warn(
        { deadLetterPending },
        'queue deleted with messages waiting for their dead-letter hand-off: they are dropped',
      );
    }
    // Only the leader tells the consumers (every replica deletes its data; one cancel each).
    const notify = (options.notifyConsumers ?? true) && this.log.role === 'leader';
    for (const consumer of notify ? this.machine.consumers() : []) {
      try {
        this.sinks.resolveOwner(consumer.owner)?.consumerCancelled(this, consumer.tag);
      } catch (err) {
        this.logger.error({ err, owner: consumer.owner }, 'consumerCancelled failed');
      }
    }
    this.shutDown();
    await this.log.destroy();
    this.bodyStore.deleteGroup(this.groupId);
    return count;
  }

  private shutDown(): void {
    this.state = 'closed';
    this.wakeLeaderWaiters();
    this.leading = false;
    this.repair.stop();
    this.stopTimer();
    this.stopHandOffs();
    this.drops.close();
    this.waitingLog.close();
    this.unsubscribeRole?.();
    this.unsubscribeRole = undefined;
  }

  // ------------------------------------------------------------------------------ commands

  /**
   * Enqueue a routed message; `ttl` is its validated `expiration` in ms. Resolves `ok` or
   * `rejected`; with a `handOff` id (a dead-lettered copy from another queue), `duplicate` when
   * this queue already has it.
   */
  enqueue(message: StoredMessage, ttl: number | undefined, handOff?: HandOffId): Promise<QueueReply> {
    return this.propose({ type: 'enqueue', size: message.body.byteLength, ttl, message, handOff }).then(
      replyOf,
    );
  }

  /** Attach a consumer; resolves `ok` or `locked` (exclusivity). `prefetch` 0 = unlimited. */
  consume(
    owner: OwnerId,
    tag: string,
    prefetch: number,
    noAck: boolean,
    exclusive: boolean,
  ): Promise<QueueReply> {
    return this.propose({ type: 'consume', owner, tag, prefetch, noAck, exclusive }).then(this.consumeReply);
  }

  cancel(owner: OwnerId, tag: string): Promise<void> {
    return this.propose({ type: 'cancel', owner, tag }).then(toVoid);
  }

  /** Ack. Unknown ids, or ids `owner` does not hold, are ignored. */
  settle(owner: OwnerId, ids: readonly number[]): Promise<void> {
    return this.propose({ type: 'settle', owner, ids }).then(toVoid);
  }

  /** Nack/reject with requeue, or recover. */
  returnMessages(owner: OwnerId, ids: readonly number[]): Promise<void> {
    return this.propose({ type: 'return', owner, ids }).then(toVoid);
  }

  /** Nack/reject without requeue. */
  discard(owner: OwnerId, ids: readonly number[]): Promise<void> {
    return this.propose({ type: 'discard', owner, ids }).then(toVoid);
  }

  /** basic.get: the head message, or undefined when the queue is empty. */
  get(owner: OwnerId, noAck: boolean): Promise<QueueGetResult | undefined> {
    return this.propose({ type: 'get', owner, noAck }).then(this.getResult);
  }

  /** Remove every ready message; resolves with how many. */
  purge(): Promise<number> {
    return this.propose(PURGE_COMMAND).then(purgedCount);
  }

  /** Remove these ready messages by id, without dead-lettering; resolves with the ids removed. */
  remove(ids: readonly number[]): Promise<readonly number[]> {
    return this.propose({ type: 'remove', ids }).then(removedIds);
  }

  /** The owner (channel) is gone: its consumers go, its unacked messages come back. */
  ownerDown(owner: OwnerId): Promise<void> {
    return this.propose({ type: 'ownerDown', owner }).then(toVoid);
  }

  /** A use of the queue that resets its `x-expires` clock (declare, passive declare). */
  touch(): Promise<void> {
    return this.propose(TOUCH_COMMAND).then(toVoid);
  }

  /** A new effective configuration (arguments + policy). */
  setConfig(config: QueueConfig): Promise<void> {
    return this.propose({ type: 'setConfig', config }).then(toVoid);
  }

  // ------------------------------------------------------------------------------ reads (local state)

  /** Hand-off ids remembered per source, as this replica's log set it (replica checks). */
  dedupeWindow(): number {
    return this.machine.dedupeWindow();
  }

  counts(): QueueCounts {
    return this.machine.counts();
  }

  /** Bodies this replica found missing, repaired from another replica, or found lost everywhere. */
  bodyRepairStatus(): BodyRepairStatus {
    return this.repair.status();
  }

  /** Index of the last entry this replica applied (message ids are such indexes). */
  get appliedIndex(): number {
    return this.machine.lastAppliedIndex;
  }

  /** Ids of the live messages in this replica's state (ready, unacked, pending dead-letters). */
  liveIds(): Iterable<number> {
    return this.machine.liveIds();
  }

  fetchCounts(): Promise<QueueCounts> {
    return Promise.resolve(this.machine.counts());
  }

  removalTotals(): RemovalTotals {
    return this.machine.removalTotals();
  }

  /** What became of removed messages, per reason (see `DeadLetterTotals`). */
  deadLetterTotals(): DeadLetterTotals {
    const machine = this.machine.deadLetterTotals();
    return {
      deadLettered: machine.deadLettered,
      droppedNoDlx: machine.droppedNoDlx,
      droppedCycle: sumTotals(this.drops.cycleTotals(), this.handOffDrops.cycleTotals()),
      droppedAtMostOnce: this.drops.atMostOnceTotals(),
    };
  }

  /** Cycle drops per strategy (`deadLetterTotals` sums them), leader-local like those. */
  cycleDropsByStrategy(): { readonly atMostOnce: RemovalTotals; readonly atLeastOnce: RemovalTotals } {
    return { atMostOnce: this.drops.cycleTotals(), atLeastOnce: this.handOffDrops.cycleTotals() };
  }

  /** What this replica applied since it opened: published, delivered, acked, dead-lettered. */
  flowTotals(): QueueFlowTotals {
    return this.flow;
  }

  /** At-least-once hand-offs whose last attempt found nowhere to go or was refused (leader; else 0). */
  blockedHandOffs(): number {
    return this.handOffs?.blocked ?? 0;
  }

  /** Whether messages wait for their at-least-once dead-letter hand-off. */
  hasPendingDeadLetters(): boolean {
    return this.machine.counts().deadLetterPending > 0;
  }

  /**
   * An exchange or binding appeared in this queue's vhost, or a cluster node answers again: retry
   * every waiting hand-off now instead of after its back-off. A no-op unless leading with hand-offs
   * waiting.
   */
  wakeDeadLetters(): void {
    this.handOffs?.wake();
  }

  consumers(): ConsumerInfo[] {
    return this.machine.consumers();
  }

  /** The owners (channels) with consumers or unacked messages in this queue. */
  ownerIds(): OwnerId[] {
    return this.machine.ownerIds();
  }

  config(): QueueConfig {
    return this.machine.currentConfig();
  }

  /**
   * A page of this replica's ready messages (message-browse.ts), read from its applied state and
   * body store: nothing is proposed and nothing changes. On the leader it shows every committed
   * command the leader applied, as the queue's consumers see it; the caller makes sure it asks the
   * leader (broker/queue-browse.ts). Synchronous, so the page is one consistent moment.
   */
  browse(request: BrowseRequest): BrowsePage {
    const machine = this.machine;
    return browseMessages(
      {
        readyEntries: (after, position) => machine.browseEntries(after, position),
        readyCount: machine.readyCount(),
        appliedIndex: machine.lastAppliedIndex,
        body: (id) => this.bodyStore.get(this.groupId, id),
      },
      request,
      this.clock.now(),
    );
  }

  // ------------------------------------------------------------------------------ apply

  private applyEntry(command: QueueCommand, meta: EntryMeta): QueueApplyResult {
    const settledBefore =
      command.type === 'deadLetterSettled' ? this.machine.deadLetterTotals().deadLettered : undefined;
    const result = this.machine.apply(command, meta);
    // Counted once open (replayed entries were counted by the run that applied them first).
    if (this.state === 'open') this.countApplied(command, result, settledBefore);
    const { reply } = result;
    let returned: QueueApplyResult = result;
    if (command.type === 'enqueue') {
      // Stored even if it left again within this apply (TTL 0, drop-head): effects may read it.
      // A refused publish that reject-publish-dlx holds pending at-least-once is stored too, under
      // its entry's index (its id as a pending dead-letter).
      if (
        reply.type === 'ok' ||
        (reply.type === 'rejected' && this.machine.isPendingDeadLetter(meta.index))
      ) {
        // The entry being applied carries the body durably (see BodyStore.putLogged).
        this.bodyStore.putLogged(this.groupId, meta.index, command.message, this.state === 'new');
      }
    } else if (reply.type === 'got') {
      const got: GotApplyResult = { ...result, message: this.bodyStore.get(this.groupId, reply.id) };
      returned = got;
    } else if (command.type === 'deadLetterSettled') {
      // `removed` lists the ids this entry actually settled.
      this.handOffs?.settledApplied(command.ids, result.removed);
    }
    if (result.effects.length > 0 && this.state === 'open' && this.log.role === 'leader') {
      this.runEffects(result.effects);
    }
    const { removed } = result;
    for (let i = 0; i < removed.length; i++) this.bodyStore.delete(this.groupId, removed[i] as number);
    return returned;
  }

  private countApplied(
    command: QueueCommand,
    result: QueueApplyResult,
    before: RemovalTotals | undefined,
  ): void {
    const settled =
      before === undefined ? undefined : { before, after: this.machine.deadLetterTotals().deadLettered };
    this.flow.count(command, result, settled);
    // The node's totals take what its leaders commit, so a cluster's nodes sum to the whole.
    if (this.nodeFlow !== undefined && this.log.role === 'leader')
      this.nodeFlow.count(command, result, settled);
  }

  // ------------------------------------------------------------------------------ snapshot transfer

  /**
   * `snapshot` (the machine's, at application index `meta.index`) with the bodies a follower
   * installing it needs: those of the messages live in the current state with an id up to
   * `meta.index`. Every such message was live at the snapshot too (ids never come back); a
   * message live at the snapshot and gone since is removed again by the entries after it, which
   * the follower replays, so its body is not needed (and no longer stored here).
   */
  private transferSnapshot(snapshot: Uint8Array, meta: EntryMeta): Uint8Array {
    const bodies: TransferredBody[] = [];
    for (const id of this.machine.liveIds()) {
      if (id > meta.index) continue;
      const message = this.bodyStore.get(this.groupId, id);
      if (message === undefined) {
        this.logger.error({ id }, 'body missing for a live message: not in the snapshot sent');
        continue;
      }
      bodies.push({ id, message });
    }
    // Deliberately broken (test-breaks.ts `transfer-without-bodies`): no bodies at all.
    return encodeTransferSnapshot({ metadata: snapshot, bodies: TRANSFER_WITHOUT_BODIES ? [] : bodies });
  }

  /**
   * Install a snapshot received from the leader: drop the bodies of the state it replaces, store
   * those it carries, return its metadata (the log restores the machine from it once stored).
   */
  private installTransferSnapshot(transfer: Uint8Array): Uint8Array {
    const { metadata, bodies } = decodeTransferSnapshot(transfer);
    const store = this.bodyStore;
    const incoming = new Set<number>();
    for (const body of bodies) incoming.add(body.id);
    for (const id of this.machine.liveIds()) if (!incoming.has(id)) store.delete(this.groupId, id);
    for (const body of bodies) store.put(this.groupId, body.id, body.message);
    // Rare, and worth seeing in the log: this replica was behind the leader's log and catches up
    // from its snapshot (what a lagging replica's missing bodies would trace back to).
    this.logger.info({ bodies: bodies.length }, 'catching up from a snapshot sent by the leader');
    return metadata;
  }

  private runEffects(effects: readonly QueueEffect[]): void {
    for (const effect of effects) {
      try {
        switch (effect.type) {
          case 'deliver':
            this.deliver(effect.owner, effect.tag, effect.id, effect.redelivered, effect.deliveryCount);
            break;
          case 'deadLetter':
            this.deadLetter(effect.reason, effect.ids, effect.deadLetteredAt);
            break;
          case 'deadLetterRejected':
            this.atMostOnce.publish(
              // A refused publish of an entry this replica did not propose (an earlier term's,
              // applied once it leads) comes deferred: decoded here, where it is read.
              [plainStoredMessage(effect.message)],
              effect.reason,
              effect.deadLetteredAt,
              this.machine.currentConfig(),
            );
            break;
          case 'deadLetterHandOff':
            this.handOffs?.track(effect.ids);
            break;
          case 'expired':
            this.timings?.expired(effect.overdueMs, effect.at, this.clock.now());
            break;
          case 'timer':
            this.setDeadline(effect.at);
            break;
          case 'cancelTimer':
            this.setDeadline(undefined);
            break;
          case 'consumerCancelled':
            this.sinks.resolveOwner(effect.owner)?.consumerCancelled(this, effect.tag);
            break;
          case 'queueExpired':
            this.sinks.onQueueExpired(this);
            break;
        }
      } catch (err) {
        // A failing sink must not break the log's apply loop (nor skip the body deletions).
        this.logger.error({ err, effect: effect.type }, 'queue effect failed');
      }
    }
  }

  private deliver(
    owner: OwnerId,
    tag: string,
    id: number,
    redelivered: boolean,
    deliveryCount: number,
  ): void {
    const sink = this.sinks.resolveOwner(owner);
    if (sink === undefined) {
      this.ownerGone(owner);
      return;
    }
    const message = this.bodyStore.get(this.groupId, id);
    if (message === undefined) {
      // Not whole (a bug, a damaged disk): fetch it, then deliver — or remove it if lost everywhere.
      this.repair.missing(id, (repaired) =>
        this.deliverRepaired(owner, tag, id, redelivered, deliveryCount, repaired),
      );
      return;
    }
    sink.deliver(this, tag, id, redelivered, deliveryCount, message);
  }

  /**
   * A delivery that waited for its body: sent if this replica still leads and the message is still
   * the owner's (a noAck delivery left the queue when it was made: it is sent all the same); a body
   * lost on every replica removes the message (settled for its owner) so the queue does not stall.
   */
  private deliverRepaired(
    owner: OwnerId,
    tag: string,
    id: number,
    redelivered: boolean,
    deliveryCount: number,
    message: StoredMessage | undefined,
  ): void {
    if (this.state !== 'open' || !this.leading) return;
    const held = this.machine.heldBy(id) === owner;
    if (message === undefined) {
      if (held) this.removeLost(owner, id);
      return;
    }
    const noAck = this.machine.consumers().some((c) => c.owner === owner && c.tag === tag && c.noAck);
    if (!held && !noAck) return;
    try {
      this.sinks.resolveOwner(owner)?.deliver(this, tag, id, redelivered, deliveryCount, message);
    } catch (err) {
      this.logger.error({ err, owner }, 'delivery of a repaired message failed');
    }
  }

  /** Settle, for its owner, an unacked message whose body is lost on every replica. */
  private removeLost(owner: OwnerId, id: number): void {
    this.log.propose({ type: 'settle', owner, ids: [id] }).catch((err: unknown) => {
      this.logger.warn({ err, id }, 'removing a message whose body is lost failed');
    });
  }

  /**
   * Look for live messages without a body (a replica taking over the queue), a chunk per turn so a
   * deep queue does not hold the event loop; each one found is fetched from the other replicas.
   */
  private scanBodies(): void {
    const ids = this.machine.liveIds();
    const step = (): void => {
      if (this.state !== 'open' || !this.leading) return;
      for (let n = 0; n < BODY_SCAN_CHUNK; n++) {
        const next = ids.next();
        if (next.done === true) return;
        if (!this.bodyStore.has(this.groupId, next.value)) this.repair.missing(next.value);
      }
      setImmediate(step);
    };
    step();
  }

  /** At-most-once: publish the copies now, while the bodies are still stored. */
  private deadLetter(reason: RemovalReason, ids: readonly number[], deadLetteredAt: number): void {
    const messages: StoredMessage[] = [];
    for (const id of ids) {
      const message = this.bodyStore.get(this.groupId, id);
      if (message !== undefined) {
        messages.push(message);
        continue;
      }
      // Another replica may still hold it (it has not applied this removal yet): fetch and publish.
      this.repair.missing(id, (repaired) => {
        if (repaired === undefined) {
          this.logger.error({ id, reason }, 'body missing for a dead-lettered message: no copy published');
          return;
        }
        this.atMostOnce.publish([repaired], reason, deadLetteredAt, this.machine.currentConfig());
      });
    }
    this.atMostOnce.publish(messages, reason, deadLetteredAt, this.machine.currentConfig());
  }

  /** A delivery's owner is gone: return its messages (once per owner while the proposal is in flight). */
  private ownerGone(owner: OwnerId, now = false): void {
    if (!now && this.graceOwners !== undefined) {
      // Does not resolve during the grace after a leader change: checked again when it ends.
      this.graceOwners.add(owner);
      return;
    }
    if (this.ownersGoing.has(owner)) return;
    this.ownersGoing.add(owner);
    // Proposed after the current apply completes: never re-enter the log from inside apply.
    queueMicrotask(() => {
      this.log.propose({ type: 'ownerDown', owner }).then(
        () => this.ownersGoing.delete(owner),
        (err: unknown) => {
          this.ownersGoing.delete(owner);
          this.logger.debug({ err, owner }, 'ownerDown for a vanished owner failed');
        },
      );
    });
  }

  // ------------------------------------------------------------------------------ leadership

  private readonly onRole = (change: RoleChange): void => {
    this.knownLeader = change.leader;
    this.refusedPublishes.clear();
    // Before open() completes, open() takes the duties itself.
    if (this.state !== 'open') return;
    if (change.role === 'leader') {
      if (!this.leading) this.takeLeadership();
    } else {
      this.leading = false;
      this.graceOwners = undefined;
      this.repair.reset();
      this.stopTimer();
      this.stopHandOffs();
    }
    // The election is over (this replica leads, or it heard who does): held commands may go.
    if (change.role === 'leader' || change.leader !== undefined) this.wakeLeaderWaiters();
  };

  private stopHandOffs(): void {
    this.handOffs?.stop();
    this.handOffs = undefined;
  }

  /**
   * Re-derive the leader's duties from the state. An owner that does not resolve (now, or for a
   * delivery during the grace) is given up at once only when `atOpen`; after a leader change it
   * gets `OWNER_GRACE_MS` (see there).
   */
  private takeLeadership(atOpen = false): void {
    this.leading = true;
    const leadership = ++this.leaderships;
    if (this.machine.lastAppliedIndex === 0 && this.firstConfig === undefined) {
      // A fresh group: its first entry records the config every replica starts from. (A replica
      // that has not applied what an earlier leader committed yet proposes it again: harmless.)
      this.firstConfig = this.log
        .propose({ type: 'setConfig', config: this.initialConfig })
        .catch((err: unknown) => this.logger.debug({ err }, 'first config not proposed'));
    }
    this.stopTimer();
    this.setDeadline(this.machine.nextDeadline());
    this.stopHandOffs();
    this.handOffs = new AtLeastOnceHandOffs({
      vhost: this.vhost,
      queue: this.name,
      groupId: this.groupId,
      machine: this.machine,
      bodyStore: this.bodyStore,
      missingBody: (id) => {
        if (this.repair.isLost(id)) return 'lost';
        this.repair.missing(id);
        return 'repairing';
      },
      route: this.sinks.routeDeadLetter,
      proposeSettled: (ids) => {
        this.lastProposedAt = this.clock.now();
        return this.log.propose({ type: 'deadLetterSettled', ids });
      },
      clock: this.clock,
      logger: this.logger,
      drops: this.handOffDrops,
      waitingLog: this.waitingLog,
      ...(this.timings === undefined ? {} : { timings: this.timings }),
      maxInProgress: () => this.agreedDedupeWindow() / 2,
      ...(this.deadLettering.handOff === undefined ? {} : { scheduler: this.deadLettering.handOff }),
    });
    // Every pending message is due now: the previous leader's attempts are unknown here, and a
    // repeat is harmless (the targets dedupe by hand-off id).
    this.handOffs.resumeAll();
    this.scanBodies();
    if (this.machine.isQueueExpired()) {
      try {
        this.sinks.onQueueExpired(this);
      } catch (err) {
        this.logger.error({ err }, 'onQueueExpired failed');
      }
    }
    this.graceOwners = atOpen ? undefined : new Set();
    this.resumeOwners(this.machine.ownerIds());
    if (!atOpen) {
      setTimeout(() => {
        if (this.state !== 'open' || !this.leading || this.leaderships !== leadership) return;
        const unresolved = this.graceOwners ?? new Set<OwnerId>();
        this.graceOwners = undefined;
        const still = new Set(this.machine.ownerIds());
        this.resumeOwners([...unresolved].filter((owner) => still.has(owner)));
      }, OWNER_GRACE_MS).unref?.();
    }
    try {
      this.sinks.onLeader?.(this);
    } catch (err) {
      this.logger.error({ err }, 'onLeader failed');
    }
  }

  /**
   * Send each owner's outstanding deliveries again (redelivered: the previous leader may have sent
   * them); an owner that does not resolve is gone (or, during the grace, checked again after it).
   */
  private resumeOwners(owners: readonly OwnerId[]): void {
    for (const owner of owners) {
      const sink = this.sinks.resolveOwner(owner);
      if (sink === undefined) {
        this.ownerGone(owner);
        continue;
      }
      for (const delivery of this.machine.outstandingDeliveries(owner)) {
        const message = this.bodyStore.get(this.groupId, delivery.id);
        if (message === undefined) {
          const { tag, id, deliveryCount } = delivery;
          this.repair.missing(id, (repaired) =>
            this.deliverRepaired(owner, tag, id, true, deliveryCount, repaired),
          );
          continue;
        }
        // Redelivered: the previous leader may have sent it already.
        try {
          sink.deliver(this, delivery.tag, delivery.id, true, delivery.deliveryCount, message);
        } catch (err) {
          this.logger.error({ err, owner }, 'redelivery failed');
        }
      }
    }
  }

  // ------------------------------------------------------------------------------ the timer

  /**
   * The machine's earliest deadline changed. A later deadline keeps the armed timer (it fires early
   * and re-arms without proposing), so a queue whose head moves on every delivery does not churn
   * timers; an earlier one re-arms at once; none leaves the timer to fire and find nothing.
   */
  private setDeadline(at: number | undefined): void {
    this.deadline = at;
    if (at === undefined) return;
    if (this.timer !== undefined && this.timerAt <= at) return;
    this.arm(at);
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    const now = this.clock.now();
    const delay = Math.min(Math.max(at - now, 0), MAX_TIMER_DELAY_MS);
    this.timerAt = now + delay;
    this.timer = setTimeout(this.onTimer, delay);
    this.timer.unref?.();
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The earliest deadline (as the applied state has it) is due. An `expire` is proposed unless an
   * entry proposed since then will expire it; while applied state lags (earlier entries still
   * committing, and messages behind the head coming due meanwhile), the timer ticks every
   * EXPIRE_PIPELINE_MS and proposes another whenever no entry was proposed for that long — so each
   * due message waits at most that for an entry to expire it, not for the previous one to commit.
   * Publishes keep proposing entries: a queue being published to needs none of these.
   */
  private readonly onTimer = (): void => {
    this.timer = undefined;
    const at = this.deadline;
    if (at === undefined || this.state !== 'open' || this.log.role !== 'leader') return;
    const now = this.clock.now();
    if (at > now) {
      this.arm(at);
      return;
    }
    // An entry proposed at or after `at` expires the head when applied; one older than the
    // pipeline interval leaves the messages that came due since it waiting.
    const covered = this.lastProposedAt >= at && now - this.lastProposedAt < EXPIRE_PIPELINE_MS;
    if (!covered && this.expiresInFlight < MAX_EXPIRES_IN_FLIGHT) {
      this.lastProposedAt = now;
      this.expiresInFlight++;
      this.log.propose(EXPIRE_COMMAND).then(this.afterExpire, this.expireFailed);
    }
    this.arm(Math.max(now, this.lastProposedAt) + EXPIRE_PIPELINE_MS);
  };

  /**
   * An expire that found nothing due (the entry's ts lagged this clock) changes no deadline, so no
   * timer effect re-arms the timer: re-arm from the state.
   */
  private readonly afterExpire = (): void => {
    this.expiresInFlight--;
    if (this.state === 'open' && this.leading && this.timer === undefined) {
      this.setDeadline(this.machine.nextDeadline());
    }
  };

  private readonly expireFailed = (err: unknown): void => {
    this.expiresInFlight--;
    // Closed or no longer leader: the next leader re-arms. Anything else is worth a warning.
    const code = (err as { code?: unknown } | undefined)?.code;
    if (code === 'LOG_CLOSED' || code === 'NOT_LEADER' || err instanceof GroupOverloadedError) {
      // Overloaded: the timer proposes again within EXPIRE_PIPELINE_MS while anything is due.
      this.logger.debug({ err }, 'expire not proposed');
    } else this.logger.warn({ err }, 'expire proposal failed');
  };

  private readonly consumeReply = (result: QueueApplyResult): QueueReply => {
    if (result.reply.type !== 'locked') return result.reply;
    // RabbitMQ's wording; the machine's text says which case it was.
    return {
      type: 'locked',
      text: `queue '${this.name}' in vhost '${this.vhost}' in exclusive use (${result.reply.text})`,
    };
  };

  private readonly getResult = (
    result: QueueApplyResult,
  ): QueueGetResult | undefined | Promise<QueueGetResult> => {
    const { reply } = result;
    if (reply.type !== 'got') return undefined;
    const { message } = result as GotApplyResult;
    const got = (body: StoredMessage): QueueGetResult => ({
      id: reply.id,
      redelivered: reply.redelivered,
      deliveryCount: reply.deliveryCount,
      messageCount: reply.messageCount,
      message: body,
    });
    if (message !== undefined) return got(message);
    // Not whole: wait for the body from another replica (or fail, the message removed, if lost).
    return new Promise<QueueGetResult>((resolve, reject) => {
      this.repair.missing(reply.id, (repaired) => {
        if (repaired !== undefined) {
          resolve(got(repaired));
          return;
        }
        const owner = this.machine.heldBy(reply.id);
        if (owner !== undefined) this.removeLost(owner, reply.id);
        reject(new QueueBodyMissingError(this.groupId, reply.id));
      });
    });
  };
}

function replyOf(result: QueueApplyResult): QueueReply {
  return result.reply;
}

function toVoid(): void {}

const EARLY_REPLY_BREAK = CONFIRM_BEFORE_COMMIT || HAND_OFF_BEFORE_COMMIT;

/** Whether a test break (test-breaks.ts) makes an enqueue reply before its commit. */
function repliesBeforeCommit(handOff: boolean): boolean {
  return handOff ? HAND_OFF_BEFORE_COMMIT : CONFIRM_BEFORE_COMMIT;
}

const EARLY_OK: QueueApplyResult = { reply: { type: 'ok' }, effects: [], removed: [] };

function removedIds(result: QueueApplyResult): readonly number[] {
  return result.reply.type === 'removed' ? result.reply.ids : [];
}

function sumTotals(a: RemovalTotals, b: RemovalTotals): RemovalTotals {
  return {
    rejected: a.rejected + b.rejected,
    expired: a.expired + b.expired,
    maxlen: a.maxlen + b.maxlen,
    delivery_limit: a.delivery_limit + b.delivery_limit,
  };
}

function purgedCount(result: QueueApplyResult): number {
  return result.reply.type === 'purged' ? result.reply.count : 0;
}
