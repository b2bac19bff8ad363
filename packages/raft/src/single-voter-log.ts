import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import { LogClosedError, LogCorruptedError, LogFailedError, notOpenError } from './errors.ts';
import { ProposalQueue } from './proposal-queue.ts';
import type {
  CommandCodec,
  EntryMeta,
  ReplicatedLog,
  ReplicatedLogFactory,
  Role,
  RoleChange,
  StateMachine,
} from './replicated-log.ts';
import { RoleListeners } from './role-listeners.ts';
import type { LogStore } from './storage/log-store.ts';

export interface SingleVoterLogOptions {
  /** Where the leader reads time for `EntryMeta.ts`; defaults to the wall clock. */
  readonly clock?: Clock;
  /** This node's id, reported as the leader in role changes. */
  readonly nodeId?: string;
}

/** The term of entries a single voter writes: it never holds an election. */
const SINGLE_VOTER_TERM = 1;
/** Consumed slots at the head of the pending queue before it is compacted (entries). */

interface PendingProposal<C, R> {
  readonly command: C;
  readonly meta: EntryMeta;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The log of a durable queue on one node: a group of one voter on the node's `LogStore`, without a
 * network. propose → append to the store's current batch → the batch's sync completes → commit →
 * apply → resolve. An entry is committed exactly when it is durable, since this voter is the whole
 * quorum.
 *
 * Invariants:
 * - indexes are assigned at propose time, consecutively; `ts` = max(clock, previous ts), and the
 *   previous ts survives restarts (it is read back from the snapshot and the replayed entries);
 * - `#applied` only grows by one per applied entry: each index is applied exactly once per
 *   incarnation (replay on `open`, then live entries), never after `close`;
 * - nothing is applied, and no proposal resolves, before the store reports the entry durable.
 *
 * If `apply` throws, that proposal rejects with the thrown error and the entry still counts as
 * applied (a deterministic machine throws again on replay, where the error is dropped).
 * `LogClosedError` or `LogFailedError` on a proposal means "outcome unknown": its entry may already
 * be durable and will then be applied by the next incarnation. The live path applies the proposed
 * command object itself, replay applies `codec.decode(codec.encode(command))`: the codec must
 * round-trip exactly.
 */
export class SingleVoterLog<C, R> implements ReplicatedLog<C, R> {
  readonly groupId: string;
  readonly #store: LogStore;
  readonly #codec: CommandCodec<C>;
  readonly #clock: Clock;
  readonly #nodeId: string | undefined;
  readonly #roles = new RoleListeners();

  #state: 'new' | 'opening' | 'open' | 'closed' | 'failed' = 'new';
  #failure: LogFailedError | undefined;
  #machine: StateMachine<C, R> | undefined;
  #term = SINGLE_VOTER_TERM;
  #lastIndex = 0;
  #lastTs = Number.NEGATIVE_INFINITY;
  #applied = 0;
  #appliedTs = Number.NEGATIVE_INFINITY;
  /** Index of the latest snapshot stored (or restored); compaction below it has nothing to do. */
  #snapshotIndex = 0;
  /** Proposed, not yet applied, in index order. */
  readonly #pending = new ProposalQueue<PendingProposal<C, R>>();
  /** The store batch the latest proposal joined, and the highest index this log put in it. */
  #batch: Promise<void> | undefined;
  #batchMark: { last: number } = { last: 0 };

  constructor(groupId: string, store: LogStore, codec: CommandCodec<C>, options: SingleVoterLogOptions = {}) {
    this.groupId = groupId;
    this.#store = store;
    this.#codec = codec;
    this.#clock = options.clock ?? systemClock;
    this.#nodeId = options.nodeId;
  }

  get role(): Role {
    return 'leader';
  }

  async open(machine: StateMachine<C, R>): Promise<void> {
    if (this.#state !== 'new') throw new Error(`group ${this.groupId}: open() called twice`);
    this.#state = 'opening';
    this.#machine = machine;
    // A previous incarnation's writes may still be in flight (close() does not wait for them):
    // read only once they are durable, or the replay would miss entries the next append overwrites.
    try {
      await this.#store.sync();
      if (this.#state !== 'opening') return; // closed while waiting
      this.#replay(machine);
    } catch (error) {
      // The store failed, the stored log is corrupted, or restore threw: this incarnation is done.
      this.#state = 'failed';
      this.#failure = new LogFailedError(this.groupId, error);
      throw error instanceof LogCorruptedError ? error : this.#failure;
    }
    this.#state = 'open';
    const change: RoleChange = { role: 'leader', term: this.#term, leader: this.#nodeId };
    this.#roles.emit(change);
  }

  propose(command: C): Promise<R> {
    if (this.#state !== 'open') return Promise.reject(this.#notOpenError());
    let payload: Uint8Array;
    try {
      payload = this.#codec.encode(command);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = this.#clock.now();
    const ts = now > this.#lastTs ? now : this.#lastTs;
    this.#lastTs = ts;
    const index = ++this.#lastIndex;
    const meta: EntryMeta = { index, term: this.#term, ts };
    const result = new Promise<R>((resolve, reject) => {
      this.#pending.push({ command, meta, resolve, reject });
    });
    const batch = this.#store.append(this.groupId, meta, payload);
    if (batch === this.#batch) {
      this.#batchMark.last = index;
    } else {
      // First entry of this log in a new store batch: one continuation per batch, not per entry.
      this.#batch = batch;
      const mark = { last: index };
      this.#batchMark = mark;
      batch.then(
        () => this.#commitUpTo(mark.last),
        (error: unknown) => this.#fail(error),
      );
    }
    return result;
  }

  onRole(listener: (change: RoleChange) => void): () => void {
    return this.#roles.add(listener);
  }

  /**
   * Store `machine.snapshot()` at the applied index and delete the entries up to it, in one batch
   * (so a crash leaves either the old snapshot and its entries or the new snapshot). Resolves once
   * durable.
   */
  async compact(): Promise<void> {
    if (this.#state !== 'open') throw this.#notOpenError();
    const machine = this.#machine;
    if (machine === undefined || this.#applied <= this.#snapshotIndex) return;
    const meta: EntryMeta = { index: this.#applied, term: this.#term, ts: this.#appliedTs };
    const data = machine.snapshot();
    this.#snapshotIndex = meta.index;
    const stored = this.#store.putSnapshot(this.groupId, meta, data);
    this.#store.truncateBefore(this.groupId, meta.index + 1);
    try {
      await stored;
    } catch (error) {
      throw new LogFailedError(this.groupId, error);
    }
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#failPending(new LogClosedError(this.groupId));
  }

  async destroy(): Promise<void> {
    await this.close();
    try {
      await this.#store.deleteGroup(this.groupId);
    } catch (error) {
      throw new LogFailedError(this.groupId, error);
    }
  }

  /** Restore the latest snapshot, then apply every stored entry after it, in order. */
  #replay(machine: StateMachine<C, R>): void {
    const snapshot = this.#store.snapshot(this.groupId);
    if (snapshot !== undefined) {
      machine.restore(snapshot.data, snapshot.meta);
      this.#applied = this.#lastIndex = this.#snapshotIndex = snapshot.meta.index;
      this.#appliedTs = this.#lastTs = snapshot.meta.ts;
      this.#term = Math.max(this.#term, snapshot.meta.term);
    }
    for (const entry of this.#store.entries(this.groupId, this.#applied + 1)) {
      if (entry.index !== this.#applied + 1) {
        throw new LogCorruptedError(
          this.groupId,
          `expected entry ${this.#applied + 1}, found ${entry.index}`,
        );
      }
      const meta: EntryMeta = { index: entry.index, term: entry.term, ts: entry.ts };
      try {
        machine.apply(this.#codec.decode(entry.payload), meta);
      } catch {
        // Deterministic: the live apply threw the same way and rejected its proposal then.
      }
      this.#applied = this.#lastIndex = entry.index;
      this.#appliedTs = entry.ts;
      if (entry.ts > this.#lastTs) this.#lastTs = entry.ts;
      if (entry.term > this.#term) this.#term = entry.term;
    }
  }

  /** The store made every entry up to `index` durable: apply and resolve them in order. */
  #commitUpTo(index: number): void {
    const machine = this.#machine;
    while (this.#state === 'open' && machine !== undefined) {
      const proposal = this.#pending.peek();
      if (proposal === undefined || proposal.meta.index > index) break;
      this.#pending.shift();
      if (proposal.meta.index !== this.#applied + 1) {
        throw new Error(`group ${this.groupId}: applying ${proposal.meta.index} after ${this.#applied}`);
      }
      this.#applied = proposal.meta.index;
      this.#appliedTs = proposal.meta.ts;
      let result: R;
      try {
        result = machine.apply(proposal.command, proposal.meta);
      } catch (error) {
        proposal.reject(error);
        continue;
      }
      proposal.resolve(result);
    }
  }

  #fail(cause: unknown): void {
    if (this.#state === 'closed' || this.#state === 'failed') return;
    this.#state = 'failed';
    this.#failure = new LogFailedError(this.groupId, cause);
    this.#failPending(this.#failure);
  }

  #failPending(error: Error): void {
    for (const proposal of this.#pending.drain()) proposal.reject(error);
  }

  #notOpenError(): Error {
    return notOpenError(this.groupId, this.#state, this.#failure);
  }
}

/** Creates single-voter logs over the node's one log store. */
export class SingleVoterLogFactory implements ReplicatedLogFactory {
  readonly #store: LogStore;
  readonly #options: SingleVoterLogOptions;

  constructor(store: LogStore, options: SingleVoterLogOptions = {}) {
    this.#store = store;
    this.#options = options;
  }

  create<C, R>(groupId: string, codec: CommandCodec<C>): ReplicatedLog<C, R> {
    return new SingleVoterLog<C, R>(groupId, this.#store, codec, this.#options);
  }
}
