import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import { LogClosedError, LogNotOpenError } from './errors.ts';
import type { EntryMeta, ReplicatedLog, Role, RoleChange, StateMachine } from './replicated-log.ts';
import { RoleListeners } from './role-listeners.ts';

export interface InMemoryLogOptions {
  /** Where the leader reads time for `EntryMeta.ts`; defaults to the wall clock. */
  readonly clock?: Clock;
  /** This node's id, reported as the leader in role changes; undefined when the caller has none. */
  readonly nodeId?: string;
}

/** The only term an in-memory log ever has: it never holds an election. */
const IN_MEMORY_TERM = 1;

interface PendingProposal<C, R> {
  readonly command: C;
  readonly meta: EntryMeta;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The log of exclusive and non-durable queues: one replica, always the leader (term 1), nothing
 * stored. A proposal is "committed" as soon as it is made: every proposal made in one turn is
 * applied in one microtask, in proposal order, and its promise resolves with the apply result.
 * Applied entries are forgotten at once, so `compact()` has nothing to do.
 *
 * Invariants: indexes are 1, 2, 3, … in proposal order; each entry is applied exactly once;
 * `ts` never decreases (max(clock, previous ts)) even when the clock steps back.
 *
 * If `apply` throws, that proposal rejects with the thrown error and the entry still counts as
 * applied (a deterministic machine would throw the same way on every replica).
 */
export class InMemoryLog<C, R> implements ReplicatedLog<C, R> {
  readonly groupId: string;
  readonly #clock: Clock;
  readonly #nodeId: string | undefined;
  readonly #roles = new RoleListeners();

  #state: 'new' | 'open' | 'closed' = 'new';
  #machine: StateMachine<C, R> | undefined;
  #lastIndex = 0;
  #lastTs = Number.NEGATIVE_INFINITY;
  /** Proposed, not yet applied; all of them are applied by the next `#applyBatch`. */
  #batch: PendingProposal<C, R>[] = [];
  #applyScheduled = false;

  constructor(groupId: string, options: InMemoryLogOptions = {}) {
    this.groupId = groupId;
    this.#clock = options.clock ?? systemClock;
    this.#nodeId = options.nodeId;
  }

  get role(): Role {
    return 'leader';
  }

  async open(machine: StateMachine<C, R>): Promise<void> {
    if (this.#state !== 'new') throw new Error(`group ${this.groupId}: open() called twice`);
    this.#machine = machine;
    this.#state = 'open';
    const change: RoleChange = { role: 'leader', term: IN_MEMORY_TERM, leader: this.#nodeId };
    this.#roles.emit(change);
  }

  propose(command: C): Promise<R> {
    if (this.#state === 'closed') return Promise.reject(new LogClosedError(this.groupId));
    if (this.#state === 'new') return Promise.reject(new LogNotOpenError(this.groupId));
    const now = this.#clock.now();
    const ts = now > this.#lastTs ? now : this.#lastTs;
    this.#lastTs = ts;
    const meta: EntryMeta = { index: ++this.#lastIndex, term: IN_MEMORY_TERM, ts };
    return new Promise<R>((resolve, reject) => {
      this.#batch.push({ command, meta, resolve, reject });
      if (!this.#applyScheduled) {
        this.#applyScheduled = true;
        queueMicrotask(this.#applyBatch);
      }
    });
  }

  onRole(listener: (change: RoleChange) => void): () => void {
    return this.#roles.add(listener);
  }

  async compact(): Promise<void> {
    // Nothing is kept after apply, so there is nothing to truncate.
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    const pending = this.#batch;
    this.#batch = [];
    for (const proposal of pending) proposal.reject(new LogClosedError(this.groupId));
  }

  async destroy(): Promise<void> {
    await this.close();
  }

  /** Apply everything proposed since the last batch. An arrow so it can go to queueMicrotask as is. */
  readonly #applyBatch = (): void => {
    this.#applyScheduled = false;
    // Swap first: an apply (or a resolved promise's handler, later) may propose again; those
    // proposals start the next batch instead of growing this one while it is iterated.
    const batch = this.#batch;
    this.#batch = [];
    const machine = this.#machine;
    for (let i = 0; i < batch.length; i++) {
      const proposal = batch[i] as PendingProposal<C, R>;
      // close() from inside an apply fails the rest of the batch, as it fails any pending proposal.
      if (this.#state !== 'open' || machine === undefined) {
        proposal.reject(new LogClosedError(this.groupId));
        continue;
      }
      let result: R;
      try {
        result = machine.apply(proposal.command, proposal.meta);
      } catch (error) {
        proposal.reject(error);
        continue;
      }
      proposal.resolve(result);
    }
  };
}
