// A minimal, browser-safe subset of Node's EventEmitter, typed by an event map. It keeps the
// semantics amqplib users rely on: listeners run synchronously in registration order, `once`
// listeners are removed before they run, and emitting 'error' with no listener throws the error.

/** Event name → listener arguments. */
export type EventMap = Record<string, unknown[]>;

type Listener<A extends unknown[]> = (...args: A) => void;

interface Registration {
  listener: (...args: never[]) => void;
  once: boolean;
}

/** Node-compatible `on`/`once`/`off`/`emit` for the events in `E`. */
export class Emitter<E extends EventMap> {
  #listeners = new Map<keyof E, Registration[]>();

  #add<K extends keyof E>(event: K, listener: Listener<E[K]>, once: boolean, prepend: boolean): this {
    const list = this.#listeners.get(event) ?? [];
    const reg: Registration = { listener: listener as unknown as (...args: never[]) => void, once };
    // Copy on write: an emit in progress keeps iterating the list it started with.
    this.#listeners.set(event, prepend ? [reg, ...list] : [...list, reg]);
    return this;
  }

  /** Adds a listener. */
  on<K extends keyof E>(event: K, listener: Listener<E[K]>): this {
    return this.#add(event, listener, false, false);
  }

  /** Alias of on(). */
  addListener<K extends keyof E>(event: K, listener: Listener<E[K]>): this {
    return this.on(event, listener);
  }

  /** Adds a listener that runs at most once. */
  once<K extends keyof E>(event: K, listener: Listener<E[K]>): this {
    return this.#add(event, listener, true, false);
  }

  /** Adds a listener before the existing ones. */
  prependListener<K extends keyof E>(event: K, listener: Listener<E[K]>): this {
    return this.#add(event, listener, false, true);
  }

  /** Removes the most recently added registration of `listener`. */
  off<K extends keyof E>(event: K, listener: Listener<E[K]>): this {
    const list = this.#listeners.get(event);
    if (list === undefined) return this;
    const fn = listener as unknown as (...args: never[]) => void;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]?.listener === fn) {
        const next = [...list.slice(0, i), ...list.slice(i + 1)];
        if (next.length === 0) this.#listeners.delete(event);
        else this.#listeners.set(event, next);
        break;
      }
    }
    return this;
  }

  /** Alias of off(). */
  removeListener<K extends keyof E>(event: K, listener: Listener<E[K]>): this {
    return this.off(event, listener);
  }

  /** Removes every listener of `event`, or of every event. */
  removeAllListeners(event?: keyof E): this {
    if (event === undefined) this.#listeners.clear();
    else this.#listeners.delete(event);
    return this;
  }

  /** The number of listeners of `event`. */
  listenerCount(event: keyof E): number {
    return this.#listeners.get(event)?.length ?? 0;
  }

  /** The listeners of `event`, in call order. */
  listeners<K extends keyof E>(event: K): Listener<E[K]>[] {
    return (this.#listeners.get(event) ?? []).map((r) => r.listener as unknown as Listener<E[K]>);
  }

  /**
   * Calls the listeners of `event` in order; true if there were any. 'error' with no listener throws
   * its argument, as Node's EventEmitter does.
   */
  emit<K extends keyof E>(event: K, ...args: E[K]): boolean {
    const list = this.#listeners.get(event);
    if (list === undefined || list.length === 0) {
      if (event === 'error') {
        const err = args[0];
        throw err instanceof Error ? err : new Error(`Unhandled error. (${String(err)})`);
      }
      return false;
    }
    for (const reg of list) {
      if (reg.once) this.off(event, reg.listener as unknown as Listener<E[K]>);
      (reg.listener as unknown as Listener<E[K]>)(...args);
    }
    return true;
  }
}
