// The SDK's errors. Messages follow amqplib's wording where amqplib has one, so code that matches
// on them keeps working; `code` is the AMQP reply code wherever one applies.
import { ReplyCode, replyCodeName } from './wire/index.ts';

/** amqplib's rendering of a close: `404 (NOT-FOUND) with message "..."`. */
export function closeMessage(code: number, text: string): string {
  return `${code} (${replyCodeName(code).replace(/_/g, '-')}) with message "${text}"`;
}

/**
 * An operation on a channel or connection that is closing or closed (amqplib's class and name).
 * `stackAtStateChange` records where the state changed, as amqplib does.
 */
export class IllegalOperationError extends Error {
  override readonly name = 'IllegalOperationError';
  readonly stackAtStateChange: string | undefined;

  constructor(message: string, stackAtStateChange?: string) {
    super(message);
    this.stackAtStateChange = stackAtStateChange;
  }
}

/** The server closed a channel or the connection, or refused the handshake; `code` is its reply code. */
export class ServerCloseError extends Error {
  override readonly name = 'ServerCloseError';
  readonly code: number;

  constructor(message: string, code: number) {
    super(message);
    this.code = code;
  }
}

/** The server broke the protocol (an unexpected frame, a frame on an unknown channel). */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code: number;

  constructor(message: string, code: number, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * A frame larger than the negotiated frameMax; nothing was sent. A message body larger than one
 * frame is sent in parts when the server takes them (Styx nodes announce `body_parts`), so this is
 * a message to an older server, or one whose properties alone do not fit in a frame.
 */
export class MessageTooLargeError extends Error {
  override readonly name = 'MessageTooLargeError';
  readonly code = ReplyCode.CONTENT_TOO_LARGE;
  /** Encoded size of the frame, in bytes. */
  readonly size: number;
  /** The negotiated limit, in bytes. */
  readonly frameMax: number;

  constructor(size: number, frameMax: number) {
    super(`frame of ${size} bytes exceeds the negotiated frameMax of ${frameMax} bytes`);
    this.size = size;
    this.frameMax = frameMax;
  }
}

/** Nothing arrived from the server for two heartbeat intervals (amqplib's message). */
export class HeartbeatTimeoutError extends Error {
  override readonly name = 'HeartbeatTimeoutError';

  constructor() {
    super('Heartbeat timeout');
  }
}

/**
 * A publisher confirm that did not succeed: the server nacked the message ('message nacked'), or
 * the channel closed before it was confirmed ('channel closed'), in amqplib's words.
 */
export class ConfirmError extends Error {
  override readonly name = 'ConfirmError';
  readonly reason: 'nacked' | 'channel-closed';

  /** `cause`: why the channel closed, when the connection under it was lost. */
  constructor(reason: 'nacked' | 'channel-closed', options?: { cause?: unknown }) {
    super(reason === 'nacked' ? 'message nacked' : 'channel closed', options);
    this.reason = reason;
  }
}

/**
 * connect() with several URLs reached none of them, or a recovering connection gave up after
 * `maxAttempts` attempts. `cause` is the last attempt's error; `attempts` counts the attempts made.
 */
export class NodesUnreachableError extends Error {
  override readonly name = 'NodesUnreachableError';
  readonly attempts: number;

  constructor(attempts: number, cause: Error) {
    super(`no Styx node reachable after ${attempts} attempt(s); last error: ${cause.message}`, { cause });
    this.attempts = attempts;
  }
}

/** prefetch(count, true): Styx's replicated queues have no channel-wide prefetch. */
export class GlobalPrefetchError extends Error {
  override readonly name = 'GlobalPrefetchError';
  readonly code = ReplyCode.NOT_IMPLEMENTED;

  constructor() {
    super('channel-wide (global) prefetch is not supported on replicated queues');
  }
}

/** A stack capture for IllegalOperationError.stackAtStateChange (amqplib's format). */
export function stackCapture(reason: string): string {
  const stack = new Error().stack ?? '';
  return `Stack capture: ${reason}\n${stack.split('\n').slice(2).join('\n')}`;
}
