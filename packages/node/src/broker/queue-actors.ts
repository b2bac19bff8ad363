/**
 * The queue actors running on this node: one per queue on a node alone, one per replica held here
 * in a cluster. They are found by vhost and name (channels, routing) and by group id (the cluster's
 * queue link, body repair, checks). Here they start — on a durable log with storage, in memory
 * otherwise — stop, take up the policies' config, and come and go as this node is added to or
 * removed from a queue's members.
 */
import { DEFAULT_DEDUPE_LIMITS, WIDE_DEDUPE_WINDOW } from '@styx/dlx';
import type { Clock, RaftGroupLog, ReplicatedLog } from '@styx/raft';
import { InMemoryLog } from '@styx/raft';
import { WIDE_DEDUPE_WINDOW_FLAG } from '../cluster/feature-flags.ts';
import type { Logger } from '../logging/logger.ts';
import type { EffectiveQueueConfig } from '../metadata/effective-config.ts';
import { sameQueueConfig } from '../metadata/effective-config.ts';
import type { MetadataMachine, QueueRecord } from '../metadata/metadata-machine.ts';
import type { BodyStore } from '../queue/body-store.ts';
import { InMemoryBodyStore } from '../queue/body-store.ts';
import type { DeadLetterTimings } from '../queue/dead-letter-timings.ts';
import { showsDeliveryCount } from '../queue/delivery-count-header.ts';
import type { QueueActorSinks } from '../queue/queue-actor.ts';
import { QueueActor } from '../queue/queue-actor.ts';
import type { QueueFlowCounters } from '../queue/queue-flow-counters.ts';
import type { QueueApplyResult, QueueCommand, QueueConfig } from '../queue/types.ts';
import { durableQueueGroup } from '../storage/durable-queue-log.ts';
import type { NodeStorage } from '../storage/node-storage.ts';
import { ClusterBodySource, serveBodies } from './body-fetch.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import type { ClusterQueues } from './cluster-queues.ts';
import type { ReplicaStart } from './replica-start.ts';

/** What the queue actors need of their broker. */
export interface QueueActorsHost {
  readonly metadata: MetadataMachine;
  readonly logger: Logger;
  readonly clock: Clock;
  /** The node's durable storage; absent when everything is in memory (embedded use, tests). */
  readonly storage: NodeStorage | undefined;
  /** Absent on a node alone, and `clusterQueues` with it. */
  readonly cluster: Pick<BrokerCluster, 'nodeId' | 'handleRpc' | 'callRpc' | 'featureFlags'> | undefined;
  readonly clusterQueues:
    | Pick<ClusterQueues, 'membersOf' | 'registerGroup' | 'forgetGroup' | 'leaderTookOver'>
    | undefined;
  /** The actors' sinks into the broker; a new leader's is this module's own (`onLeader`). */
  readonly sinks: Omit<QueueActorSinks, 'onLeader'>;
  /** A queue's effective configuration: its arguments merged with the policy that applies to it. */
  effectiveConfig(record: QueueRecord): EffectiveQueueConfig;
  /** The node's flow totals, which each replica adds to while it leads (metrics). */
  readonly nodeFlow?: QueueFlowCounters;
  /** The node's dead-letter stage timings, which each replica adds to while it leads (metrics). */
  readonly deadLetterTimings?: DeadLetterTimings;
}

export class QueueActors {
  readonly #host: QueueActorsHost;
  /** vhost → queue name → actor (the replica running here). */
  readonly #actors = new Map<string, Map<string, QueueActor>>();
  /** The same actors by group id. */
  readonly #replicasByGroup = new Map<string, QueueActor>();
  /** The Raft groups of the durable replicas running here, by group id (term, commit index, progress). */
  readonly #raftGroups = new Map<string, RaftGroupLog<QueueCommand, QueueApplyResult>>();
  /** Replicas being removed from this node, by group id: one added back waits for its removal. */
  readonly #droppingReplicas = new Map<string, Promise<void>>();
  /** Where a durable queue's replica asks for bodies it lacks (clustered nodes only). */
  readonly #bodySource: ClusterBodySource | undefined;
  /** Bodies of non-durable queues; durable queues keep theirs in `storage.bodyStore`. */
  readonly #memoryBodyStore: BodyStore = new InMemoryBodyStore();
  /**
   * The last effective config proposed to each actor (it may not be applied yet), so a policy set
   * and cleared in quick succession compares against what the log will hold, not what it holds now.
   */
  readonly #proposedConfigs = new WeakMap<QueueActor, QueueConfig>();
  readonly #sinks: QueueActorSinks;
  /**
   * The dedupe window every queue may take now (see `QueueActorOptions.dedupeWindow`): the wide one
   * on a node alone, and in a cluster once every member supports it (feature flag
   * `wide_dedupe_window` enabled: an older replica could not apply the log entry that records it).
   */
  readonly #dedupeWindow = (): number => {
    const flags = this.#host.cluster?.featureFlags;
    return flags === undefined || flags.isEnabled(WIDE_DEDUPE_WINDOW_FLAG)
      ? WIDE_DEDUPE_WINDOW
      : DEFAULT_DEDUPE_LIMITS.maxIdsPerSource;
  };

  constructor(host: QueueActorsHost) {
    this.#host = host;
    this.#sinks = { ...host.sinks, onLeader: (queue: QueueActor): void => this.#onQueueLeader(queue) };
    if (host.cluster !== undefined && host.storage !== undefined) {
      // Replicas not whole fetch missing bodies from the others (queue/body-repair.ts).
      serveBodies(host.cluster, (groupId) => this.replicaOf(groupId), host.storage.bodyStore);
      this.#bodySource = new ClusterBodySource(host.cluster, (groupId) => this.#membersOfGroup(groupId));
    }
  }

  /** The actor of a queue on this node, if running. */
  get(vhost: string, name: string): QueueActor | undefined {
    return this.#actors.get(vhost)?.get(name);
  }

  /** The actors of `vhost`'s queues running here, by queue name. */
  ofVhost(vhost: string): ReadonlyMap<string, QueueActor> | undefined {
    return this.#actors.get(vhost);
  }

  /** The replica of a queue incarnation running on this node. */
  replicaOf(groupId: string): QueueActor | undefined {
    return this.#replicasByGroup.get(groupId);
  }

  /** The Raft group under a durable replica running here; undefined for an in-memory queue. */
  raftGroupOf(groupId: string): RaftGroupLog<QueueCommand, QueueApplyResult> | undefined {
    return this.#raftGroups.get(groupId);
  }

  /** Every replica running on this node. */
  replicas(): Iterable<QueueActor> {
    return this.#replicasByGroup.values();
  }

  /** The members of the queue group `groupId` as the metadata places them (none if unknown here). */
  #membersOfGroup(groupId: string): readonly string[] {
    const actor = this.#replicasByGroup.get(groupId);
    const record = actor === undefined ? undefined : this.#host.metadata.queue(actor.vhost, actor.name);
    if (record === undefined || record.groupId !== groupId) return [];
    return this.#host.clusterQueues?.membersOf(record) ?? [];
  }

  /** Start this node's replica of a clustered queue (no-op when it runs). */
  async startReplica(record: QueueRecord, start: ReplicaStart): Promise<void> {
    // Added back while its removal here still runs (its log destroyed, its bodies deleted in chunks,
    // maybe resumed after a restart): the new replica starts once the old one is gone, or the
    // deletion would take the new replica's bodies with it.
    await this.#droppingReplicas.get(record.groupId);
    await this.#host.storage?.bodyStore.whenGroupDeleted(record.groupId);
    // No await between this check and start's registration of the new replica.
    if (this.#replicasByGroup.has(record.groupId)) return;
    await this.start(record, this.#host.effectiveConfig(record).config, start);
  }

  /** This node is no longer one of the queue's replicas: stop its actor and destroy its data here. */
  async dropReplica(record: QueueRecord): Promise<void> {
    const actor = this.#replicasByGroup.get(record.groupId);
    if (actor === undefined) return;
    this.#host.logger.info({ queue: record.name, vhost: record.vhost }, 'replica removed from this node');
    this.#actors.get(record.vhost)?.delete(record.name);
    this.#replicasByGroup.delete(record.groupId);
    this.#raftGroups.delete(record.groupId);
    this.#host.clusterQueues?.forgetGroup(record.groupId);
    const dropping = actor.delete({ notifyConsumers: false }).then(
      () => undefined,
      (err: unknown) => this.#host.logger.warn({ err, queue: record.name }, 'removing a replica failed'),
    );
    this.#droppingReplicas.set(record.groupId, dropping);
    await dropping;
    if (this.#droppingReplicas.get(record.groupId) === dropping)
      this.#droppingReplicas.delete(record.groupId);
  }

  /** A replica took up the leader's duties: its config follows the policies, its membership the record. */
  #onQueueLeader(actor: QueueActor): void {
    const clusterQueues = this.#host.clusterQueues;
    if (clusterQueues === undefined) return;
    queueMicrotask(() => {
      clusterQueues.leaderTookOver(actor);
      void this.reconcileConfig(actor);
    });
  }

  /** Start a queue's actor on this node: open its log (and replay it) under `config`. */
  async start(
    record: QueueRecord,
    config: QueueConfig,
    start: ReplicaStart = 'bootstrap',
  ): Promise<QueueActor> {
    const { storage, clock, logger } = this.#host;
    const durable = record.durable && record.exclusiveOwner === undefined && storage !== undefined;
    let log: ReplicatedLog<QueueCommand, QueueApplyResult>;
    if (durable && storage !== undefined) {
      const made = durableQueueGroup(storage, record.groupId, { clock, logger, start });
      log = made.log;
      this.#raftGroups.set(record.groupId, made.group);
      this.#host.clusterQueues?.registerGroup(record.groupId, made.group);
    } else {
      log = new InMemoryLog<QueueCommand, QueueApplyResult>(record.groupId, { clock });
    }
    const actor = new QueueActor({
      vhost: record.vhost,
      name: record.name,
      groupId: record.groupId,
      log,
      bodyStore: durable && storage !== undefined ? storage.bodyStore : this.#memoryBodyStore,
      config,
      clock,
      logger: logger.child({ queue: record.name, vhost: record.vhost }),
      sinks: this.#sinks,
      deliveryCountHeader: showsDeliveryCount(record.arguments),
      nodeFlow: this.#host.nodeFlow,
      deadLetterTimings: this.#host.deadLetterTimings,
      dedupeWindow: this.#dedupeWindow,
      ...(durable && this.#bodySource !== undefined ? { bodySource: this.#bodySource } : {}),
    });
    let byName = this.#actors.get(record.vhost);
    if (byName === undefined) {
      byName = new Map();
      this.#actors.set(record.vhost, byName);
    }
    byName.set(record.name, actor);
    this.#replicasByGroup.set(record.groupId, actor);
    await actor.open();
    // The applied config is known now (replayed from the log, or the first entry of a fresh one).
    // Bring it in line with the policies, which may have changed while the queue was down (a
    // crash between a policy's commit and the queue's setConfig) or opening.
    this.#proposedConfigs.delete(actor);
    await this.reconcileConfig(actor);
    return actor;
  }

  /** Stop a queue's actor after its metadata record is gone; `deleteData` also drops its messages. */
  stop(vhost: string, name: string, deleteData: boolean): Promise<number> {
    const actor = this.#actors.get(vhost)?.get(name);
    if (actor === undefined) return Promise.resolve(0);
    this.#actors.get(vhost)?.delete(name);
    this.#replicasByGroup.delete(actor.groupId);
    this.#raftGroups.delete(actor.groupId);
    this.#host.clusterQueues?.forgetGroup(actor.groupId);
    return deleteData ? actor.delete() : actor.close().then(() => 0);
  }

  /** Close every actor (the node shuts down); their data stays. */
  async closeAll(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const byName of this.#actors.values())
      for (const actor of byName.values()) closing.push(actor.close());
    await Promise.allSettled(closing);
  }

  /** Propose `setConfig` when the queue's effective config differs from the last one proposed. */
  async reconcileConfig(actor: QueueActor): Promise<void> {
    const record = this.#host.metadata.queue(actor.vhost, actor.name);
    if (record === undefined || record.groupId !== actor.groupId) return;
    // In a cluster only the leader proposes; a replica that becomes leader reconciles then.
    if (this.#host.clusterQueues !== undefined && !actor.isLeader) return;
    const { config } = this.#host.effectiveConfig(record);
    if (sameQueueConfig(this.#proposedConfigs.get(actor) ?? actor.config(), config)) return;
    this.#proposedConfigs.set(actor, config);
    try {
      await actor.setConfig(config);
    } catch (err) {
      // Not in the log: compare against the applied config next time, so a later change retries.
      this.#proposedConfigs.delete(actor);
      this.#host.logger.warn(
        { err, queue: actor.name, vhost: actor.vhost },
        'failed to propose a new queue config',
      );
    }
  }
}
