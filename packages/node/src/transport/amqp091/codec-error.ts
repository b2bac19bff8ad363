import { ReplyCode } from '@styx/client/wire';
import { ConnectionError } from '../../errors/amqp-error.ts';

/**
 * Bytes from the peer that the AMQP 0-9-1 codec cannot accept. Every such error is a connection
 * error (AMQP closes the whole connection for a frame it cannot parse), so this extends
 * ConnectionError: `code` is the reply code for the connection.close, and `classId`/`methodId`
 * name the method that failed (0/0 when the frame never got that far), for connection.close's
 * class-id and method-id fields.
 */
export class AmqpCodecError extends ConnectionError {
  /** The class of the method being decoded when it failed; 0 if none. */
  readonly classId: number;
  /** The method being decoded when it failed; 0 if none. */
  readonly methodId: number;

  constructor(code: number, message: string, classId = 0, methodId = 0) {
    super(code, message);
    this.name = 'AmqpCodecError';
    this.classId = classId;
    this.methodId = methodId;
  }
}

/** 501 FRAME_ERROR: a malformed frame (bad frame-end, too large, truncated fields, body overrun). */
export function frameError(message: string, classId = 0, methodId = 0): AmqpCodecError {
  return new AmqpCodecError(ReplyCode.FRAME_ERROR, message, classId, methodId);
}

/** 502 SYNTAX_ERROR: a frame that parses but carries an illegal value (unknown table tag, property). */
export function syntaxError(message: string, classId = 0, methodId = 0): AmqpCodecError {
  return new AmqpCodecError(ReplyCode.SYNTAX_ERROR, message, classId, methodId);
}

/** 505 UNEXPECTED_FRAME: a frame of a type that may not come now (a body with no method before it). */
export function unexpectedFrame(message: string, classId = 0, methodId = 0): AmqpCodecError {
  return new AmqpCodecError(ReplyCode.UNEXPECTED_FRAME, message, classId, methodId);
}

/** 540 NOT_IMPLEMENTED: a class/method id pair the spec does not define. */
export function notImplemented(message: string, classId = 0, methodId = 0): AmqpCodecError {
  return new AmqpCodecError(ReplyCode.NOT_IMPLEMENTED, message, classId, methodId);
}

/**
 * A value our side asked to encode that AMQP cannot carry (a shortstr over 255 bytes, an octet of
 * 300): a bug or unchecked input on the sending side, never the peer's fault, so it is not an
 * AmqpCodecError and must not be sent as a connection.close reason to the peer.
 */
export class AmqpEncodeError extends Error {
  /** Stable code for callers that branch on it. */
  readonly code = 'AMQP_ENCODE';
  constructor(message: string) {
    super(message);
    this.name = 'AmqpEncodeError';
  }
}
