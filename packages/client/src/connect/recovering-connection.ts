// A connection that survives the loss of its node: on an unexpected close it reconnects to the
// next URL with back-off and jitter and re-runs the application's `setup` (amqplib 2's recovery
// shape). Shared by Node and browsers: timers only.
//
// States: open (a live Connection, setup done) → recovering (waiting out a delay, or dialling and
// running setup) → open again; and closed, from close() or when recovery gives up. A deliberate
// close() never recovers.
//
// The contract for what the application holds:
// - Channels are not carried over. A loss closes every channel of the lost connection ('close',
//   no 'error'); operations on them then fail with IllegalOperationError; every unconfirmed
//   publish of a confirm channel fails with ConfirmError('channel-closed') whose `cause` is the loss
//   (callback error, waitForConfirms() rejects). `setup` re-creates channels, topology and
//   consumers on each new connection; keep references to what it creates, not to older channels.
// - createChannel()/createConfirmChannel() called while recovering wait for the next connection
//   (and reject if recovery gives up or close() is called).
import type { Channel, ConfirmChannel } from '../channel/channel.ts';
import type { ChannelOptions } from '../channel/types.ts';
import type { Connection } from '../connection/connection.ts';
import { Emitter } from '../emitter.ts';
import { IllegalOperationError, NodesUnreachableError, stackCapture } from '../errors.ts';
import type { BackoffPolicy } from './backoff.ts';
import { backoffDelay } from './backoff.ts';
import { asError, firstReachable, isRefusal } from './first-reachable.ts';

/** connect()'s `recover` option: turns on recovery and says how to rebuild on a new connection. */
export interface RecoverOptions {
  /**
   * Declares topology, creates channels and starts consumers on `connection`. Runs on the first
   * connection (connect() rejects if it throws) and again on every new connection after a loss
   * (a throw there counts as a failed attempt and recovery moves on to the next URL).
   */
  setup(connection: Connection): Promise<void> | void;
  /** Floor of the delay between reconnect attempts, in ms (default 100). */
  minDelayMs?: number;
  /** Ceiling of the delay between reconnect attempts, in ms (default 10 000). */
  maxDelayMs?: number;
  /**
   * Reconnect attempts after one loss before giving up with NodesUnreachableError (default
   * Infinity: keep trying). A refusal (403/530) gives up at once.
   */
  maxAttempts?: number;
  /** Random source in [0, 1) for the jitter (default Math.random); tests inject their own. */
  random?: () => number;
}

/** RecoveringConnection's events and their listener arguments. */
export interface RecoveringConnectionEvents {
  [event: string]: unknown[];
  /** The connection was lost unexpectedly (the argument says why); recovery starts. */
  disconnected: [Error];
  /** A new connection is open and `setup` has run on it (the argument); the URL's index is given. */
  recovered: [Connection, number];
  /**
   * Recovery gave up (NodesUnreachableError after maxAttempts, or a 403/530 refusal). Emitted only
   * if there is a listener (a give-up always emits 'close' with the same error).
   */
  error: [Error];
  /** The connection is closed for good: undefined after close(), the error when recovery gave up. */
  close: [Error | undefined];
  /** Forwarded from the current connection. */
  blocked: [string];
  unblocked: [];
}

/** What a RecoveringConnection needs: how to open one connection, and the recovery options. */
export interface RecoveringConnectionComponents {
  /** Number of URLs; dial(i) opens a connection to the i-th. */
  urlCount: number;
  dial(index: number): Promise<Connection>;
  setup: RecoverOptions['setup'];
  backoff: BackoffPolicy;
  maxAttempts: number;
  random: () => number;
}

type RecoveryState = 'starting' | 'open' | 'recovering' | 'closed';

/** A connection that reconnects after a loss; see the file comment for the exact contract. */
export class RecoveringConnection extends Emitter<RecoveringConnectionEvents> {
  #c: RecoveringConnectionComponents;
  #state: RecoveryState = 'starting';
  #current: Connection | null = null;
  /** The URL index of the current connection, or of the last attempt while recovering. */
  #index = 0;
  /** Attempts made in the current recovery. */
  #attempts = 0;
  #lastError: Error | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #waiters: { resolve(c: Connection): void; reject(err: Error): void }[] = [];

  /** @internal Use connect(urls, { recover }). */
  constructor(components: RecoveringConnectionComponents) {
    super();
    this.#c = components;
  }

  /** The live connection, or null while recovering or once closed. */
  get connection(): Connection | null {
    return this.#state === 'open' ? this.#current : null;
  }

  /** The index, in connect()'s URL list, of the node currently (or last) connected to. */
  get urlIndex(): number {
    return this.#index;
  }

  /** @internal Connects to the first reachable URL, in order, and runs setup there. */
  async _start(): Promise<this> {
    // A setup bug is not a node failure: connect() rejects with it rather than trying other nodes.
    let setupError: unknown = null;
    const { value, index } = await firstReachable(
      this.#c.urlCount,
      async (i) => {
        const conn = await this.#c.dial(i);
        try {
          return await this.#setUp(conn);
        } catch (err) {
          setupError = err;
          throw err;
        }
      },
      (err) => isRefusal(err) || err === setupError,
    );
    this.#adopt(value, index);
    return this;
  }

  /** Opens a channel on the current connection (waiting for recovery to finish if needed). */
  async createChannel(options?: ChannelOptions): Promise<Channel> {
    return (await this.#connected()).createChannel(options);
  }

  /** Opens a confirm channel on the current connection (waiting for recovery to finish if needed). */
  async createConfirmChannel(options?: ChannelOptions): Promise<ConfirmChannel> {
    return (await this.#connected()).createConfirmChannel(options);
  }

  /** Closes the connection for good: stops any recovery; never reconnects afterwards. */
  async close(): Promise<void> {
    if (this.#state === 'closed') throw new IllegalOperationError('Connection closed', stackCapture('close'));
    this.#state = 'closed';
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#rejectWaiters(new IllegalOperationError('Connection closed', stackCapture('close called')));
    const conn = this.#current;
    this.#current = null;
    try {
      if (conn !== null) await conn.close();
    } catch {
      // Already closed under us: the result is the same.
    }
    this.emit('close', undefined);
  }

  // ------------------------------------------------------------ internals

  /**
   * Runs setup on a fresh connection. Listens for its loss first, so a loss during setup fails the
   * attempt (and a loss after adoption starts recovery).
   */
  async #setUp(conn: Connection): Promise<Connection> {
    let lostDuringSetup: Error | null = null;
    conn.on('error', () => {
      // Reported through 'close' below; a listener keeps the Emitter from throwing.
    });
    conn.on('close', (err) => {
      if (this.#current === conn) this.#lost(err ?? new Error('Connection closed by the server'));
      else lostDuringSetup = err ?? new Error('Connection closed during setup');
    });
    conn.on('blocked', (reason) => {
      if (this.#current === conn) this.emit('blocked', reason);
    });
    conn.on('unblocked', () => {
      if (this.#current === conn) this.emit('unblocked');
    });
    try {
      await this.#c.setup(conn);
    } catch (err) {
      await conn.close().catch(() => undefined);
      throw err;
    }
    if (lostDuringSetup !== null) throw lostDuringSetup;
    if (this.#state === 'closed') {
      // close() was called while this attempt was in flight.
      await conn.close().catch(() => undefined);
      throw new IllegalOperationError('Connection closed', stackCapture('close called during setup'));
    }
    return conn;
  }

  #adopt(conn: Connection, index: number): void {
    this.#current = conn;
    this.#index = index;
    this.#state = 'open';
    this.#attempts = 0;
    this.#lastError = null;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w.resolve(conn);
  }

  #lost(err: Error): void {
    if (this.#state !== 'open') return;
    this.#current = null;
    this.#state = 'recovering';
    this.#lastError = err;
    this.emit('disconnected', err);
    this.#scheduleAttempt();
  }

  #scheduleAttempt(): void {
    if (this.#state !== 'recovering') return;
    if (this.#attempts >= this.#c.maxAttempts) {
      this.#giveUp(new NodesUnreachableError(this.#attempts, this.#lastError ?? new Error('unknown')));
      return;
    }
    const delay = backoffDelay(this.#attempts, this.#c.backoff, this.#c.random);
    this.#attempts++;
    // Round robin from the node after the lost one, so a dead node is tried last.
    const index = (this.#index + 1) % this.#c.urlCount;
    this.#index = index;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#attempt(index);
    }, delay);
  }

  async #attempt(index: number): Promise<void> {
    let conn: Connection;
    try {
      conn = await this.#setUp(await this.#c.dial(index));
    } catch (err) {
      if (this.#state !== 'recovering') return;
      this.#lastError = asError(err);
      if (isRefusal(err)) this.#giveUp(this.#lastError);
      else this.#scheduleAttempt();
      return;
    }
    if (this.#state !== 'recovering') {
      await conn.close().catch(() => undefined);
      return;
    }
    this.#adopt(conn, index);
    this.emit('recovered', conn, index);
  }

  #giveUp(err: Error): void {
    this.#state = 'closed';
    this.#rejectWaiters(err);
    if (this.listenerCount('error') > 0) this.emit('error', err);
    this.emit('close', err);
  }

  #connected(): Promise<Connection> {
    if (this.#state === 'open' && this.#current !== null) return Promise.resolve(this.#current);
    if (this.#state === 'closed') {
      return Promise.reject(new IllegalOperationError('Connection closed', stackCapture('connected')));
    }
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  #rejectWaiters(err: Error): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w.reject(err);
  }
}
