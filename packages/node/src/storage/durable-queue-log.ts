/**
 * The log of a durable queue on this node: a one-voter Raft group on the node's Raft host (over the
 * node's log store), with the binary queue command codec and compaction by the default policy.
 * What the node hands a `QueueActor` for a durable queue (with `storage.bodyStore` as its body
 * store). A queue written by the earlier single-voter log is migrated when it opens.
 */
import type { Clock, RaftGroupLog, ReplicatedLog } from '@styx/raft';
import type { QueueApplyResult, QueueCommand } from '../queue/types.ts';
import { TEST_COMPACT_EVERY } from '../test-support/test-breaks.ts';
import type { CompactionPolicy } from './compaction-policy.ts';
import { queueCommandWeight, withCompaction } from './compaction-policy.ts';
import type { NodeStorage } from './node-storage.ts';
import { queueCommandCodec } from './queue-command-codec.ts';
import { raftHostOf } from './raft-groups.ts';
import type { StorageLogger } from './storage-logger.ts';

/** Held-back bodies written per turn while a compaction is being prepared. */
export const PERSIST_CHUNK_BODIES = 2048;
/**
 * Entries after which a held-back body is written ahead of the next compaction, a quarter of the
 * default policy's `maxEntries`: a message still queued that long after its enqueue most likely
 * outlives the compaction, and writing it early keeps the compaction's turn and sync small.
 */
export const PERSIST_AGE_ENTRIES = 5_000;

export interface DurableQueueLogOptions {
  /** Overrides of `DEFAULT_COMPACTION_POLICY`. */
  readonly compaction?: Partial<CompactionPolicy>;
  /** Snapshot on close when anything was applied since the last snapshot (default true). */
  readonly compactOnClose?: boolean;
  /** Where the log reads time for entry timestamps; the wall clock by default. */
  readonly clock?: Clock;
  readonly logger?: StorageLogger;
  /**
   * How a replica of a clustered queue starts when nothing is stored for it: `bootstrap` makes a
   * group whose only voter is this node (the queue's first replica, which then adds the others);
   * `join` waits, with no membership, for the group's leader to add it; `{ founders }` makes a group
   * whose voters are the founders, the first of them campaigning at once (broker/replica-start.ts).
   * Default `bootstrap`.
   */
  readonly start?: 'bootstrap' | 'join' | { readonly founders: readonly string[] };
}

/** A durable queue's log, and the Raft group under it (membership, leadership, progress). */
export interface DurableQueueGroup {
  readonly log: ReplicatedLog<QueueCommand, QueueApplyResult>;
  readonly group: RaftGroupLog<QueueCommand, QueueApplyResult>;
}

export function durableQueueLog(
  storage: NodeStorage,
  groupId: string,
  options: DurableQueueLogOptions = {},
): ReplicatedLog<QueueCommand, QueueApplyResult> {
  return durableQueueGroup(storage, groupId, options).log;
}

export function durableQueueGroup(
  storage: NodeStorage,
  groupId: string,
  options: DurableQueueLogOptions = {},
): DurableQueueGroup {
  const group = raftHostOf(storage).createLog<QueueCommand, QueueApplyResult>(groupId, queueCommandCodec, {
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.start === 'join' ? { join: true } : {}),
    ...(typeof options.start === 'object'
      ? {
          voters: options.start.founders,
          campaignOnCreate: options.start.founders[0] === raftHostOf(storage).nodeId,
        }
      : {}),
  });
  const log = withCompaction(group, {
    weigh: queueCommandWeight,
    // The snapshot writes every body still held back (see LmdbBodyStore): most of them in chunks
    // over the turns before it, so no single turn writes (and syncs) tens of MiB at once.
    prepare: () => storage.bodyStore.persistSomeLogged(groupId, PERSIST_CHUNK_BODIES) <= PERSIST_CHUNK_BODIES,
    // And ahead of it, a little per turn, the bodies of messages already PERSIST_AGE_ENTRIES old:
    // those likely to be live at the snapshot. Younger ones (a consumer keeps up) are never written.
    trickle: (lastApplied) =>
      storage.bodyStore.persistLoggedUpTo(groupId, lastApplied - PERSIST_AGE_ENTRIES, PERSIST_CHUNK_BODIES),
    ...(options.compaction === undefined
      ? TEST_COMPACT_EVERY === undefined
        ? {}
        : // Exactly every N entries: without the size ratio, which on a deep backlog (a big
          // snapshot) would hold compaction back and make a test's snapshot transfers a matter of luck.
          { policy: { maxEntries: TEST_COMPACT_EVERY, snapshotRatio: 0 } }
      : { policy: options.compaction }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.compactOnClose === undefined ? {} : { compactOnClose: options.compactOnClose }),
  });
  return { log, group };
}
