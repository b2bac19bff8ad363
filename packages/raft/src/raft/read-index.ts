import type { NodeId } from './types.ts';

/** A read-index request the leader is confirming its leadership for. */
export interface PendingRead {
  /** The leader's commit index when the request arrived: the read may be served once applied. */
  readonly index: number;
  /** Who asked: the leader itself for local requests, else the follower that forwarded it. */
  readonly from: NodeId;
  readonly context: string;
  /** Heartbeat acknowledgements carrying this request's context (or a later one), by voter. */
  readonly acks: Map<NodeId, boolean>;
}

/**
 * The leader's queue of read-index requests (Raft thesis §6.4, etcd's ReadOnlySafe). A request
 * records the commit index, then the leader broadcasts a heartbeat carrying the request id; once a
 * quorum acknowledges that heartbeat, the leader knows it still led when the request arrived, so
 * every read at or after the recorded index is linearizable. Requests are answered in arrival order,
 * and an acknowledged context confirms every request queued before it too.
 *
 * Bound: `maxPending` requests (the core refuses more).
 */
export class ReadIndexQueue {
  readonly #byContext = new Map<string, PendingRead>();
  #queue: PendingRead[] = [];
  #head = 0;

  get size(): number {
    return this.#queue.length - this.#head;
  }

  has(context: string): boolean {
    return this.#byContext.has(context);
  }

  /** Queue a request; a context already queued is ignored (returns false). */
  add(index: number, from: NodeId, context: string): boolean {
    if (this.#byContext.has(context)) return false;
    const read: PendingRead = { index, from, context, acks: new Map() };
    this.#byContext.set(context, read);
    this.#queue.push(read);
    return true;
  }

  /** Record `from`'s heartbeat acknowledgement of `context`; returns the acks, or undefined if unknown. */
  recordAck(from: NodeId, context: string): ReadonlyMap<NodeId, boolean> | undefined {
    const read = this.#byContext.get(context);
    if (read === undefined) return undefined;
    read.acks.set(from, true);
    return read.acks;
  }

  /** Dequeue and return every request up to and including `context`, oldest first. */
  confirmUpTo(context: string): PendingRead[] {
    const target = this.#byContext.get(context);
    if (target === undefined) return [];
    const confirmed: PendingRead[] = [];
    while (this.#head < this.#queue.length) {
      const read = this.#queue[this.#head++] as PendingRead;
      this.#byContext.delete(read.context);
      confirmed.push(read);
      if (read === target) break;
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
    return confirmed;
  }

  /** The newest queued context (what a heartbeat should carry), or '' when none. */
  lastContext(): string {
    const last = this.#queue[this.#queue.length - 1];
    return this.#head < this.#queue.length && last !== undefined ? last.context : '';
  }

  clear(): void {
    this.#byContext.clear();
    this.#queue = [];
    this.#head = 0;
  }
}
