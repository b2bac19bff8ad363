import { ReplyCode } from '@styx/client/wire';

/**
 * Protocol errors, scoped as in AMQP 0-9-1: a channel error closes only the offending channel
 * (404, 405, 406, 403 after the handshake), a connection error closes the whole connection
 * (501 FRAME_ERROR, 502 SYNTAX_ERROR, 503 COMMAND_INVALID, 504 CHANNEL_ERROR, 530 NOT_ALLOWED,
 * 540 NOT_IMPLEMENTED, 541 INTERNAL_ERROR). Handlers throw these; the connection turns them into a
 * ChannelClose or ConnectionClose frame and never lets them crash the node.
 */
/** AMQP reply codes, shared with the client (one registry for both sides of the wire). */
export const Code = ReplyCode;

/** Closes the channel it happened on. */
export class ChannelError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
    this.name = 'ChannelError';
  }
}

/** Closes the connection it happened on. */
export class ConnectionError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
    this.name = 'ConnectionError';
  }
}

export const notFound = (text: string): ChannelError => new ChannelError(Code.NOT_FOUND, text);
export const preconditionFailed = (text: string): ChannelError =>
  new ChannelError(Code.PRECONDITION_FAILED, text);
export const accessRefused = (text: string): ChannelError => new ChannelError(Code.ACCESS_REFUSED, text);
