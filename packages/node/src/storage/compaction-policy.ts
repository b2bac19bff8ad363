/**
 * When a durable log compacts (snapshot the machine, truncate the log behind it), so that the log
 * never pins old messages and a restart replays a bounded tail.
 *
 * Costs being balanced: a snapshot costs O(state) to write (for a queue: its message METADATA,
 * roughly 20-40 bytes per queued message, never bodies); a long tail costs replay time and disk
 * (an enqueue entry carries its body). The policy compacts when the entries applied since the last
 * snapshot reach `maxEntries` or weigh `maxBytes` — but only once they weigh at least
 * `snapshotRatio` × the last snapshot's size, so a huge queue is not snapshotted after every few
 * thousand acks: snapshot writing stays at most ~1/snapshotRatio of the log's own write volume.
 *
 * Bounds that follow (with the defaults): the tail replayed on restart is at most
 * max(20,000 entries or 64 MiB, 1 × the snapshot's size) — independent of history; an old message
 * never pins the log, since a snapshot truncates everything it covers regardless of what is still
 * queued. Measured (scripts/restart-bench.ts, 1 KiB bodies): a restart after 1M publish+ack pairs
 * takes ~30 ms with an uncompacted tail and ~1 ms after a clean stop; a 1M-message queue restores
 * in ~1 s (+ ~0.4 s for a 20,000-entry tail), dominated by rebuilding the queue's state.
 */
import type { EntryMeta, ReplicatedLog, RoleChange, StateMachine } from '@styx/raft';
import type { QueueCommand } from '../queue/types.ts';
import type { StorageLogger } from './storage-logger.ts';
import { silentStorageLogger } from './storage-logger.ts';

export interface CompactionPolicy {
  /** Entries applied since the last snapshot that trigger a compaction. */
  readonly maxEntries: number;
  /** Weight (≈ bytes, see `weigh`) of the entries applied since the last snapshot that triggers one. */
  readonly maxBytes: number;
  /** No compaction before the entries since the last snapshot weigh this × the snapshot's bytes. */
  readonly snapshotRatio: number;
}

export const DEFAULT_COMPACTION_POLICY: CompactionPolicy = Object.freeze({
  // Replay after a crash: ~10-30 µs per enqueue entry (read, decode, apply, body re-put): < 0.5 s.
  maxEntries: 20_000,
  // Disk held by a tail of large messages; also bounds replay I/O.
  maxBytes: 64 * 1024 * 1024,
  snapshotRatio: 1,
});

/** Fixed weight of any log entry, bytes: LMDB key, entry header and page overhead. */
export const ENTRY_OVERHEAD_BYTES = 64;

/** A queue command's weight for the policy: about its encoded size in the log. */
export function queueCommandWeight(command: QueueCommand): number {
  switch (command.type) {
    case 'enqueue':
      // Body plus exchange, routing key and properties (approximated).
      return ENTRY_OVERHEAD_BYTES + command.size + 64;
    case 'settle':
    case 'return':
    case 'discard':
      return ENTRY_OVERHEAD_BYTES + 4 * command.ids.length;
    default:
      return ENTRY_OVERHEAD_BYTES;
  }
}

/**
 * Counts what was applied since the last snapshot and says when to compact. The primitive a log
 * owner uses directly if it does not use `withCompaction`: call `recordApplied` for every applied
 * entry, `recordSnapshot` whenever a snapshot is taken or restored, and compact when `due`.
 */
export class CompactionTracker {
  readonly #policy: CompactionPolicy;
  #entries = 0;
  #bytes = 0;
  #snapshotBytes = 0;

  constructor(policy: Partial<CompactionPolicy> = {}) {
    this.#policy = { ...DEFAULT_COMPACTION_POLICY, ...policy };
  }

  get entriesSinceSnapshot(): number {
    return this.#entries;
  }

  get bytesSinceSnapshot(): number {
    return this.#bytes;
  }

  /** True when the log should compact now. */
  get due(): boolean {
    const policy = this.#policy;
    if (this.#entries === 0) return false;
    if (this.#entries < policy.maxEntries && this.#bytes < policy.maxBytes) return false;
    return this.#bytes >= policy.snapshotRatio * this.#snapshotBytes;
  }

  recordApplied(weight: number): void {
    this.#entries++;
    this.#bytes += weight;
  }

  /**
   * A compaction failed: count again from zero (keeping the last snapshot's size), so the next
   * attempt comes after another policy's worth of entries rather than at once, in a loop.
   */
  postpone(): void {
    this.#entries = 0;
    this.#bytes = 0;
  }

  /** A snapshot of `bytes` was taken (or restored) as of the last applied entry. */
  recordSnapshot(bytes: number): void {
    this.#entries = 0;
    this.#bytes = 0;
    this.#snapshotBytes = bytes;
  }
}

export interface CompactionOptions<C> {
  readonly policy?: Partial<CompactionPolicy>;
  /** An applied command's weight in bytes; defaults to `ENTRY_OVERHEAD_BYTES` for every entry. */
  readonly weigh?: (command: C) => number;
  /** Snapshot once more on `close()` when anything was applied since the last one (default true): a clean restart then replays nothing. */
  readonly compactOnClose?: boolean;
  /**
   * Called once per turn when a compaction is due, before it runs, until it returns true: lets the
   * owner spread over several turns work the snapshot would otherwise do in one (a durable queue
   * writes its held-back bodies, a bounded number per turn). Not called for the compaction on close.
   */
  readonly prepare?: () => boolean;
  /**
   * Called at most once per turn in which entries were applied, with the index of the last one:
   * lets the owner do ahead of time, a little per turn, work the next snapshot will need (a durable
   * queue writes the bodies of its oldest messages, those likely to outlive the next compaction).
   */
  readonly trickle?: (lastAppliedIndex: number) => void;
  readonly logger?: StorageLogger;
}

/**
 * `log`, compacting itself by the policy: after an apply batch that makes compaction due (never
 * inside `apply`), and once more on close. Compaction failures are logged; the log's own failure
 * handling applies (a failed store fails the log). A compaction found due during the replay in
 * `open()` runs as soon as `open()` has resolved.
 */
export function withCompaction<C, R>(
  log: ReplicatedLog<C, R>,
  options: CompactionOptions<C> = {},
): ReplicatedLog<C, R> {
  return new CompactingLog(log, options);
}

const constantWeight = (): number => ENTRY_OVERHEAD_BYTES;

/** `machine`'s optional snapshot-transfer hooks, bound to it (none when it has none). */
function transferHooksOf<C, R>(
  machine: StateMachine<C, R>,
): Pick<StateMachine<C, R>, 'transferSnapshot' | 'installTransferSnapshot'> {
  const { transferSnapshot, installTransferSnapshot } = machine;
  if (transferSnapshot === undefined || installTransferSnapshot === undefined) return {};
  return {
    transferSnapshot: (snapshot, meta) => transferSnapshot.call(machine, snapshot, meta),
    installTransferSnapshot: (transfer, meta) => installTransferSnapshot.call(machine, transfer, meta),
  };
}

class CompactingLog<C, R> implements ReplicatedLog<C, R> {
  readonly #log: ReplicatedLog<C, R>;
  readonly #tracker: CompactionTracker;
  readonly #weigh: (command: C) => number;
  readonly #compactOnClose: boolean;
  readonly #prepare: (() => boolean) | undefined;
  readonly #trickle: ((lastAppliedIndex: number) => void) | undefined;
  #trickleScheduled = false;
  #lastAppliedIndex = 0;
  readonly #logger: StorageLogger;
  #open = false;
  #closed = false;
  #scheduled = false;
  #running: Promise<void> | undefined;

  constructor(log: ReplicatedLog<C, R>, options: CompactionOptions<C>) {
    this.#log = log;
    this.#tracker = new CompactionTracker(options.policy);
    this.#weigh = options.weigh ?? constantWeight;
    this.#compactOnClose = options.compactOnClose ?? true;
    this.#prepare = options.prepare;
    this.#trickle = options.trickle;
    this.#logger = options.logger ?? silentStorageLogger;
  }

  get groupId(): string {
    return this.#log.groupId;
  }

  get role(): ReplicatedLog<C, R>['role'] {
    return this.#log.role;
  }

  /** Entries applied since the last snapshot (for tests and management). */
  get entriesSinceSnapshot(): number {
    return this.#tracker.entriesSinceSnapshot;
  }

  async open(machine: StateMachine<C, R>): Promise<void> {
    const tracker = this.#tracker;
    const weigh = this.#weigh;
    // The wrapper counts what the machine applies and snapshots; every other hook of the machine
    // passes through untouched. Dropping the optional snapshot-transfer pair here once sent lagging
    // queue replicas snapshots without their message bodies (issue 19): they then led a queue whose
    // live messages had no body, and it stalled.
    const counted: StateMachine<C, R> = {
      ...transferHooksOf(machine),
      apply: (command: C, meta: EntryMeta): R => {
        try {
          return machine.apply(command, meta);
        } finally {
          tracker.recordApplied(weigh(command));
          this.#lastAppliedIndex = meta.index;
          if (this.#open) {
            if (tracker.due) this.#schedule();
            if (this.#trickle !== undefined && !this.#trickleScheduled) {
              this.#trickleScheduled = true;
              setImmediate(this.#runTrickle);
            }
          }
        }
      },
      snapshot: (): Uint8Array => {
        const bytes = machine.snapshot();
        tracker.recordSnapshot(bytes.length);
        return bytes;
      },
      restore: (snapshot: Uint8Array, meta: EntryMeta): void => {
        machine.restore(snapshot, meta);
        tracker.recordSnapshot(snapshot.length);
      },
    };
    await this.#log.open(counted);
    this.#open = !this.#closed;
    if (this.#open && tracker.due) this.#schedule();
  }

  propose(command: C): Promise<R> {
    return this.#log.propose(command);
  }

  onRole(listener: (change: RoleChange) => void): () => void {
    return this.#log.onRole(listener);
  }

  compact(): Promise<void> {
    return this.#log.compact();
  }

  async close(): Promise<void> {
    if (this.#closed) return this.#log.close();
    this.#closed = true;
    const wasOpen = this.#open;
    this.#open = false;
    await this.#running;
    if (wasOpen && this.#compactOnClose && this.#tracker.entriesSinceSnapshot > 0) {
      await this.#compactLogged();
    }
    await this.#log.close();
  }

  destroy(): Promise<void> {
    this.#closed = true;
    this.#open = false;
    return this.#log.destroy();
  }

  #schedule(): void {
    if (this.#scheduled || this.#running !== undefined) return;
    this.#scheduled = true;
    // After the current apply batch and the continuations it releases, so the snapshot's write
    // joins the log store's next batch instead of interleaving with this one's applies.
    setImmediate(this.#run);
  }

  readonly #runTrickle = (): void => {
    this.#trickleScheduled = false;
    if (!this.#open) return;
    try {
      this.#trickle?.(this.#lastAppliedIndex);
    } catch (err) {
      // The compaction's own preparation writes what this did not; the failure will show there.
      this.#logger.debug({ err, groupId: this.#log.groupId }, 'trickle before compaction failed');
    }
  };

  readonly #run = (): void => {
    this.#scheduled = false;
    if (!this.#open || !this.#tracker.due) return;
    if (!this.#prepared()) return;
    this.#running = this.#compactLogged().finally(() => {
      this.#running = undefined;
      if (this.#open && this.#tracker.due) this.#schedule();
    });
  };

  /** True when the compaction may run now; otherwise it was rescheduled (or postponed on an error). */
  #prepared(): boolean {
    const prepare = this.#prepare;
    if (prepare === undefined) return true;
    try {
      if (prepare()) return true;
    } catch (err) {
      this.#tracker.postpone();
      this.#logger.warn(
        { err, groupId: this.#log.groupId },
        'preparing a log compaction failed; retrying later',
      );
      return false;
    }
    this.#schedule();
    return false;
  }

  async #compactLogged(): Promise<void> {
    try {
      await this.#log.compact();
    } catch (err) {
      const code = (err as { code?: unknown } | undefined)?.code;
      if (code === 'LOG_CLOSED') return;
      this.#tracker.postpone();
      this.#logger.warn({ err, groupId: this.#log.groupId }, 'log compaction failed; retrying later');
    }
  }
}
