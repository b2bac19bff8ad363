import { randomBytes, randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import type { BasicProperties, FieldTable } from '@styx/client/wire';
import { isConnectionError, ReplyCode } from '@styx/client/wire';
import type { Clock, EntryMeta, RaftGroupLog, ReplicatedLog, StateMachine } from '@styx/raft';
import { InMemoryLog, NotLeaderError, systemClock } from '@styx/raft';
import { QUEUE_FOUNDERS_FLAG } from '../cluster/feature-flags.ts';
import {
  countLoad,
  INITIAL_GROUP_SIZE_ARG,
  placeReplicas,
  QuorumGroupSizeError,
} from '../cluster/placement.ts';
import { accessRefused, ChannelError, Code, ConnectionError, notFound } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import { metadataCommandCodec } from '../metadata/command-codec.ts';
import type { EffectiveQueueConfig } from '../metadata/effective-config.ts';
import { effectiveQueueConfig } from '../metadata/effective-config.ts';
import type { MetadataListener } from '../metadata/metadata-group.ts';
import type {
  ExchangeRecord,
  MetadataCommand,
  MetadataReply,
  QueueRecord,
} from '../metadata/metadata-machine.ts';
import { bootstrapCommands, MetadataMachine } from '../metadata/metadata-machine.ts';
import { commandPatternProblem } from '../metadata/name-pattern.ts';
import { hashPassword } from '../metadata/passwords.ts';
import { canAccess } from '../metadata/permissions.ts';
import {
  integerArgument,
  queueConfigFromArguments,
  validateExpiration,
} from '../metadata/queue-arguments.ts';
import { checkExclusiveAccess, error as metadataError } from '../metadata/replies.ts';
import type { PasswordVerifier } from '../metadata/verified-logins.ts';
import { VerifiedLogins } from '../metadata/verified-logins.ts';
import { BrokerCounters } from '../metrics/broker-counters.ts';
import type { NodeMetricsSource } from '../metrics/metrics-source.ts';
import type { DeadLetterRoute } from '../queue/dead-letter-route.ts';
import { DeadLetterTimings } from '../queue/dead-letter-timings.ts';
import { withDeliveryCount } from '../queue/delivery-count-header.ts';
import type { OwnerSink, QueueActor } from '../queue/queue-actor.ts';
import { QueueFlowCounters } from '../queue/queue-flow-counters.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { StoredMessage } from '../queue/types.ts';
import { route } from '../router/route.ts';
import { DEFAULT_MAX_MESSAGE_SIZE } from '../session/message-size.ts';
import { withCompaction } from '../storage/compaction-policy.ts';
import type { NodeStorage } from '../storage/node-storage.ts';
import { raftHostOf } from '../storage/raft-groups.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import type { ClientChannel } from './client-connection.ts';
import { ClusterQueueDirectory } from './cluster-queue-directory.ts';
import { ClusterQueues } from './cluster-queues.ts';
import { ConnectionDirectory } from './connection-directory.ts';
import { ConnectionGate } from './connection-gate.ts';
import { DEFAULT_DISK_FREE_LIMIT_BYTES } from './disk-free-limit.ts';
import { LocalQueueDirectory } from './local-queue-directory.ts';
import { MetadataCatchUp } from './metadata-catch-up.ts';
import { NodeListeners } from './node-listeners.ts';
import { NodeMaintenance } from './node-maintenance.ts';
import { PlacementLoad } from './placement-load.ts';
import { QueueActors } from './queue-actors.ts';
import { QueueBrowser } from './queue-browse.ts';
import { QueueChecks } from './queue-checks.ts';
import type { QueueDirectory } from './queue-directory.ts';
import { QueueReplicaOperations } from './queue-replica-ops.ts';
import type { NodeResourceFigures } from './resource-alarms.ts';
import { ResourceAlarms } from './resource-alarms.ts';
import { ResourceMonitor } from './resource-monitor.ts';
import type { Session } from './session.ts';

/** Styx's version, as the server properties and `rabbitmq_build_info` report it. */
export const STYX_VERSION = '0.1.0';

/** The cluster name metrics report when the operator set none (the same on every node). */
export const DEFAULT_CLUSTER_NAME = 'styx';

/** Who is acting (session.ts); re-exported here, where callers of the broker look for it. */
export type { Session } from './session.ts';

export type Permission = 'configure' | 'write' | 'read';

/** An exchange to declare (exchange.declare, a definitions import, the management API). */
export interface ExchangeDeclareArgs {
  readonly exchange: string;
  readonly type: string;
  /** Only check that it exists (404 otherwise). */
  readonly passive: boolean;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly arguments?: FieldTable | undefined;
}

/** A queue to declare; an empty `queue` asks for a generated name. */
export interface QueueDeclareArgs {
  readonly queue: string;
  /** Only check that it exists (404 otherwise) and count it. */
  readonly passive: boolean;
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  readonly arguments?: FieldTable | undefined;
}

/** A declared queue: its name (generated if asked) and its counts. */
export interface QueueDeclared {
  readonly queue: string;
  readonly messageCount: number;
  readonly consumerCount: number;
}

/** What `Broker.route` found for a publish. */
export interface RouteResult {
  /** The queues that take the message. */
  readonly targets: readonly QueueHandle[];
  /** Some queue it routes to is not served by this node: it does not get the message. */
  readonly unserved: boolean;
}

export interface BrokerOptions {
  /** Unique name of this node, used in connection ids and generated names. */
  readonly nodeName: string;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Resident memory above which publishers are throttled, bytes; 0 disables the check. */
  readonly memoryBudgetBytes: number;
  /**
   * Free bytes on the data directory's filesystem below which the disk alarm blocks publishers
   * (`disk_free_limit`); default `DEFAULT_DISK_FREE_LIMIT_BYTES` (50 MB). Watched only with `storage`.
   */
  readonly diskFreeLimitBytes?: number;
  /**
   * The largest message body a client may publish, bytes (`max_message_size`); default
   * `DEFAULT_MAX_MESSAGE_SIZE` (16 MiB, as RabbitMQ 4). Checked by the channel core.
   */
  readonly maxMessageSize?: number;
  /** The user created on a fresh node (RabbitMQ's guest/guest). */
  readonly defaultUser?: { readonly name: string; readonly password: string };
  /** Users that may only connect from a loopback address (RabbitMQ's `loopback_users`). */
  readonly loopbackUsers?: readonly string[];
  /** The verified-login cache's password check (scrypt); a test substitutes one to count calls. */
  readonly verifyPassword?: PasswordVerifier;
  /**
   * The cluster's name in metrics (`rabbitmq_cluster` of `rabbitmq_identity_info`, which RabbitMQ's
   * dashboards group nodes by); the same on every member. `DEFAULT_CLUSTER_NAME` when not given.
   */
  readonly clusterName?: string;
  /**
   * The node's durable storage. With it, the metadata and every durable queue run on single-voter
   * logs in LMDB and survive restarts; without it (embedded use, tests) everything is in memory.
   */
  readonly storage?: NodeStorage;
  /** The cluster this node belongs to (requires `storage`); absent for a node on its own. */
  readonly cluster?: BrokerCluster;
}

/** How long a node waits for its replica to catch up with a metadata change it forwarded, ms. */
const FORWARDED_APPLY_TIMEOUT_MS = 10_000;

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
  /** What this node's queue leaders applied since it started (metrics' node totals). */
  readonly flowTotals = new QueueFlowCounters();
  /** How long this node's queue leaders took over each stage of dead-lettering (metrics). */
  readonly deadLetterTimings = new DeadLetterTimings();
  /** What this node's clients published, were delivered and acked; connection churn (metrics). */
  readonly counters = new BrokerCounters();
  private readonly clock: Clock;
  private readonly options: BrokerOptions;
  private readonly metadata = new MetadataMachine();
  private readonly metaLog: ReplicatedLog<MetadataCommand, MetadataReply>;
  /** The metadata's Raft replica (with durable storage), for the cluster layer. */
  private readonly metaGroup: RaftGroupLog<MetadataCommand, MetadataReply> | undefined;
  private readonly cluster: BrokerCluster | undefined;
  /** Read-index before "not found": what another node declared is visible here too (read-your-writes). */
  private readonly metaCatchUp: MetadataCatchUp;
  private readonly appliedListeners = new Set<MetadataListener>();
  /** Queue incarnations this node is deleting itself (it reports their message counts). */
  private readonly localDeletes = new Set<string>();
  /** The queue actors running here (the replicas held here, in a cluster). */
  private readonly actors: QueueActors;
  /**
   * Who may connect, and the client connections open here of any protocol (transports come
   * through it: connection-gate.ts).
   */
  readonly gate: ConnectionGate;
  /** How this node reaches its queues, whether it is alone or in a cluster. */
  private readonly queues: QueueDirectory;
  /** The consistency check of replicated queues (`styx ctl check_queue`). */
  readonly queueChecks: QueueChecks;
  /** Reading a queue's messages without taking them, on its leader (the dead-letter inspector). */
  readonly queueBrowser: QueueBrowser;
  /** The operators' verbs on queue replicas (`styx ctl add_member`, `grow`, `rebalance`...). */
  readonly replicaOps: QueueReplicaOperations;
  /** Members' replica and leader counts for placing new queues (see placement-load.ts). */
  private readonly placementLoad: PlacementLoad;
  /** Maintenance mode here (`styx ctl drain` / `revive`): leaderships handed over, clients refused. */
  readonly maintenance: NodeMaintenance;
  /** Every member's client connections, listed and closed by operators (connection-directory.ts). */
  readonly connectionDirectory: ConnectionDirectory;
  /** A different value each time the node starts: connection ids never repeat across restarts. */
  readonly runId: string;
  /**
   * Logins whose password was verified, shared by every login path (client connections here, the
   * management API's basic auth and console): see metadata/verified-logins.ts. Evicted per user on
   * each applied user change, and cleared when a snapshot replaces the metadata.
   */
  readonly logins: VerifiedLogins;
  private readonly storage: NodeStorage | undefined;
  private readonly loopbackUsers: ReadonlySet<string>;
  /** Memory and free disk space against their limits: raises this node's alarms. */
  readonly resources: ResourceMonitor;
  /** The alarms in effect in the cluster (this node's and the members'): publishers are blocked by any. */
  readonly alarms: ResourceAlarms;
  /** The node's active listeners (client, management, cluster ports), for the listener health checks. */
  readonly listeners = new NodeListeners();

  /** Resident memory above which publishers are blocked, bytes; 0 when unlimited. */
  /** The largest message body a client may publish, bytes (`max_message_size`). */
  get maxMessageSize(): number {
    return this.options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
  }

  get memoryBudgetBytes(): number {
    return this.options.memoryBudgetBytes;
  }

  /** Whether this node is over its memory budget (its memory alarm is in effect). */
  get isMemoryBlocked(): boolean {
    return this.resources.memoryAlarm;
  }

  /**
   * Why publishers are blocked now — an alarm in effect on this node or on any member — or
   * undefined when they are not (the connection.blocked reason).
   */
  get publishBlockReason(): string | undefined {
    return this.alarms.blockReason();
  }

  private constructor(options: BrokerOptions) {
    this.options = options;
    this.nodeName = options.nodeName;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.loopbackUsers = new Set(options.loopbackUsers ?? ['guest']);
    this.logins = new VerifiedLogins(
      options.verifyPassword === undefined ? {} : { verify: options.verifyPassword },
    );
    this.gate = new ConnectionGate({
      logger: this.logger,
      metadata: this.metadata,
      logins: this.logins,
      loopbackUsers: this.loopbackUsers,
      counters: this.counters,
      checkAcceptsClients: () => this.maintenance.checkAcceptsClients(),
      publishBlockReason: () => this.publishBlockReason,
      released: (connectionId) => this.releaseExclusiveQueues(connectionId),
    });
    this.storage = options.storage;
    this.cluster = options.cluster;
    // A clustered node's run id is its incarnation: peers that see it change know it restarted.
    this.runId = options.cluster?.incarnation ?? randomBytes(4).toString('base64url');
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
    this.metaCatchUp = new MetadataCatchUp({
      group: () => (this.cluster === undefined ? undefined : this.metaGroup),
      logger: this.logger,
    });
    const clusterQueues =
      this.cluster === undefined
        ? undefined
        : new ClusterQueues(
            {
              metadata: this.metadata,
              logger: this.logger,
              replica: (groupId) => this.actors.replicaOf(groupId),
              replicas: () => this.actors.replicas(),
              localChannel: (owner) => this.localChannel(owner),
              reassertConsumers: () => this.reassertConsumers(),
              startReplica: (record, start) => this.actors.startReplica(record, start),
              dropReplica: (record) => this.actors.dropReplica(record),
            },
            this.cluster,
          );
    this.actors = new QueueActors({
      metadata: this.metadata,
      logger: this.logger,
      clock: this.clock,
      storage: this.storage,
      cluster: this.cluster,
      clusterQueues,
      sinks: {
        resolveOwner: (owner: string): OwnerSink | undefined => this.resolveOwner(owner),
        routeDeadLetter: (vhost, exchange, routingKeys, headers): DeadLetterRoute =>
          this.routeDeadLetter(vhost, exchange, routingKeys, headers),
        onQueueExpired: (queue: QueueActor): void => this.onQueueExpired(queue),
      },
      effectiveConfig: (record) => this.effectiveConfig(record),
      nodeFlow: this.flowTotals,
      deadLetterTimings: this.deadLetterTimings,
    });
    // The one place that knows whether this node is alone: every queue operation goes through this.
    this.queues =
      clusterQueues === undefined
        ? new LocalQueueDirectory({
            nodeId: this.nodeId(),
            metadata: this.metadata,
            logger: this.logger,
            actors: this.actors,
            localDeletes: this.localDeletes,
            effectiveConfig: (record) => this.effectiveConfig(record),
            localChannel: (owner) => this.localChannel(owner),
            wakeDeadLetters: (vhost) => this.wakeDeadLetters(vhost),
          })
        : new ClusterQueueDirectory({
            nodeId: this.nodeId(),
            metadata: this.metadata,
            logger: this.logger,
            actors: this.actors,
            clusterQueues,
            wakeDeadLetters: (vhost) => this.wakeDeadLetters(vhost),
            scheduleRebalance: () => this.replicaOps.scheduleRebalance(),
          });
    this.replicaOps = new QueueReplicaOperations({
      metadata: this.metadata,
      logger: this.logger,
      cluster: this.cluster,
      clusterQueues,
      leadsMetadata: () => this.metaGroup?.role === 'leader',
      runMeta: (command) => this.runMeta(command),
    });
    this.placementLoad = new PlacementLoad(() => countLoad(this.replicaOps.assignment()));
    this.queueChecks = new QueueChecks({
      selfId: this.nodeId(),
      selfName: this.nodeName,
      metadata: this.metadata,
      logger: this.logger,
      bodyStore: this.storage?.bodyStore,
      membersOf: (record) => this.queues.membersOf(record),
      replica: (groupId) => this.actors.replicaOf(groupId),
      group: (groupId) => this.queues.group(groupId),
      cluster: this.cluster,
    });
    this.queueBrowser = new QueueBrowser({
      selfId: this.nodeId(),
      logger: this.logger,
      replica: (groupId) => this.actors.replicaOf(groupId),
      membersOf: (record) => this.queues.membersOf(record),
      leaderHint: (record) => this.queues.leaderHint(record),
      cluster: this.cluster,
    });
    this.connectionDirectory = new ConnectionDirectory({
      selfId: this.nodeId(),
      selfName: this.nodeName,
      logger: this.logger,
      local: () => this.gate.list(),
      members: () => {
        const nodes = this.cluster === undefined ? [] : this.metadata.clusterNodes();
        if (nodes.length === 0) return [{ id: this.nodeId(), name: this.nodeName }];
        return nodes.map((n) => ({ id: n.id, name: n.name }));
      },
      cluster: this.cluster,
    });
    this.maintenance = new NodeMaintenance({
      selfId: this.nodeId(),
      selfName: this.nodeName,
      metadata: this.metadata,
      logger: this.logger,
      replicas: () => this.actors.replicas(),
      queueGroup: (groupId) => this.queues.group(groupId),
      metadataGroup: this.cluster === undefined ? undefined : this.metaGroup,
      closeClients: (reason) => {
        const open = this.gate.list();
        // Gracefully: each publisher learns exactly which publishes to send again elsewhere.
        for (const connection of open) void connection.closeGracefully(reason);
        return open.length;
      },
    });
    // Maintenance mode follows the metadata (drain, revive; replayed when the node restarts).
    this.appliedListeners.add(() => this.maintenance.refresh());
    // A member back from a partition may have given up this node's consumers: register them again.
    // And a member back (or new) should lead its share of the queues again.
    this.cluster?.onNodeUp(() => {
      this.reassertConsumers();
      this.replicaOps.scheduleRebalance();
    });
    this.resources = new ResourceMonitor({
      logger: this.logger,
      memoryBudgetBytes: options.memoryBudgetBytes,
      dataDir: this.storage === undefined ? undefined : dirname(this.storage.path),
      diskFreeLimitBytes: options.diskFreeLimitBytes ?? DEFAULT_DISK_FREE_LIMIT_BYTES,
      onAlarm: (resource, raised) => this.alarms.setLocal(resource, raised),
    });
    this.alarms = new ResourceAlarms({
      selfId: this.nodeId(),
      logger: this.logger,
      cluster: this.cluster,
      members: () => this.metadata.clusterNodes().map((node) => node.id),
      figures: () => this.resourceFigures(),
      nameOf: (id) => this.metadata.clusterNodes().find((node) => node.id === id)?.name ?? id,
    });
    // Any alarm in the cluster blocks this node's publishers; the last one cleared unblocks them.
    this.alarms.onChange(() => this.gate.alarmsChanged());
    this.serverProperties = {
      entries: [
        { key: 'product', value: { longStr: 'Styx' } },
        { key: 'version', value: { longStr: STYX_VERSION } },
        { key: 'cluster_name', value: { longStr: options.nodeName } },
        { key: 'platform', value: { longStr: `Node.js ${process.version}` } },
        // Not in RabbitMQ's connection.start, which has no word for it: clients may read it here.
        { key: 'max_message_size', value: { i64: options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE } },
      ],
    };
  }

  /** Open the metadata store (bootstrapping a fresh node) and start the resource monitor. */
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
    await broker.resources.start();
    broker.alarms.start();
    return broker;
  }

  // ------------------------------------------------------------------------------ connections

  /** Exclusive queues die with their connection. */
  private releaseExclusiveQueues(connectionId: string): void {
    this.runMeta({ type: 'deleteExclusive', connectionId })
      .then((reply) => {
        this.counters.queuesDeleted += reply.deletedQueues.length;
        for (const q of reply.deletedQueues) void this.actors.stop(q.vhost, q.name, true);
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'failed to delete exclusive queues'));
  }

  private resolveOwner(owner: string): OwnerSink | undefined {
    return this.queues.resolveOwner(owner);
  }

  /**
   * Every open channel registers its consumers again: a no-op for a queue that kept them, the way
   * back for one whose leader gave them up while it counted this node down.
   */
  private reassertConsumers(): void {
    for (const channel of this.gate.connections.openChannels()) channel.reassertConsumers();
  }

  /** The open channel of this node with owner id `owner` (`${connectionId}/${channel}`). */
  private localChannel(owner: string): ClientChannel | undefined {
    return this.gate.connections.channel(owner);
  }

  /** This node's figures as `/api/nodes` names them (and as its resource report carries them). */
  resourceFigures(): NodeResourceFigures {
    const descriptors = this.resources.resources;
    return {
      mem_used: process.memoryUsage.rss(),
      mem_limit: this.options.memoryBudgetBytes,
      disk_free: this.resources.diskFreeBytes ?? null,
      disk_free_limit: this.resources.diskFreeLimitBytes ?? null,
      fd_used: descriptors.openFds ?? null,
      fd_total: descriptors.maxFds ?? null,
      sockets_used: this.gate.connections.size,
      // Sockets are descriptors: Styx sets no limit of their own (RabbitMQ's is the descriptor limit's).
      sockets_total: descriptors.maxFds ?? null,
    };
  }

  // ------------------------------------------------------------------------------ permissions

  checkPermission(session: Session, permission: Permission, kind: 'exchange' | 'queue', name: string): void {
    if (session.trusted === true) return;
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
        this.logins.clear();
        // A snapshot from the leader replaced everything at once (a lagging or joining node).
        this.permissionEpoch++;
        this.queues.metadataRestored();
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
        this.logins.forgetUser(command.name);
        this.permissionEpoch++;
        // Every node applies this, so each closes its own: the closes are cluster-wide.
        if (command.type === 'deleteUser') {
          const name = command.name;
          this.gate.closeWhere((c) => c.session.user === name, `user '${name}' deleted`);
        }
        break;
      case 'setPermissions':
      case 'clearPermissions':
      case 'deleteVhost':
        this.permissionEpoch++;
        // Every node applies this, so each closes its own: the closes are cluster-wide.
        if (command.type === 'deleteVhost') {
          const name = command.name;
          this.gate.closeWhere((c) => c.session.vhost === name, `vhost '${name}' deleted`);
        }
        break;
      case 'setPolicy':
      case 'clearPolicy':
        if (this.cluster !== undefined) void this.applyPolicies(command.vhost);
        break;
    }
    for (const q of reply.deletedQueues) {
      const actor = this.actors.get(q.vhost, q.name);
      if (actor === undefined || actor.groupId !== q.groupId || this.localDeletes.has(q.groupId)) continue;
      void this.actors.stop(q.vhost, q.name, true);
    }
    this.queues.metadataApplied(command, reply);
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

  /**
   * Undefined when exchange `name` is known here (or this node is alone); else resolves once this
   * node's metadata replica caught up with every change committed before the call, as the
   * metadata leader confirmed it (read-index), or after the bound on that wait: look again then.
   */
  catchUpForExchange(vhost: string, name: string): Promise<void> | undefined {
    return this.metaCatchUp.catchUpUnless(
      this.metadata.exchange(vhost, name) !== undefined,
      () => `exchange '${name}' in vhost '${vhost}'`,
    );
  }

  /**
   * Before a mandatory publish through exchange `name` is returned as unroutable: resolves once
   * this node caught up (undefined when it is alone), so a binding made on another node before the
   * publish routes it. Routing otherwise reads this node's bindings as they are (see
   * docs/operations.md, "What a client sees across nodes").
   */
  catchUpForRoute(vhost: string, name: string): Promise<void> | undefined {
    return this.catchUpBeforeNotFound(() => `a route from exchange '${name}' in vhost '${vhost}'`);
  }

  /** Before answering that `what()` does not exist: `catchUpForExchange` for anything else. */
  catchUpBeforeNotFound(what: () => string): Promise<void> | undefined {
    return this.metaCatchUp.catchUpUnless(false, what);
  }

  /** `catchUpForExchange` for queue `name`. */
  catchUpForQueue(vhost: string, name: string): Promise<void> | undefined {
    return this.metaCatchUp.catchUpUnless(
      this.metadata.queue(vhost, name) !== undefined,
      () => `queue '${name}' in vhost '${vhost}'`,
    );
  }

  async declareExchange(session: Session, m: ExchangeDeclareArgs): Promise<void> {
    if (m.passive) {
      await this.catchUpForExchange(session.vhost, m.exchange);
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

  async declareQueue(session: Session, m: QueueDeclareArgs): Promise<QueueDeclared> {
    const vhost = session.vhost;
    if (m.passive) {
      await this.catchUpForQueue(vhost, m.queue);
      const queue = this.queueForUse(session, m.queue, undefined);
      queue.touch().catch(() => undefined);
      const counts = await this.queues.leaderCounts(queue);
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
      ...(this.cluster !== undefined
        ? this.clusterPlacement(existing === undefined, vhost, name, m, args)
        : {}),
    });
    if (reply.created === true) this.counters.queuesCreated++;
    const record = this.metadata.queue(vhost, name) as QueueRecord;
    const counts = await this.queues.declared(record, reply.created === true);
    return { queue: name, messageCount: counts.ready, consumerCount: counts.consumers };
  }

  /**
   * Where a declared queue lives in the cluster: the declaring node, and for a new queue its
   * replicas; a new replicated queue's group is founded with all of them (`QueueRecord.founders`)
   * once every member's build knows founders.
   */
  private clusterPlacement(
    isNew: boolean,
    vhost: string,
    name: string,
    m: { durable: boolean; exclusive: boolean },
    args: FieldTable,
  ): { node: string; members?: string[]; founders?: string[] } {
    const cluster = this.cluster as BrokerCluster;
    if (!isNew) return { node: cluster.nodeId };
    const members = this.placeMembers(vhost, name, m.durable && !m.exclusive, args);
    const founded = members.length > 1 && cluster.featureFlags.isEnabled(QUEUE_FOUNDERS_FLAG);
    return { node: cluster.nodeId, members, ...(founded ? { founders: members } : {}) };
  }

  /** This node's id in the cluster (its node name alone). */
  private nodeId(): string {
    return this.cluster?.nodeId ?? this.nodeName;
  }

  /**
   * The replicas of a new queue: this node first (it creates the group and leads it, as RabbitMQ's
   * default `client-local` leader locator does), then the members `placeReplicas` picks to spread
   * the load. Non-durable and exclusive queues live on this node alone.
   */
  private placeMembers(vhost: string, name: string, replicated: boolean, args: FieldTable): string[] {
    const self = this.nodeId();
    if (!replicated) return [self];
    const size = integerArgument(args, INITIAL_GROUP_SIZE_ARG);
    const cluster = this.cluster;
    const members = this.metadata.clusterNodes().map((n) => ({ id: n.id, online: !cluster?.isDown(n.id) }));
    if (!members.some((m) => m.id === self)) members.push({ id: self, online: true });
    let replicas: readonly string[];
    try {
      replicas = placeReplicas({
        queue: { vhost, name },
        members,
        load: this.placementLoad.current(),
        ...(size === undefined ? {} : { size }),
      }).replicas;
    } catch (error) {
      if (error instanceof QuorumGroupSizeError)
        throw new ChannelError(Code.PRECONDITION_FAILED, error.message);
      throw error;
    }
    const placed = [self, ...replicas.filter((id) => id !== self)].slice(0, replicas.length);
    this.placementLoad.placed(placed, self);
    return placed;
  }

  async deleteQueue(session: Session, name: string, ifUnused: boolean, ifEmpty: boolean): Promise<number> {
    const vhost = session.vhost;
    // A queue declared on another node a moment ago is deleted, not answered as already gone.
    await this.catchUpForQueue(vhost, name);
    const record = this.metadata.queue(vhost, name);
    const queue = record === undefined ? undefined : this.queues.handle(record);
    // RabbitMQ answers delete of a missing queue with delete-ok (message count 0).
    if (queue === undefined) return 0;
    this.checkPermission(session, 'configure', 'queue', name);
    this.checkExclusive(session, name);
    const counts = await this.queues.leaderCounts(queue);
    return this.queues.delete(queue, counts, async () => {
      await this.runMeta({
        type: 'deleteQueue',
        vhost,
        name,
        ifUnused,
        ifEmpty,
        consumers: counts.consumers,
        messages: counts.ready + counts.unacked,
        connectionId: session.connectionId,
        groupId: queue.groupId,
      });
      this.counters.queuesDeleted++;
    });
  }

  async purgeQueue(session: Session, name: string): Promise<number> {
    await this.catchUpForQueue(session.vhost, name);
    const actor = this.queueForUse(session, name, 'read');
    return actor.purge();
  }

  /**
   * The actor of a queue this session may use: 404 if missing, 405 if another connection's
   * exclusive queue, 403 without the permission.
   */
  queueForUse(session: Session, name: string, permission: Permission | undefined): QueueHandle {
    const record = this.metadata.queue(session.vhost, name);
    const queue = record === undefined ? undefined : this.queues.handle(record);
    if (queue === undefined) throw notFound(`no queue '${name}' in vhost '${session.vhost}'`);
    this.checkExclusive(session, name);
    if (permission !== undefined) this.checkPermission(session, permission, 'queue', name);
    return queue;
  }

  private checkExclusive(session: Session, name: string): void {
    const record = this.metadata.queue(session.vhost, name);
    if (record === undefined) return;
    const locked = checkExclusiveAccess(record, session.connectionId);
    if (locked === undefined) return;
    // The owner is gone and its exclusive queues are being deleted: the queue no longer exists.
    if (record.exclusiveOwner !== undefined && !this.gate.connections.has(record.exclusiveOwner)) {
      throw notFound(`no queue '${name}' in vhost '${session.vhost}'`);
    }
    throw new ChannelError(locked.code, locked.text);
  }

  /** A consumer left `queue`: an auto-delete queue with no consumers left is deleted. */
  consumerCancelled(queue: QueueHandle): void {
    const record = this.metadata.queue(queue.vhost, queue.name);
    if (record === undefined || record.groupId !== queue.groupId || !record.autoDelete) return;
    queue.fetchCounts().then(
      (counts) => {
        if (counts.consumers === 0) this.deleteInternally(queue, 'auto-delete queue lost its last consumer');
      },
      (err: unknown) => this.logger.debug({ err, queue: queue.name }, 'auto-delete check failed'),
    );
  }

  private onQueueExpired(queue: QueueActor): void {
    this.deleteInternally(queue, 'queue expired (x-expires)');
  }

  private deleteInternally(queue: QueueHandle, why: string): void {
    if (!this.queues.isLive(queue)) return;
    if (this.metadata.queue(queue.vhost, queue.name)?.groupId !== queue.groupId) return;
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
      .then(() => {
        this.counters.queuesDeleted++;
        return this.actors.stop(queue.vhost, queue.name, true);
      })
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
    const targets: QueueHandle[] = [];
    for (const name of names) {
      const record = this.metadata.queue(vhost, name);
      const queue = record === undefined ? undefined : this.queues.handle(record);
      if (queue === undefined) return 'unavailable';
      targets.push(queue);
    }
    return targets as unknown as DeadLetterRoute;
  }

  /**
   * A new exchange, binding or queue may give waiting dead-letter hand-offs somewhere to go: wake
   * every queue of `vhost` that has some (they otherwise retry within 5 s). Once per turn and vhost,
   * however many changes applied in it: a look at every queue for each of a burst of declares made
   * declaring 10,000 queues slower the more there were.
   */
  private wakeDeadLetters(vhost: string): void {
    if (this.deadLetterWakes.size === 0) setImmediate(this.runDeadLetterWakes);
    this.deadLetterWakes.add(vhost);
  }

  private readonly deadLetterWakes = new Set<string>();

  private readonly runDeadLetterWakes = (): void => {
    for (const vhost of this.deadLetterWakes) {
      const byName = this.actors.ofVhost(vhost);
      if (byName === undefined) continue;
      for (const actor of byName.values()) if (actor.hasPendingDeadLetters()) actor.wakeDeadLetters();
    }
    this.deadLetterWakes.clear();
  };

  // ------------------------------------------------------------------------------ publishing

  /**
   * The queues a publish reaches (`keys` = routing key plus CC and BCC keys), and whether it was
   * routed to a queue this node does not serve (one declared on another node of a cluster that
   * predates replicated queues): such a publish did not reach every queue, so a confirm must be a
   * nack.
   */
  route(
    vhost: string,
    exchange: string,
    keys: readonly string[],
    headers: FieldTable | undefined,
  ): RouteResult {
    const names = route(this.metadata, vhost, exchange, keys, headers);
    const targets: QueueHandle[] = [];
    let unserved = false;
    for (const name of names) {
      const record = this.metadata.queue(vhost, name);
      if (record === undefined) continue;
      const queue = this.queues.handle(record);
      if (queue !== undefined) targets.push(queue);
      else unserved = true;
    }
    return { targets, unserved };
  }

  /** Whether `queue` still exists (this incarnation: not deleted, nor deleted and declared again). */
  isCurrent(queue: QueueHandle): boolean {
    return this.metadata.queue(queue.vhost, queue.name)?.groupId === queue.groupId;
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
  deliveryProperties(queue: QueueHandle, message: StoredMessage, deliveryCount: number): BasicProperties {
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
    return this.actors.get(vhost, name);
  }

  /** A queue's effective configuration: its arguments merged with the policy that applies to it. */
  effectiveConfig(record: QueueRecord): EffectiveQueueConfig {
    return effectiveQueueConfig(record, this.metadata.policyFor(record.vhost, 'queue', record.name));
  }

  /** Open client connections on this node. */
  connectionCount(): number {
    return this.gate.connections.size;
  }

  /** What `GET /metrics` reads of this node (metrics/node-metrics.ts). */
  metricsSource(): NodeMetricsSource {
    return {
      nodeName: this.nodeName,
      metadata: this.metadata,
      replicas: () => this.actors.replicas(),
      raftGroupOf: (groupId) => this.actors.raftGroupOf(groupId),
      metadataRaft: () => this.metaGroup,
      connectionCount: () => this.gate.connections.size,
      channelCount: () => this.gate.connections.sum((c) => c.channelCount),
      publisherCount: () => this.gate.connections.sum((c) => c.publisherCount),
      clientConsumerCount: () => this.gate.connections.sum((c) => c.consumerCount),
      nodeFlow: this.flowTotals,
      deadLetterTimings: this.deadLetterTimings,
      raftTraffic: () => (this.storage === undefined ? undefined : raftHostOf(this.storage).stats),
      logSync: this.storage?.logStore.syncLatency,
      counters: this.counters,
      version: STYX_VERSION,
      clusterName: this.options.clusterName ?? DEFAULT_CLUSTER_NAME,
      dataDir: this.storage === undefined ? undefined : dirname(this.storage.path),
      memoryLimitBytes: this.options.memoryBudgetBytes,
      memoryAlarm: () => this.resources.memoryAlarm,
      diskFreeLimitBytes: this.resources.diskFreeLimitBytes,
      diskAlarm: () => this.resources.diskAlarm,
    };
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
    // Patterns the linear-time engine cannot run are refused here, before the log (name-pattern.ts).
    const patternProblem = commandPatternProblem(command);
    if (patternProblem !== undefined) return metadataError(ReplyCode.PRECONDITION_FAILED, patternProblem);
    const reply = await this.proposeMeta(command);
    if (reply.type === 'error') return reply;
    switch (command.type) {
      case 'setPolicy':
      case 'clearPolicy':
        await this.applyPolicies(command.vhost);
        break;
    }
    await Promise.allSettled(reply.deletedQueues.map((q) => this.actors.stop(q.vhost, q.name, true)));
    return reply;
  }

  /** Propose a new config to every queue of `vhost` whose effective config changed. */
  private async applyPolicies(vhost: string): Promise<void> {
    const byName = this.actors.ofVhost(vhost);
    if (byName === undefined) return;
    await Promise.allSettled(Array.from(byName.values(), (actor) => this.actors.reconcileConfig(actor)));
    // A new dead-letter exchange may be routable at once.
    this.wakeDeadLetters(vhost);
  }

  // ------------------------------------------------------------------------------ lifecycle

  /** Close every connection (320 CONNECTION_FORCED) and stop every queue actor. */
  async shutdown(): Promise<void> {
    this.resources.stop();
    this.alarms.stop();
    // Publishers first, while the queues can still confirm what the connections took: each close
    // waits for the outcome of every publish taken (as a drain's does; see closeGracefully), so
    // what stays unconfirmed at the close never reached a queue. Normally milliseconds; as long as
    // a queue's retries (GRACEFUL_CLOSE_MAX_WAIT_MS) when its commits stall. The server command
    // exits at once on a second signal.
    await Promise.all(
      this.gate.list().map((connection) => connection.closeGracefully('broker shutting down')),
    );
    this.replicaOps.stop();
    this.maintenance.stop();
    this.queues.stop();
    await this.actors.closeAll();
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
    return this.queues.serves(record);
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
    await this.queues.recover();
    for (const actor of this.actors.replicas()) {
      queues += 1;
      messages += actor.counts().ready + actor.counts().unacked;
    }
    this.logger.info(
      { queues, messages, ms: Math.round(performance.now() - started) },
      'recovered durable queues',
    );
  }
}
