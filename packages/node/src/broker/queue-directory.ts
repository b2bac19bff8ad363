import type { RaftGroupLog } from '@styx/raft';
import type { MetadataCommand, MetadataReply, QueueRecord } from '../metadata/metadata-machine.ts';
import type { OwnerSink } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { QueueApplyResult, QueueCommand, QueueCounts } from '../queue/types.ts';

/**
 * How this node reaches its queues, one interface whether they run here alone (`LocalQueues`) or as
 * replicated groups across a cluster (`ClusteredQueues`): the broker asks it for a queue's handle,
 * counts and members and tells it of declares, deletions and metadata changes, and never asks which
 * of the two it is.
 */
export interface QueueDirectory {
  /** Whether this node runs a replica (an actor) of `record`'s queue. */
  serves(record: QueueRecord): boolean;
  /** The nodes holding `record`'s replicas, the preferred leader first. */
  membersOf(record: QueueRecord): readonly string[];
  /** The Raft group of a durable replica running here, by group id (clustered queues only). */
  group(groupId: string): RaftGroupLog<QueueCommand, QueueApplyResult> | undefined;
  /** The node this one believes leads `record`'s queue, if it knows. */
  leaderHint(record: QueueRecord): string | undefined;
  /**
   * The handle through which this node uses `record`'s queue; undefined when it cannot reach it
   * now (on a node alone: its actor is not running, e.g. still starting after a restart).
   */
  handle(record: QueueRecord): QueueHandle | undefined;
  /** Whether `queue` is still how this node reaches its queue (not a stopped actor). */
  isLive(queue: QueueHandle): boolean;
  /** The counts as the queue's leader has them; this node's view when it cannot be reached. */
  leaderCounts(queue: QueueHandle): Promise<QueueCounts>;
  /** Where the replicas running here deliver to `owner` (a channel here, or one on another node). */
  resolveOwner(owner: string): OwnerSink | undefined;
  /**
   * A declare of `record` committed (`created`: it made the queue): the queue runs where it should
   * before this resolves, with its counts.
   */
  declared(record: QueueRecord, created: boolean): Promise<QueueCounts>;
  /**
   * Delete `queue`, whose counts are `counts`, by running `commit` (the metadata deletion); resolves
   * with the number of messages the deletion dropped.
   */
  delete(queue: QueueHandle, counts: QueueCounts, commit: () => Promise<void>): Promise<number>;
  /** A metadata command applied here (whoever proposed it). */
  metadataApplied(command: MetadataCommand, reply: MetadataReply & { type: 'ok' }): void;
  /** The metadata was replaced by a snapshot. */
  metadataRestored(): void;
  /** After a restart: start the queues this node serves. */
  recover(): Promise<void>;
  stop(): void;
}
