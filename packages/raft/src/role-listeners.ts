import type { RoleChange } from './replicated-log.ts';

/** The `onRole` subscriber list every log keeps. Listeners run synchronously, in subscription order. */
export class RoleListeners {
  readonly #listeners = new Set<(change: RoleChange) => void>();

  /** Subscribe; returns the unsubscribe function `ReplicatedLog.onRole` hands out. */
  add(listener: (change: RoleChange) => void): () => void {
    // Wrap so the same function subscribed twice gets two independent subscriptions.
    const entry = (change: RoleChange): void => listener(change);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** Tell every current listener. A listener added while emitting is not called for this change. */
  emit(change: RoleChange): void {
    for (const listener of [...this.#listeners]) listener(change);
  }
}
