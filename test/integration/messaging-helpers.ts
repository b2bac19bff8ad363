// Shared plumbing for the messaging-model integration tests: one broker process per test file,
// connections that are always closed, bounded waits, and small readers for queues and consumers.
// Every wait here has a timeout, so a broker that misbehaves fails a test instead of hanging it.
import type { Channel, ConfirmChannel, Connection, ConsumeMessage, GetMessage } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { BrokerProcess, StartOptions } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';

/** Default bound on any single wait, ms: generous, since a loaded CI machine is slow, not wrong. */
export const WAIT_MS = 5_000;

/** An error as the SDK reports a server close: `code` is the AMQP reply code. */
export type CodedError = Error & { code?: number };

/** A connection plus what happened to it, recorded by listeners attached at connect time. */
export interface TrackedConnection {
  readonly conn: Connection;
  /** Every 'error' the connection emitted (a connection error close, a transport failure). */
  readonly errors: CodedError[];
  /** Resolves with the close error (undefined for a clean close) once the connection is closed. */
  readonly closed: Promise<Error | undefined>;
}

/**
 * Start one broker for the enclosing test file (with `options`, e.g. its management API) and give
 * each test a way to open connections that are closed after it. Call at the top level of a file
 * (or a describe block).
 */
export function useBroker(options: StartOptions = {}): {
  broker(): BrokerProcess;
  /** Connect as guest to vhost '/' (or `path`, appended to the URL); closed after the test. */
  connect(path?: string): Promise<Connection>;
  /** Like connect, but with the connection's errors and close recorded. */
  connectTracked(path?: string): Promise<TrackedConnection>;
} {
  let broker: BrokerProcess | undefined;
  const open: Connection[] = [];
  beforeAll(async () => {
    broker = await startBroker(options);
  });
  afterEach(async () => {
    const conns = open.splice(0);
    await Promise.all(conns.map((c) => withTimeout(c.close(), WAIT_MS, 'connection close').catch(() => {})));
  });
  afterAll(async () => {
    if (broker === undefined) return;
    await broker.stop();
    await broker.cleanup();
  });
  const current = (): BrokerProcess => {
    if (broker === undefined) throw new Error('broker not started');
    return broker;
  };
  const connectTracked = async (path = ''): Promise<TrackedConnection> => {
    const conn = await withTimeout(amqp.connect(`${current().url}${path}`), WAIT_MS, 'connect');
    open.push(conn);
    const errors: CodedError[] = [];
    // Without a listener a connection error would be thrown from the socket handler (as amqplib).
    conn.on('error', (err) => errors.push(err as CodedError));
    const closed = new Promise<Error | undefined>((resolve) => conn.once('close', (err) => resolve(err)));
    return { conn, errors, closed };
  };
  return {
    broker: current,
    connect: async (path) => (await connectTracked(path)).conn,
    connectTracked,
  };
}

/**
 * A management API call as guest against `baseUrl` (JSON in and out, bounded). The status is the
 * caller's to check; an empty answer is `undefined`.
 */
export async function guestApi(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await withTimeout(
    fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    WAIT_MS,
    `${method} ${path}`,
  );
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** `promise`, or a rejection naming `what` after `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `check` every `intervalMs` until it returns true; reject after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = WAIT_MS,
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** The error `promise` rejects with; fails if it resolves or does not settle in time. */
export async function rejectionOf(promise: Promise<unknown>, what = 'a rejection'): Promise<CodedError> {
  let outcome: { value: unknown } | undefined;
  try {
    outcome = { value: await withTimeout(promise, WAIT_MS, what) };
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('timed out after')) throw err;
    return err as CodedError;
  }
  throw new Error(`expected ${what}, but it resolved with ${JSON.stringify(outcome.value)}`);
}

/** Resolves once the channel has closed, with the error it emitted (if any). */
export function channelClosed(ch: Channel): Promise<CodedError | undefined> {
  let error: CodedError | undefined;
  ch.on('error', (err) => {
    error = err as CodedError;
  });
  return withTimeout(
    new Promise<CodedError | undefined>((resolve) => ch.once('close', () => resolve(error))),
    WAIT_MS,
    `channel ${ch.ch} to close`,
  );
}

/** Every message in `queue`, taken with noAck basic.get, as body strings in order. */
export async function drain(ch: Channel, queue: string): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const msg = await ch.get(queue, { noAck: true });
    if (msg === false) return out;
    out.push(msg.content.toString());
  }
}

/** The one message basic.get finds (noAck unless told otherwise); fails when the queue is empty. */
export async function getOne(ch: Pick<Channel, 'get'>, queue: string, noAck = true): Promise<GetMessage> {
  const msg = await ch.get(queue, { noAck });
  if (msg === false) throw new Error(`queue '${queue}' is empty`);
  return msg;
}

/** Publish each body to `queue` through the default exchange and wait for every confirm. */
export async function fill(
  ch: ConfirmChannel,
  queue: string,
  bodies: readonly string[],
  options?: amqp.PublishOptions,
): Promise<void> {
  for (const body of bodies) ch.sendToQueue(queue, Buffer.from(body), options);
  await withTimeout(ch.waitForConfirms(), WAIT_MS, 'publisher confirms');
}

/** The outcome of one confirmed publish: 'ack', or 'nack' when the callback gets an error. */
export function confirmOutcome(
  ch: {
    publish(
      exchange: string,
      routingKey: string,
      content: Buffer,
      options: amqp.PublishOptions | undefined,
      callback: (err: Error | null) => void,
    ): boolean;
  },
  exchange: string,
  routingKey: string,
  body: string,
  options?: amqp.PublishOptions,
): Promise<'ack' | 'nack'> {
  return withTimeout(
    new Promise<'ack' | 'nack'>((resolve) => {
      ch.publish(exchange, routingKey, Buffer.from(body), options, (err) =>
        resolve(err === null ? 'ack' : 'nack'),
      );
    }),
    WAIT_MS,
    `the confirm of '${body}'`,
  );
}

/**
 * The deliveries of a consumer, in arrival order, with bounded waits for the next ones. A server
 * cancel (null) is recorded as `cancelled`.
 */
export class Inbox {
  readonly messages: ConsumeMessage[] = [];
  cancelled = false;
  private waiters: (() => void)[] = [];

  /** The consumer callback to pass to `consume`. */
  readonly onMessage = (msg: ConsumeMessage | null): void => {
    if (msg === null) this.cancelled = true;
    else this.messages.push(msg);
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  };

  /** Bodies received so far, as strings. */
  bodies(): string[] {
    return this.messages.map((m) => m.content.toString());
  }

  /** Wait until at least `count` messages arrived; the first `count` of them. */
  async atLeast(count: number, timeoutMs = WAIT_MS): Promise<ConsumeMessage[]> {
    await this.until(() => this.messages.length >= count, `${count} deliveries`, timeoutMs);
    return this.messages.slice(0, count);
  }

  /** Wait until the server cancels the consumer. */
  async cancellation(timeoutMs = WAIT_MS): Promise<void> {
    await this.until(() => this.cancelled, 'a server cancel', timeoutMs);
  }

  private until(done: () => boolean, what: string, timeoutMs: number): Promise<void> {
    if (done()) return Promise.resolve();
    return withTimeout(
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (done()) resolve();
          else this.waiters.push(check);
        };
        this.waiters.push(check);
      }),
      timeoutMs,
      `${what} (have ${this.messages.length}: ${JSON.stringify(this.bodies())})`,
    );
  }
}

/** A unique name per call, so tests sharing a broker never collide. */
let counter = 0;
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}.${process.pid}.${counter}`;
}
