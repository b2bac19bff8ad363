// The FIFO of a channel's outstanding synchronous requests. The server answers a channel's
// requests in the order they were sent, so the reply to arrive next always belongs to the oldest
// outstanding request: requests can be pipelined (sent without waiting for earlier replies).
import type { Frame, MethodName } from '../wire/index.ts';

/** One outstanding request. */
export interface PendingRpc {
  /** The request's method, for error messages and to match a server close to its cause. */
  readonly method: MethodName;
  /** The reply methods that answer it (basicGet: basicGetOk or basicGetEmpty). */
  readonly expect: readonly MethodName[];
  /** Runs synchronously when the reply is dispatched, before any later frame is. */
  readonly resolve: (reply: Frame) => void;
  readonly reject: (err: Error) => void;
}

/** What take() found for a reply frame. */
export type TakeResult =
  | { kind: 'matched'; rpc: PendingRpc }
  | { kind: 'unexpected'; rpc: PendingRpc }
  | { kind: 'none' };

/** An ordered queue of outstanding requests. Unbounded: the caller's awaiting bounds it. */
export class RpcQueue {
  #items: PendingRpc[] = [];
  #head = 0;

  /** Outstanding requests. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  /** The oldest outstanding request, if any. */
  peek(): PendingRpc | undefined {
    return this.#items[this.#head];
  }

  push(rpc: PendingRpc): void {
    this.#items.push(rpc);
  }

  /**
   * Removes and returns the oldest request for `reply`: 'matched' if the reply's method is one it
   * expects, 'unexpected' if not (still removed: the channel is broken either way), 'none' if
   * nothing was outstanding.
   */
  take(reply: Frame): TakeResult {
    const rpc = this.#items[this.#head];
    if (rpc === undefined) return { kind: 'none' };
    this.#items[this.#head] = undefined as unknown as PendingRpc;
    this.#head++;
    // Compact once the consumed prefix dominates, keeping shift O(1) amortised.
    if (this.#head > 32 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return rpc.expect.includes(reply.method) ? { kind: 'matched', rpc } : { kind: 'unexpected', rpc };
  }

  /** Removes every outstanding request, oldest first, and rejects each with errorFor(rpc, index). */
  rejectAll(errorFor: (rpc: PendingRpc, index: number) => Error): void {
    const items = this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    for (let i = 0; i < items.length; i++) {
      const rpc = items[i] as PendingRpc;
      rpc.reject(errorFor(rpc, i));
    }
  }
}
