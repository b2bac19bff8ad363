import type { RaftGroupLog } from '@styx/raft';
import type { Logger } from '../logging/logger.ts';
import type {
  MetadataCommand,
  MetadataMachine,
  MetadataReply,
  QueueRecord,
} from '../metadata/metadata-machine.ts';
import type { OwnerSink } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { QueueApplyResult, QueueCommand, QueueCounts } from '../queue/types.ts';
import type { ClusterQueues } from './cluster-queues.ts';
import type { QueueActors } from './queue-actors.ts';
import type { QueueDirectory } from './queue-directory.ts';
import { replicaStart } from './replica-start.ts';

/** How long a declare waits for a new queue's replicas to join its group, ms. */
const QUEUE_MEMBERS_WAIT_MS = 5_000;

const NO_COUNTS: QueueCounts = {
  ready: 0,
  unacked: 0,
  readyBytes: 0,
  consumers: 0,
  deadLetterPending: 0,
  deadLetterPendingBytes: 0,
};

/** What a clustered node gives its queue directory. */
export interface ClusterQueueDirectoryHost {
  readonly nodeId: string;
  readonly metadata: MetadataMachine;
  readonly logger: Logger;
  readonly actors: QueueActors;
  readonly clusterQueues: ClusterQueues;
  /** A new queue may give waiting dead-letter hand-offs of `vhost` somewhere to go. */
  wakeDeadLetters(vhost: string): void;
  /** Members changed: the queues' leaders should be spread again. */
  scheduleRebalance(): void;
}

/**
 * The queues of a cluster: every queue is a replicated group whose leader may run on any member;
 * this node reaches each through a `ClusterQueue` handle (to its own replica when it leads, over
 * the queue link otherwise), whether or not it holds a replica.
 */
export class ClusterQueueDirectory implements QueueDirectory {
  readonly #host: ClusterQueueDirectoryHost;
  readonly #queues: ClusterQueues;

  constructor(host: ClusterQueueDirectoryHost) {
    this.#host = host;
    this.#queues = host.clusterQueues;
  }

  serves(record: QueueRecord): boolean {
    return this.#queues.membersOf(record).includes(this.#host.nodeId);
  }

  membersOf(record: QueueRecord): readonly string[] {
    return this.#queues.membersOf(record);
  }

  group(groupId: string): RaftGroupLog<QueueCommand, QueueApplyResult> | undefined {
    return this.#queues.group(groupId);
  }

  leaderHint(record: QueueRecord): string | undefined {
    return this.#queues.handle(record).leader;
  }

  handle(record: QueueRecord): QueueHandle {
    return this.#queues.handle(record);
  }

  isLive(): boolean {
    return true;
  }

  async leaderCounts(queue: QueueHandle): Promise<QueueCounts> {
    try {
      return await queue.fetchCounts();
    } catch {
      return queue.counts();
    }
  }

  resolveOwner(owner: string): OwnerSink | undefined {
    return this.#queues.resolveOwner(owner);
  }

  async declared(record: QueueRecord, created: boolean): Promise<QueueCounts> {
    const host = this.#host;
    const queue = this.#queues.handle(record);
    const members = this.#queues.membersOf(record);
    if (created && members.includes(host.nodeId)) {
      const start = replicaStart(record, members, host.nodeId);
      await host.actors.startReplica(record, start);
      if (typeof start === 'object') {
        // Founded: every replica starts with all the members as voters, so the first confirm
        // needs a quorum of them by construction. The declare does not wait for the election (a
        // channel answers its declares in order: one election each would pace them); a publish
        // meanwhile waits for the leader. The wait runs on to ask for votes again if needed.
        void this.#queues.awaitMembers(record, QUEUE_MEMBERS_WAIT_MS).then((led) => {
          // (Unless the queue went meanwhile: its replica is gone, nothing to wait for.)
          if (!led && host.metadata.queue(record.vhost, record.name)?.groupId === record.groupId)
            host.logger.warn(
              { queue: record.name, vhost: record.vhost, members },
              'declared queue elected no leader in time (a quorum of its members down?): publishes wait',
            );
        });
        host.wakeDeadLetters(record.vhost);
        return NO_COUNTS;
      }
      // Opened here (the first member creates the group), then the declare waits until the
      // other replicas joined, so the first confirm already needs a quorum of them.
      if (!(await this.#queues.awaitMembers(record, QUEUE_MEMBERS_WAIT_MS))) {
        host.logger.warn(
          { queue: record.name, vhost: record.vhost, members },
          'queue declared before all its replicas joined (some members are down?)',
        );
      }
      host.wakeDeadLetters(record.vhost);
      return NO_COUNTS;
    }
    queue.touch().catch(() => undefined);
    const counts = await this.leaderCounts(queue);
    if (created) host.wakeDeadLetters(record.vhost);
    return counts;
  }

  /**
   * Every replica stops and drops its data when the deletion applies on its node; the leader's
   * counts (read before) say how many messages went.
   */
  async delete(_queue: QueueHandle, counts: QueueCounts, commit: () => Promise<void>): Promise<number> {
    await commit();
    return counts.ready;
  }

  metadataApplied(command: MetadataCommand, reply: MetadataReply & { type: 'ok' }): void {
    const queues = this.#queues;
    // Every node, replica or not, lets go of its handles of the deleted queues.
    for (const q of reply.deletedQueues) queues.queueDeleted(q.groupId);
    switch (command.type) {
      case 'declareQueue':
      case 'setQueueMembers':
      case 'addClusterNode':
      case 'forgetClusterNode':
        if (command.type === 'addClusterNode') this.#host.scheduleRebalance();
        // After this apply: starting a replica opens a log, never from inside another's apply.
        queueMicrotask(() => void queues.reconcileReplicas());
        if (command.type === 'setQueueMembers') {
          const record = this.#host.metadata.queue(command.vhost, command.name);
          if (record !== undefined) {
            queues.handle(record);
            queueMicrotask(() => queues.pokeMembership(record.groupId));
          }
        }
        break;
    }
  }

  metadataRestored(): void {
    queueMicrotask(() => void this.#queues.reconcileReplicas());
  }

  recover(): Promise<void> {
    return this.#queues.reconcileReplicas();
  }

  stop(): void {
    this.#queues.stop();
  }
}
