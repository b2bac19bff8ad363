// The two clients the dead-letter conformance tests run through, behind one amqplib-shaped surface:
// @styx/client over WebSocket and the real amqplib over AMQP 0-9-1. The test bodies use only what is
// typed here, so the very same body runs with either client; what differs between the clients is
// settled here, once, and not in the tests:
// - errors: both clients reject the pending call with an Error carrying `code` (the AMQP reply code)
//   and a message ending `with message "<reply text>"` (amqplib's wording, which the SDK copies).
//   `refusal` turns either into {code, text}. A channel closed by the server also emits 'error' on
//   the channel; amqplib rethrows an 'error' nobody listens to (EventEmitter's rule), which would
//   crash the test process, so every channel and connection made here gets a listener.
// - decoded field tables: both decode an AMQP field table into plain JS the same way (long and
//   short integers as numbers, `T` as {'!': 'timestamp', value: seconds}, arrays, nested tables,
//   key order as on the wire), so x-death compares as plain JS with no normalization; run against
//   RabbitMQ 3.10 the same comparisons hold. The one type they render differently is a byte array
//   (`x`: Buffer in amqplib, Uint8Array in the SDK), which no header in these tests carries: a test
//   that reads one must normalize it here, not in its body.
import type * as styx from '@styx/client';
import { connect as styxConnect } from '@styx/client';
import * as amqplib from 'amqplib';
import { rejectionOf, WAIT_MS, withTimeout } from './messaging-helpers.ts';

/** The channel methods the conformance tests use, with @styx/client's (amqplib's) signatures. */
export type ClientChannel = Pick<
  styx.Channel,
  | 'assertQueue'
  | 'checkQueue'
  | 'deleteQueue'
  | 'assertExchange'
  | 'publish'
  | 'sendToQueue'
  | 'consume'
  | 'get'
  | 'ack'
  | 'nack'
  | 'reject'
  | 'close'
> & {
  // The replies the tests never read are typed loosely: amqplib types an empty reply as `{}`.
  bindQueue(queue: string, source: string, pattern: string, args?: Record<string, unknown>): Promise<unknown>;
  recover(): Promise<unknown>;
  cancel(consumerTag: string): Promise<unknown>;
  prefetch(count: number): Promise<unknown>;
  /** Unroutable mandatory publishes come back here (basic.return). */
  onReturn(listener: (message: styx.ReturnMessage) => void): void;
};

/** A channel in confirm mode: publish takes a callback (null on ack, an Error on nack). */
export type ClientConfirmChannel = Omit<ClientChannel, 'publish' | 'sendToQueue'> &
  Pick<styx.ConfirmChannel, 'waitForConfirms'> & {
    publish(
      exchange: string,
      routingKey: string,
      content: Buffer,
      options?: styx.PublishOptions,
      callback?: (err: Error | null) => void,
    ): boolean;
    sendToQueue(
      queue: string,
      content: Buffer,
      options?: styx.PublishOptions,
      callback?: (err: Error | null) => void,
    ): boolean;
  };

export interface ClientConnection {
  createChannel(): Promise<ClientChannel>;
  createConfirmChannel(): Promise<ClientConfirmChannel>;
  close(): Promise<void>;
}

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/** A client library and the listener it talks to. */
export interface ClientDriver {
  readonly name: string;
  /** Which of a node's listeners this client speaks to. */
  readonly protocol: 'ws' | 'amqp';
  /** Connect to `url` (a ws:// or amqp:// URL without credentials) as guest or `credentials`. */
  connect(url: string, credentials?: Credentials): Promise<ClientConnection>;
}

/** A server refusal as both clients surface it: the AMQP reply code and the server's reply text. */
export interface Refusal {
  readonly code: number;
  readonly text: string;
}

/** The refusal `promise` rejects with; fails if it resolves, or rejects with something else. */
export async function refusal(promise: Promise<unknown>, what = 'a refusal'): Promise<Refusal> {
  const error = await rejectionOf(promise, what);
  const text = /with message "(.*)"$/s.exec(error.message)?.[1];
  if (typeof error.code !== 'number' || text === undefined)
    throw new Error(`expected ${what} with a reply code, got: ${error.message}`);
  return { code: error.code, text };
}

function withCredentials(url: string, credentials: Credentials | undefined): string {
  const u = new URL(url);
  u.username = encodeURIComponent(credentials?.user ?? 'guest');
  u.password = encodeURIComponent(credentials?.password ?? 'guest');
  return u.toString();
}

/** Channel errors are observed through the rejected calls; the listener keeps amqplib from throwing. */
function quiet<T extends { on(event: 'error', listener: (err: Error) => void): unknown }>(emitter: T): T {
  emitter.on('error', () => undefined);
  return emitter;
}

export const styxClient: ClientDriver = {
  name: '@styx/client over WebSocket',
  protocol: 'ws',
  async connect(url, credentials) {
    const conn = quiet(await withTimeout(styxConnect(withCredentials(url, credentials)), WAIT_MS, 'connect'));
    const wrap = <C extends styx.Channel>(ch: C): C & ClientChannel =>
      Object.assign(quiet(ch), {
        onReturn: (listener: (message: styx.ReturnMessage) => void) => void ch.on('return', listener),
      });
    return {
      createChannel: async () => wrap(await conn.createChannel()),
      createConfirmChannel: async () => wrap(await conn.createConfirmChannel()),
      close: () => conn.close(),
    };
  },
};

export const amqplibClient: ClientDriver = {
  name: 'amqplib over AMQP 0-9-1',
  protocol: 'amqp',
  async connect(url, credentials) {
    const conn = quiet(
      await withTimeout(amqplib.connect(withCredentials(url, credentials)), WAIT_MS, 'connect'),
    );
    // amqplib's channels have every method the tests use with the same signatures; the typed
    // assignments below are what the type checker verifies (no cast), so a mismatch fails `tsc -b`.
    const onReturn = (ch: amqplib.Channel) => ({
      onReturn: (listener: (message: styx.ReturnMessage) => void) => void ch.on('return', listener),
    });
    return {
      async createChannel() {
        const ch = quiet(await conn.createChannel());
        const channel: Omit<ClientChannel, 'onReturn'> = ch;
        return Object.assign(channel, onReturn(ch));
      },
      async createConfirmChannel() {
        const ch = quiet(await conn.createConfirmChannel());
        const channel: Omit<ClientConfirmChannel, 'onReturn'> = ch;
        return Object.assign(channel, onReturn(ch));
      },
      close: () => conn.close(),
    };
  },
};
