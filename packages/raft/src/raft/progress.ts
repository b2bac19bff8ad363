import { Inflights } from './inflights.ts';
import type { Snapshot } from './types.ts';

/**
 * How the leader sends to one follower:
 * - Probe: it does not know where the follower's log matches; one append per heartbeat interval
 *   until an acknowledgement tells it (`next` walks back on rejections, with hints).
 * - Replicate: the follower is in sync; appends are pipelined (`next` moves ahead on send), bounded
 *   by the inflight window.
 * - Snapshot: the follower needs compacted entries; the leader streams a snapshot in chunks and
 *   sends no appends until the follower reports the snapshot installed.
 */
export const ProgressState = {
  Probe: 'probe',
  Replicate: 'replicate',
  Snapshot: 'snapshot',
} as const;
export type ProgressState = (typeof ProgressState)[keyof typeof ProgressState];

/**
 * The leader's view of one replica (etcd's tracker.Progress). Invariants: match < next;
 * `match` never decreases while this object lives (a stale acknowledgement cannot lower it).
 */
export class Progress {
  /** Highest index known to be replicated (durably) on the replica. */
  match = 0;
  /** Next index to send. */
  next: number;
  state: ProgressState = ProgressState.Probe;
  /** In Snapshot state: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** Highest commit index sent to the replica (in an append or a heartbeat). */
  sentCommit = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** Probe: an append was sent this heartbeat interval; Replicate: the inflight window is full. */
  msgAppFlowPaused = false;
  readonly inflights: Inflights;
  isLearner: boolean;

  /** Snapshot streaming: the snapshot being sent, the next chunk to send, chunks acknowledged. */
  snapshot: Snapshot | undefined;
  snapNextChunk = 0;
  snapAckedChunk = 0;
  /** `snapAckedChunk` at the last heartbeat response, and how many beats it has not moved. */
  snapAckedAtBeat = 0;
  snapStalledBeats = 0;

  constructor(next: number, maxInflightMsgs: number, maxInflightBytes: number, isLearner: boolean) {
    this.next = next;
    this.inflights = new Inflights(maxInflightMsgs, maxInflightBytes);
    this.isLearner = isLearner;
  }

  #resetState(state: ProgressState): void {
    this.msgAppFlowPaused = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
    this.snapshot = undefined;
    this.snapNextChunk = 0;
    this.snapAckedChunk = 0;
    this.snapAckedAtBeat = 0;
    this.snapStalledBeats = 0;
  }

  /**
   * A heartbeat response arrived while streaming a snapshot. Returns whether to go back to the
   * last acknowledged chunk: only once acknowledgements have not moved for two heartbeat responses
   * in a row, so a transfer that merely has chunks in flight is not duplicated.
   */
  snapshotStalled(): boolean {
    if (this.snapAckedChunk !== this.snapAckedAtBeat) {
      this.snapAckedAtBeat = this.snapAckedChunk;
      this.snapStalledBeats = 0;
      return false;
    }
    if (this.snapNextChunk <= this.snapAckedChunk) return false;
    if (++this.snapStalledBeats < 2) return false;
    this.snapStalledBeats = 0;
    return true;
  }

  becomeProbe(): void {
    if (this.state === ProgressState.Snapshot) {
      // The follower installed (or is installing) the snapshot: probe right after it.
      const pending = this.pendingSnapshot;
      this.#resetState(ProgressState.Probe);
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.#resetState(ProgressState.Probe);
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.#resetState(ProgressState.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshot: Snapshot): void {
    this.#resetState(ProgressState.Snapshot);
    this.pendingSnapshot = snapshot.meta.index;
    this.snapshot = snapshot;
    this.next = snapshot.meta.index + 1;
  }

  /**
   * An acknowledgement up to `index` arrived. Returns whether it raised `match`; a stale one (from
   * a reordered or duplicated response) changes nothing.
   */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.msgAppFlowPaused = false;
    }
    if (this.next < index + 1) this.next = index + 1;
    return updated;
  }

  /** An append of `bytes` ending at `lastIndex` (possibly empty) was sent. */
  sentEntries(entries: number, bytes: number, lastIndex: number): void {
    if (this.state === ProgressState.Replicate) {
      if (entries > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex, bytes);
      }
      this.msgAppFlowPaused = this.inflights.full();
    } else if (this.state === ProgressState.Probe) {
      this.msgAppFlowPaused = true;
    }
  }

  /**
   * The follower rejected an append whose previous index was `rejected`, hinting that its log
   * matches at most up to `matchHint`. Returns false for a stale rejection (one that does not
   * concern the current `next`).
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === ProgressState.Replicate) {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      this.sentCommit = Math.min(this.sentCommit, this.next - 1);
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.sentCommit = Math.min(this.sentCommit, this.next - 1);
    this.msgAppFlowPaused = false;
    return true;
  }

  /**
   * Whether an (empty) append carrying `committed` could move the replica's commit index: we have
   * not yet sent it a commit index that takes it all the way to what it holds (next - 1).
   */
  canBumpCommit(committed: number): boolean {
    return committed > this.sentCommit && this.sentCommit < this.next - 1;
  }

  /** Whether the leader must not send an append now. */
  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
      case ProgressState.Replicate:
        return this.msgAppFlowPaused;
      default:
        return true;
    }
  }
}
