import { randomBytes, randomUUID } from 'node:crypto';
import type {
  BasicProperties,
  ExchangeDeclare,
  FieldTable,
  QueueDeclare,
  QueueDeclareOk,
} from '@styx/client/wire';
import { isConnectionError } from '@styx/client/wire';
import type { Clock, EntryMeta, RaftGroupLog, ReplicatedLog, StateMachine } from '@styx/raft';
import { InMemoryLog, NotLeaderError, systemClock } from '@styx/raft';
import { accessRefused, ChannelError, Code, ConnectionError, notFound } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import { metadataCommandCodec } from '../metadata/command-codec.ts';
import type { EffectiveQueueConfig } from '../metadata/effective-config.ts';
import { effectiveQueueConfig, sameQueueConfig } from '../metadata/effective-config.ts';
import type {
  ExchangeRecord,
  MetadataCommand,
  MetadataReply,
  QueueRecord,
} from '../metadata/metadata-machine.ts';
import { bootstrapCommands, MetadataMachine } from '../metadata/metadata-machine.ts';
import { hashPassword, verifyPassword } from '../metadata/passwords.ts';
import { canAccess, canUseVhost } from '../metadata/permissions.ts';
import { queueConfigFromArguments, validateExpiration } from '../metadata/queue-arguments.ts';
import { checkExclusiveAccess } from '../metadata/replies.ts';
import type { BodyStore } from '../queue/body-store.ts';
import { InMemoryBodyStore } from '../queue/body-store.ts';
import type { DeadLetterRoute } from '../queue/dead-letter-route.ts';
import { showsDeliveryCount, withDeliveryCount } from '../queue/delivery-count-header.ts';
import type { OwnerSink, QueueActorSinks } from '../queue/queue-actor.ts';
import { QueueActor } from '../queue/queue-actor.ts';
import type { QueueApplyResult, QueueCommand, QueueConfig, StoredMessage } from '../queue/types.ts';
import { route } from '../router/route.ts';
import { withCompaction } from '../storage/compaction-policy.ts';
import { durableQueueLog } from '../storage/durable-queue-log.ts';
import type { NodeStorage } from '../storage/node-storage.ts';
import { raftHostOf } from '../storage/raft-groups.ts';
import type { Connection } from '../transport/ws/connection.ts';
import { isLoopbackAddress } from './loopback.ts';

/**
 * A queue declared on another node of the cluster: until queues are replicated across nodes, only
 * its own node serves it (406, so the client learns where to go rather than that it is missing).
 */
function servedElsewhere(record: QueueRecord): ChannelError {
  return new ChannelError(
    Code.PRECONDITION_FAILED,
    `queue '${record.name}' in vhost '${record.vhost}' is served by cluster node ${record.node ?? '?'}: ` +
      'connect to that node to use it',
  );
}

/** Who is acting: the authenticated user, the vhost of the connection, and the connection. */
export interface Session {
  readonly user: string;
  readonly vhost: string;
  readonly connectionId: string;
}

export type Permission = 'configure' | 'write' | 'read';

export interface BrokerOptions {
  /** Unique name of this node, used in connection ids and generated names. */
  readonly nodeName: string;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Resident memory above which publishers are throttled, bytes; 0 disables the check. */
  readonly memoryBudgetBytes: number;
  /** The user created on a fresh node (RabbitMQ's guest/guest). */
  readonly defaultUser?: { readonly name: string; readonly password: string };
  /** Users that may only connect from a loopback address (RabbitMQ's `loopback_users`). */
  readonly loopbackUsers?: readonly string[];
  /**
   * The node's durable storage. With it, the metadata and every durable queue run on single-voter
   * logs in LMDB and survive restarts; without it (embedded use, tests) everything is in memory.
   */
  readonly storage?: NodeStorage;
  /** The cluster this node belongs to (requires `storage`); absent for a node on its own. */
  readonly cluster?: BrokerCluster;
}

/**
 * What the broker needs from the cluster it belongs to (see cluster/cluster.ts). Without one the
 * node is alone: its metadata group has one voter, itself.
 */
export interface BrokerCluster {
  /** This node's id (its Raft node id and libp2p peer id). */
  readonly nodeId: string;
  /** The metadata replica opens as a joiner: a fresh data dir joining an existing cluster. */
  readonly joining: boolean;
  /**
   * Called once the metadata replica is open, before the broker bootstraps or recovers anything:
   * a joiner asks to join and waits until its replica has caught up; a member announces itself.
   */
  attach(metadata: MetadataGroup): Promise<void>;
  /** Run `command` on the metadata leader (this replica does not lead); its reply once committed. */
  forward(command: MetadataCommand, leaderHint: string | undefined): Promise<MetadataReply>;
}

/** The metadata group as the cluster layer sees it: its Raft replica and the applied state. */
export interface MetadataGroup {
  readonly log: RaftGroupLog<MetadataCommand, MetadataReply>;
  readonly state: MetadataMachine;
  /**
   * Listen to every applied command (on every node, whoever proposed it), and to snapshots
   * installed from the leader (command and reply undefined: everything may have changed).
   */
  onApplied(listener: MetadataListener): () => void;
}

/** See `MetadataGroup.onApplied`. */
export type MetadataListener = (
  command: MetadataCommand | undefined,
  reply: MetadataReply | undefined,
) => void;

/** How long a node waits for its replica to catch up with a metadata change it forwarded, ms. */
const FORWARDED_APPLY_TIMEOUT_MS = 10_000;

/** How often the memory budget is checked, ms. */
const MEMORY_CHECK_INTERVAL_MS = 1000;

/**
 * The broker node's core: the metadata store (vhosts, users, permissions, exchanges, queues,
 * bindings) and the queue actors, with the operations channels perform on them. Protocol framing
 * lives in transport/; the pure state machines live in metadata/ and queue/.
 */
export class Broker {
  readonly nodeName: string;
  readonly logger: Logger;
  readonly serverProperties: FieldTable;
  /** Bumped whenever users or permissions change, so channels can cache permission checks. */
  permissionEpoch = 0;
  private readonly clock: Clock;
  private readonly options: BrokerOptions;
  private readonly metadata = new MetadataMachine();
  private readonly metaLog: ReplicatedLog<MetadataCommand, MetadataReply>;
  /** The metadata's Raft replica (with durable storage), for the cluster layer. */
  private readonly metaGroup: RaftGroupLog<MetadataCommand, MetadataReply> | undefined;
  private readonly cluster: BrokerCluster | undefined;
  private readonly appliedListeners = new Set<MetadataListener>();
  /** Queue incarnations this node is deleting itself (it reports their message counts). */
  private readonly localDeletes = new Set<string>();
  /** vhost → queue name → actor. */
  private readonly actors = new Map<string, Map<string, QueueActor>>();
  private readonly connections = new Map<string, Connection>();
  /** Bodies of non-durable queues; durable queues keep theirs in `storage.bodyStore`. */
  private readonly memoryBodyStore: BodyStore = new InMemoryBodyStore();
  private readonly storage: NodeStorage | undefined;
  private readonly loopbackUsers: ReadonlySet<string>;
  /**
   * The last effective config proposed to each actor (it may not be applied yet), so a policy set
   * and cleared in quick succession compares against what the log will hold, not what it holds now.
   */
  private readonly proposedConfigs = new WeakMap<QueueActor, QueueConfig>();
  private memoryTimer: NodeJS.Timeout | undefined;
  private memoryBlocked = false;

  /** Whether the node is over its memory budget (publishers are blocked). */
  get isMemoryBlocked(): boolean {
    return this.memoryBlocked;
  }
  private readonly sinks: QueueActorSinks = {
    resolveOwner: (owner: string): OwnerSink | undefined => this.resolveOwner(owner),
    routeDeadLetter: (vhost, exchange, routingKeys, headers): DeadLetterRoute =>
      this.routeDeadLetter(vhost, exchange, routingKeys, headers),
    onQueueExpired: (queue: QueueActor): void => this.onQueueExpired(queue),
  };

  private constructor(options: BrokerOptions) {
    this.options = options;
    this.nodeName = options.nodeName;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.loopbackUsers = new Set(options.loopbackUsers ?? ['guest']);
    this.storage = options.storage;
    this.cluster = options.cluster;
    if (this.storage === undefined) {
      if (this.cluster !== undefined) throw new RangeError('a clustered broker needs durable storage');
      this.metaGroup = undefined;
      this.metaLog = new InMemoryLog<MetadataCommand, MetadataReply>('metadata', { clock: this.clock });
    } else {
      this.metaGroup = raftHostOf(this.storage).createLog<MetadataCommand, MetadataReply>(
        'metadata',
        metadataCommandCodec,
        { clock: this.clock, join: this.cluster?.joining ?? false },
      );
      this.metaLog = withCompaction(this.metaGroup, { policy: { maxEntries: 10_000 } });
    }
    this.serverProperties = {
      entries: [
        { key: 'product', value: { longStr: 'Styx' } },
        { key: 'version', value: { longStr: '0.1.0' } },
        { key: 'cluster_name', value: { longStr: options.nodeName } },
        { key: 'platform', value: { longStr: `Node.js ${process.version}` } },
      ],
    };
  }

  /** Open the metadata store (bootstrapping a fresh node) and start the memory monitor. */
  static async start(options: BrokerOptions): Promise<Broker> {
    const broker = new Broker(options);
    await broker.metaLog.open(broker.observedMetadata());
    if (broker.cluster !== undefined && broker.metaGroup !== undefined) {
      await broker.cluster.attach({
        log: broker.metaGroup,
        state: broker.metadata,
        onApplied: (listener) => {
          broker.appliedListeners.add(listener);
          return () => broker.appliedListeners.delete(listener);
        },
      });
    }
    if (broker.metadata.vhosts().length === 0) {
      const user = options.defaultUser ?? { name: 'guest', password: 'guest' };
      const hash = await hashPassword(user.password);
      for (const command of bootstrapCommands({ user: user.name, passwordHash: hash })) {
        await broker.runMeta(command);
      }
    } else {
      await broker.recover();
    }
    if (options.memoryBudgetBytes > 0) {
      broker.memoryTimer = setInterval(() => broker.checkMemory(), MEMORY_CHECK_INTERVAL_MS);
      broker.memoryTimer.unref();
    }
    return broker;
  }

  // ------------------------------------------------------------------------------ connections

  async authenticate(
    user: string,
    password: string,
    vhost: string,
    remoteAddress: string,
    connectionId: string,
  ): Promise<Session> {
    const record = this.metadata.user(user);
    // Unknown user and wrong password get the same answer, so names cannot be probed.
    if (record === undefined || !(await verifyPassword(password, record.passwordHash))) {
      throw new ConnectionError(Code.ACCESS_REFUSED, `login refused: user '${user}' - invalid credentials`);
    }
    if (this.loopbackUsers.has(user) && !isLoopbackAddress(remoteAddress)) {
      throw new ConnectionError(Code.ACCESS_REFUSED, `user '${user}' can only connect via localhost`);
    }
    if (this.metadata.vhost(vhost) === undefined) {
      throw new ConnectionError(Code.NOT_ALLOWED, `vhost '${vhost}' not found`);
    }
    if (!canUseVhost(this.metadata, user, vhost)) {
      throw new ConnectionError(Code.NOT_ALLOWED, `access to vhost '${vhost}' refused for user '${user}'`);
    }
    return { user, vhost, connectionId };
  }

  connectionOpened(connection: Connection): void {
    this.connections.set(connection.id, connection);
    if (this.memoryBlocked) connection.setMemoryBlocked(true);
  }

  connectionClosed(connection: Connection): void {
    if (!this.connections.delete(connection.id)) return;
    // Exclusive queues die with their connection.
    this.runMeta({ type: 'deleteExclusive', connectionId: connection.id })
      .then((reply) => {
        for (const q of reply.deletedQueues) void this.stopActor(q.vhost, q.name, true);
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'failed to delete exclusive queues'));
  }

  private resolveOwner(owner: string): OwnerSink | undefined {
    const slash = owner.lastIndexOf('/');
    const connection = this.connections.get(owner.slice(0, slash));
    return connection?.channelFor(Number(owner.slice(slash + 1)));
  }

  private checkMemory(): void {
    const rss = process.memoryUsage.rss();
    const blocked = rss > this.options.memoryBudgetBytes;
    if (blocked === this.memoryBlocked) return;
    this.memoryBlocked = blocked;
    this.logger.warn(
      { rss, budget: this.options.memoryBudgetBytes },
      blocked
        ? 'memory budget exceeded: publishers blocked'
        : 'memory back under budget: publishers unblocked',
    );
    for (const connection of this.connections.values()) connection.setMemoryBlocked(blocked);
  }

  // ------------------------------------------------------------------------------ permissions

  checkPermission(session: Session, permission: Permission, kind: 'exchange' | 'queue', name: string): void {
    if (!canAccess(this.metadata, session.user, session.vhost, permission, name)) {
      throw accessRefused(
        `access to ${kind} '${name}' in vhost '${session.vhost}' refused for user '${session.user}' (${permission} permission needed)`,
      );
    }
  }

  // ------------------------------------------------------------------------------ metadata operations

  /**
   * The metadata machine as the log applies it: every applied command, proposed here or on another
   * node, is reported to `onMetadataApplied` and the cluster layer's listeners.
   */
  private observedMetadata(): StateMachine<MetadataCommand, MetadataReply> {
    const machine = this.metadata;
    return {
      apply: (command: MetadataCommand, meta: EntryMeta): MetadataReply => {
        const reply = machine.apply(command, meta);
        this.onMetadataApplied(command, reply);
        for (const listener of this.appliedListeners) listener(command, reply);
        return reply;
      },
      snapshot: () => machine.snapshot(),
      restore: (bytes: Uint8Array, meta: EntryMeta) => {
        machine.restore(bytes, meta);
        // A snapshot from the leader replaced everything at once (a lagging or joining node).
        this.permissionEpoch++;
        for (const listener of this.appliedListeners) listener(undefined, undefined);
      },
    };
  }

  /**
   * What every node does when a metadata change applies, whoever proposed it: cached permission
   * checks are dropped, the node's own queues take up new policies, and its actors of queues that
   * no longer exist stop (the proposer's own deletions stop theirs, and count their messages).
   */
  private onMetadataApplied(command: MetadataCommand, reply: MetadataReply): void {
    if (reply.type === 'error') return;
    switch (command.type) {
      case 'putUser':
      case 'deleteUser':
      case 'setPermissions':
      case 'clearPermissions':
      case 'deleteVhost':
        this.permissionEpoch++;
        break;
      case 'setPolicy':
      case 'clearPolicy':
        if (this.cluster !== undefined) void this.applyPolicies(command.vhost);
        break;
    }
    for (const q of reply.deletedQueues) {
      const actor = this.actors.get(q.vhost)?.get(q.name);
      if (actor === undefined || actor.groupId !== q.groupId || this.localDeletes.has(q.groupId)) continue;
      void this.stopActor(q.vhost, q.name, true);
    }
  }

  /**
   * Propose a metadata command. A node that does not lead the metadata group forwards it to the
   * leader, then waits until its own replica has applied the change, so what follows here (an
   * actor started, a listing) sees it.
   */
  private async proposeMeta(command: MetadataCommand): Promise<MetadataReply> {
    try {
      return await this.metaLog.propose(command);
    } catch (error) {
      const cluster = this.cluster;
      const group = this.metaGroup;
      if (!(error instanceof NotLeaderError) || cluster === undefined || group === undefined) throw error;
      const reply = await cluster.forward(command, error.leader);
      try {
        await group.barrier(FORWARDED_APPLY_TIMEOUT_MS);
      } catch (cause) {
        throw new ConnectionError(
          Code.INTERNAL_ERROR,
          `metadata change committed, but this node did not catch up with it: ${String(cause)}`,
        );
      }
      return reply;
    }
  }

  /** Propose a metadata command; error replies become channel or connection errors. */
  private async runMeta(command: MetadataCommand): Promise<MetadataReply & { type: 'ok' }> {
    const reply = await this.proposeMeta(command);
    if (reply.type === 'error') {
      throw isConnectionError(reply.code)
        ? new ConnectionError(reply.code, reply.text)
        : new ChannelError(reply.code, reply.text);
    }
    return reply;
  }

  exchange(vhost: string, name: string): ExchangeRecord | undefined {
    return this.metadata.exchange(vhost, name);
  }

  async declareExchange(session: Session, m: ExchangeDeclare): Promise<void> {
    if (m.passive) {
      if (this.metadata.exchange(session.vhost, m.exchange) === undefined) {
        throw notFound(`no exchange '${m.exchange}' in vhost '${session.vhost}'`);
      }
      return;
    }
    this.checkPermission(session, 'configure', 'exchange', m.exchange);
    await this.runMeta({
      type: 'declareExchange',
      vhost: session.vhost,
      name: m.exchange,
      exchangeType: m.type,
      durable: m.durable,
      autoDelete: m.autoDelete,
      internal: m.internal,
      arguments: m.arguments ?? { entries: [] },
    });
    this.wakeDeadLetters(session.vhost);
  }

  async deleteExchange(session: Session, name: string, ifUnused: boolean): Promise<void> {
    this.checkPermission(session, 'configure', 'exchange', name);
    await this.runMeta({ type: 'deleteExchange', vhost: session.vhost, name, ifUnused });
  }

  async bind(
    session: Session,
    kind: 'queue' | 'exchange',
    destination: string,
    source: string,
    routingKey: string,
    args: FieldTable | null | undefined,
  ): Promise<void> {
    this.checkBindPermissions(session, kind, destination, source);
    if (kind === 'queue') this.checkExclusive(session, destination);
    await this.runMeta({
      type: 'bind',
      vhost: session.vhost,
      source,
      destinationKind: kind,
      destination,
      routingKey,
      arguments: args ?? { entries: [] },
      connectionId: session.connectionId,
    });
    this.wakeDeadLetters(session.vhost);
  }

  async unbind(
    session: Session,
    kind: 'queue' | 'exchange',
    destination: string,
    source: string,
    routingKey: string,
    args: FieldTable | null | undefined,
  ): Promise<void> {
    this.checkBindPermissions(session, kind, destination, source);
    await this.runMeta({
      type: 'unbind',
      vhost: session.vhost,
      source,
      destinationKind: kind,
      destination,
      routingKey,
      arguments: args ?? { entries: [] },
      connectionId: session.connectionId,
    });
  }

  private checkBindPermissions(
    session: Session,
    kind: 'queue' | 'exchange',
    destination: string,
    source: string,
  ): void {
    // RabbitMQ: write on the destination, read on the source exchange.
    this.checkPermission(session, 'write', kind, destination);
    this.checkPermission(session, 'read', 'exchange', source);
  }

  async declareQueue(session: Session, m: QueueDeclare): Promise<QueueDeclareOk> {
    const vhost = session.vhost;
    if (m.passive) {
      const actor = this.queueForUse(session, m.queue, undefined);
      actor.touch().catch(() => undefined);
      const counts = actor.counts();
      return { queue: m.queue, messageCount: counts.ready, consumerCount: counts.consumers };
    }
    const name = m.queue === '' ? this.generateName('amq.gen-') : m.queue;
    this.checkPermission(session, 'configure', 'queue', name);
    const args = m.arguments ?? { entries: [] };
    const parsed = queueConfigFromArguments(args, m.durable);
    if (!parsed.ok) throw new ChannelError(parsed.code, parsed.text);
    const existing = this.metadata.queue(vhost, name);
    if (existing !== undefined) this.checkExclusive(session, name);
    else if (parsed.config.deadLetterExchange !== undefined) {
      // RabbitMQ checks these when it creates a queue with `x-dead-letter-exchange` in its
      // arguments: read on the queue, write on the DLX (its copies are publishes there). A DLX
      // given by a policy is not checked (the policy's author is trusted, as in RabbitMQ).
      this.checkPermission(session, 'read', 'queue', name);
      this.checkPermission(session, 'write', 'exchange', parsed.config.deadLetterExchange);
    }
    const reply = await this.runMeta({
      type: 'declareQueue',
      vhost,
      name,
      durable: m.durable,
      exclusiveOwner: m.exclusive ? session.connectionId : undefined,
      autoDelete: m.autoDelete,
      arguments: args,
      groupId: `${vhost}/${name}/${randomUUID()}`,
      serverNamed: m.queue === '',
      ...(this.cluster !== undefined ? { node: this.cluster.nodeId } : {}),
    });
    let actor = this.actors.get(vhost)?.get(name);
    if (reply.created === true || actor === undefined) {
      const record = this.metadata.queue(vhost, name) as QueueRecord;
      if (!this.serves(record)) throw servedElsewhere(record);
      actor = await this.startActor(record, this.effectiveConfig(record).config);
      // The default exchange routes to it now: a hand-off to '' may have somewhere to go.
      this.wakeDeadLetters(vhost);
    } else {
      actor.touch().catch(() => undefined);
    }
    const counts = actor.counts();
    return { queue: name, messageCount: counts.ready, consumerCount: counts.consumers };
  }

  private async startActor(record: QueueRecord, config: QueueConfig): Promise<QueueActor> {
    const durable = record.durable && record.exclusiveOwner === undefined && this.storage !== undefined;
    const log =
      durable && this.storage !== undefined
        ? durableQueueLog(this.storage, record.groupId, { clock: this.clock, logger: this.logger })
        : new InMemoryLog<QueueCommand, QueueApplyResult>(record.groupId, { clock: this.clock });
    const actor = new QueueActor({
      vhost: record.vhost,
      name: record.name,
      groupId: record.groupId,
      log,
      bodyStore: durable && this.storage !== undefined ? this.storage.bodyStore : this.memoryBodyStore,
      config,
      clock: this.clock,
      logger: this.logger.child({ queue: record.name, vhost: record.vhost }),
      sinks: this.sinks,
      deliveryCountHeader: showsDeliveryCount(record.arguments),
    });
    let byName = this.actors.get(record.vhost);
    if (byName === undefined) {
      byName = new Map();
      this.actors.set(record.vhost, byName);
    }
    byName.set(record.name, actor);
    await actor.open();
    // The applied config is known now (replayed from the log, or the first entry of a fresh one).
    // Bring it in line with the policies, which may have changed while the queue was down (a
    // crash between a policy's commit and the queue's setConfig) or opening.
    this.proposedConfigs.delete(actor);
    await this.reconcileConfig(actor);
    return actor;
  }

  /** Stop a queue's actor after its metadata record is gone; `deleteData` also drops its messages. */
  private stopActor(vhost: string, name: string, deleteData: boolean): Promise<number> {
    const actor = this.actors.get(vhost)?.get(name);
    if (actor === undefined) return Promise.resolve(0);
    this.actors.get(vhost)?.delete(name);
    return deleteData ? actor.delete() : actor.close().then(() => 0);
  }

  async deleteQueue(session: Session, name: string, ifUnused: boolean, ifEmpty: boolean): Promise<number> {
    const vhost = session.vhost;
    const actor = this.actors.get(vhost)?.get(name);
    if (actor === undefined || this.metadata.queue(vhost, name) === undefined) {
      // RabbitMQ answers delete of a missing queue with delete-ok (message count 0).
      return 0;
    }
    this.checkPermission(session, 'configure', 'queue', name);
    this.checkExclusive(session, name);
    const counts = actor.counts();
    this.localDeletes.add(actor.groupId);
    try {
      await this.runMeta({
        type: 'deleteQueue',
        vhost,
        name,
        ifUnused,
        ifEmpty,
        consumers: counts.consumers,
        messages: counts.ready + counts.unacked,
        connectionId: session.connectionId,
        groupId: actor.groupId,
      });
    } finally {
      this.localDeletes.delete(actor.groupId);
    }
    return this.stopActor(vhost, name, true);
  }

  async purgeQueue(session: Session, name: string): Promise<number> {
    const actor = this.queueForUse(session, name, 'read');
    return actor.purge();
  }

  /**
   * The actor of a queue this session may use: 404 if missing, 405 if another connection's
   * exclusive queue, 403 without the permission.
   */
  queueForUse(session: Session, name: string, permission: Permission | undefined): QueueActor {
    const actor = this.actors.get(session.vhost)?.get(name);
    if (actor === undefined) {
      const record = this.metadata.queue(session.vhost, name);
      if (record !== undefined && !this.serves(record)) throw servedElsewhere(record);
      throw notFound(`no queue '${name}' in vhost '${session.vhost}'`);
    }
    this.checkExclusive(session, name);
    if (permission !== undefined) this.checkPermission(session, permission, 'queue', name);
    return actor;
  }

  private checkExclusive(session: Session, name: string): void {
    const record = this.metadata.queue(session.vhost, name);
    if (record === undefined) return;
    const locked = checkExclusiveAccess(record, session.connectionId);
    if (locked === undefined) return;
    // The owner is gone and its exclusive queues are being deleted: the queue no longer exists.
    if (record.exclusiveOwner !== undefined && !this.connections.has(record.exclusiveOwner)) {
      throw notFound(`no queue '${name}' in vhost '${session.vhost}'`);
    }
    throw new ChannelError(locked.code, locked.text);
  }

  /** A consumer left `queue`: an auto-delete queue with no consumers left is deleted. */
  consumerCancelled(queue: QueueActor): void {
    const record = this.metadata.queue(queue.vhost, queue.name);
    if (record === undefined || !record.autoDelete || queue.counts().consumers > 0) return;
    this.deleteInternally(queue, 'auto-delete queue lost its last consumer');
  }

  private onQueueExpired(queue: QueueActor): void {
    this.deleteInternally(queue, 'queue expired (x-expires)');
  }

  private deleteInternally(queue: QueueActor, why: string): void {
    if (this.actors.get(queue.vhost)?.get(queue.name) !== queue) return;
    this.logger.info({ queue: queue.name, vhost: queue.vhost }, `deleting queue: ${why}`);
    this.runMeta({
      type: 'deleteQueue',
      vhost: queue.vhost,
      name: queue.name,
      ifUnused: false,
      ifEmpty: false,
      consumers: 0,
      messages: 0,
      groupId: queue.groupId,
    })
      .then(() => this.stopActor(queue.vhost, queue.name, true))
      .catch((err: unknown) => this.logger.warn({ err, queue: queue.name }, 'internal queue delete failed'));
  }

  /**
   * Where a dead-lettered copy goes (the queue actors' sink): the router's answer for the DLX;
   * `no-exchange`; or `unavailable` when a queue it routes to has no running actor yet (recovery
   * starts actors one by one, a declare records the queue before its actor opens): the hand-off
   * then waits rather than reach only some of its targets. The copy's keys are complete (routing
   * key or DLK, CC, BCC): nothing is derived from its headers but a headers exchange's match.
   */
  private routeDeadLetter(
    vhost: string,
    exchange: string,
    routingKeys: readonly string[],
    headers: FieldTable | undefined,
  ): DeadLetterRoute {
    if (this.metadata.exchange(vhost, exchange) === undefined) return 'no-exchange';
    const names = route(this.metadata, vhost, exchange, routingKeys, headers);
    const byName = this.actors.get(vhost);
    const targets: QueueActor[] = [];
    for (const name of names) {
      const actor = byName?.get(name);
      if (actor === undefined) return 'unavailable';
      targets.push(actor);
    }
    return targets;
  }

  /**
   * A new exchange, binding or queue may give waiting dead-letter hand-offs somewhere to go: wake
   * every queue of `vhost` that has some (they otherwise retry within 5 s).
   */
  private wakeDeadLetters(vhost: string): void {
    const byName = this.actors.get(vhost);
    if (byName === undefined) return;
    for (const actor of byName.values()) if (actor.hasPendingDeadLetters()) actor.wakeDeadLetters();
  }

  // ------------------------------------------------------------------------------ publishing

  /**
   * Whether the last `route()` reached a queue this node does not serve (one declared on another
   * node of the cluster): the publish did not reach every queue, so a confirm must be a nack.
   * Read right after `route()` (a flag rather than a result object keeps the publish path free of
   * allocations).
   */
  lastRouteUnserved = false;

  /** The queues a publish reaches. `keys` = routing key plus CC and BCC keys. */
  route(
    vhost: string,
    exchange: string,
    keys: readonly string[],
    headers: FieldTable | undefined,
  ): QueueActor[] {
    const names = route(this.metadata, vhost, exchange, keys, headers);
    const byName = this.actors.get(vhost);
    const targets: QueueActor[] = [];
    this.lastRouteUnserved = false;
    for (const name of names) {
      const actor = byName?.get(name);
      if (actor !== undefined) targets.push(actor);
      else if (this.metadata.queue(vhost, name) !== undefined) this.lastRouteUnserved = true;
    }
    return targets;
  }

  /** Validate a per-message `expiration`; 406 PRECONDITION_FAILED when invalid. */
  parseExpiration(expiration: string): number {
    const result = validateExpiration(expiration);
    if (typeof result === 'number') return result;
    throw new ChannelError(result.code, result.text);
  }

  /**
   * The properties a consumer sees for a stored message: with `x-delivery-count` (how many times it
   * came back before this delivery) when the queue was declared `x-queue-type: quorum`.
   */
  deliveryProperties(queue: QueueActor, message: StoredMessage, deliveryCount: number): BasicProperties {
    return queue.deliveryCountHeader
      ? withDeliveryCount(message.properties, deliveryCount)
      : message.properties;
  }

  generateName(prefix: string): string {
    return `${prefix}${randomBytes(16).toString('base64url')}`;
  }

  // ------------------------------------------------------------------------------ management

  /**
   * The metadata store, for management reads (vhosts, users, permissions, exchanges, bindings,
   * queues, policies). Read only: changes go through `manage` so their consequences follow.
   */
  get metadataView(): MetadataMachine {
    return this.metadata;
  }

  /** The actor of a queue on this node (counts, consumers, config, removal totals), if running. */
  queueActor(vhost: string, name: string): QueueActor | undefined {
    return this.actors.get(vhost)?.get(name);
  }

  /** A queue's effective configuration: its arguments merged with the policy that applies to it. */
  effectiveConfig(record: QueueRecord): EffectiveQueueConfig {
    return effectiveQueueConfig(record, this.metadata.policyFor(record.vhost, 'queue', record.name));
  }

  /** Open client connections on this node. */
  connectionCount(): number {
    return this.connections.size;
  }

  /** Whether `user` may only log in from a loopback address (RabbitMQ's `loopback_users`). */
  isLoopbackOnly(user: string): boolean {
    return this.loopbackUsers.has(user);
  }

  /**
   * Propose a management command (vhosts, users, permissions, policies) and, once it commits,
   * carry out its consequences before resolving: the actors of deleted queues are stopped and
   * their messages dropped; cached permission checks are invalidated; after a policy change every
   * queue of the vhost whose effective config changed gets a `setConfig` in its log (committed
   * when this resolves). Error replies are returned, not thrown.
   */
  async manage(command: MetadataCommand): Promise<MetadataReply> {
    const reply = await this.proposeMeta(command);
    if (reply.type === 'error') return reply;
    switch (command.type) {
      case 'setPolicy':
      case 'clearPolicy':
        await this.applyPolicies(command.vhost);
        break;
    }
    await Promise.allSettled(reply.deletedQueues.map((q) => this.stopActor(q.vhost, q.name, true)));
    return reply;
  }

  /** Propose a new config to every queue of `vhost` whose effective config changed. */
  private async applyPolicies(vhost: string): Promise<void> {
    const byName = this.actors.get(vhost);
    if (byName === undefined) return;
    await Promise.allSettled(Array.from(byName.values(), (actor) => this.reconcileConfig(actor)));
    // A new dead-letter exchange may be routable at once.
    this.wakeDeadLetters(vhost);
  }

  /** Propose `setConfig` when the queue's effective config differs from the last one proposed. */
  private async reconcileConfig(actor: QueueActor): Promise<void> {
    const record = this.metadata.queue(actor.vhost, actor.name);
    if (record === undefined || record.groupId !== actor.groupId) return;
    const { config } = this.effectiveConfig(record);
    if (sameQueueConfig(this.proposedConfigs.get(actor) ?? actor.config(), config)) return;
    this.proposedConfigs.set(actor, config);
    try {
      await actor.setConfig(config);
    } catch (err) {
      // Not in the log: compare against the applied config next time, so a later change retries.
      this.proposedConfigs.delete(actor);
      this.logger.warn(
        { err, queue: actor.name, vhost: actor.vhost },
        'failed to propose a new queue config',
      );
    }
  }

  // ------------------------------------------------------------------------------ lifecycle

  /** Close every connection (320 CONNECTION_FORCED) and stop every queue actor. */
  async shutdown(): Promise<void> {
    if (this.memoryTimer !== undefined) clearInterval(this.memoryTimer);
    for (const connection of [...this.connections.values()]) connection.forceClose('broker shutting down');
    const closing: Promise<void>[] = [];
    for (const byName of this.actors.values())
      for (const actor of byName.values()) closing.push(actor.close());
    await Promise.allSettled(closing);
    await this.metaLog.close();
  }

  /**
   * After a restart: what lived only in memory is gone, so its metadata goes too (non-durable and
   * exclusive queues, non-durable exchanges — as RabbitMQ does), and every durable queue's actor
   * comes back from its snapshot + log. Messages that were checked out to channels of the previous
   * run return to ready, marked redelivered, when the actor finds their owners gone.
   */
  /**
   * Whether this node runs the queue's actor: the queue was declared here (or before clustering,
   * when every queue was the node's own).
   */
  private serves(record: QueueRecord): boolean {
    return record.node === undefined || record.node === this.cluster?.nodeId;
  }

  private async recover(): Promise<void> {
    const started = performance.now();
    for (const q of this.metadata.queues()) {
      if (q.durable && q.exclusiveOwner === undefined) continue;
      // Another node's queues are that node's to recover (it drops its own non-durable ones).
      if (!this.serves(q)) continue;
      await this.runMeta({
        type: 'deleteQueue',
        vhost: q.vhost,
        name: q.name,
        ifUnused: false,
        ifEmpty: false,
        consumers: 0,
        messages: 0,
        groupId: q.groupId,
      });
    }
    // Non-durable exchanges go with a restart of the node alone; in a cluster other nodes may
    // still be using them.
    const vhosts = this.cluster === undefined ? this.metadata.vhosts() : [];
    for (const v of vhosts) {
      for (const e of this.metadata.exchanges(v.name)) {
        if (e.durable || e.name === '' || e.name.startsWith('amq.')) continue;
        await this.runMeta({ type: 'deleteExchange', vhost: v.name, name: e.name, ifUnused: false });
      }
    }
    let queues = 0;
    let messages = 0;
    for (const record of this.metadata.queues()) {
      if (!this.serves(record)) continue;
      const actor = await this.startActor(record, this.effectiveConfig(record).config);
      queues += 1;
      messages += actor.counts().ready + actor.counts().unacked;
    }
    this.logger.info(
      { queues, messages, ms: Math.round(performance.now() - started) },
      'recovered durable queues',
    );
  }
}
