import { ReplyCode } from './reply-codes.ts';

/**
 * A frame or batch that cannot be decoded, or a value that does not fit the wire schema. `code` is
 * the AMQP reply code the receiver should close the connection with (502 SYNTAX_ERROR for bytes
 * that do not decode), so a broker can pass it straight into a ConnectionClose.
 */
export class WireError extends Error {
  override readonly name = 'WireError';
  /** AMQP reply code (see ReplyCode). */
  readonly code: number;

  constructor(code: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** A 502 SYNTAX_ERROR: bytes that are not a valid Styx batch. */
  static syntax(message: string, cause?: unknown): WireError {
    return new WireError(ReplyCode.SYNTAX_ERROR, message, cause === undefined ? undefined : { cause });
  }
}
