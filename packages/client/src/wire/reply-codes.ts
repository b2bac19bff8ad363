// AMQP 0-9-1 reply codes, as Styx uses them on the wire (ConnectionClose, ChannelClose, BasicReturn).

/** AMQP 0-9-1 reply codes by name. */
export const ReplyCode = {
  REPLY_SUCCESS: 200,
  CONTENT_TOO_LARGE: 311,
  NO_ROUTE: 312,
  NO_CONSUMERS: 313,
  CONNECTION_FORCED: 320,
  INVALID_PATH: 402,
  ACCESS_REFUSED: 403,
  NOT_FOUND: 404,
  RESOURCE_LOCKED: 405,
  PRECONDITION_FAILED: 406,
  FRAME_ERROR: 501,
  SYNTAX_ERROR: 502,
  COMMAND_INVALID: 503,
  CHANNEL_ERROR: 504,
  UNEXPECTED_FRAME: 505,
  RESOURCE_ERROR: 506,
  NOT_ALLOWED: 530,
  NOT_IMPLEMENTED: 540,
  INTERNAL_ERROR: 541,
} as const;

/** One of the reply codes above. */
export type ReplyCodeValue = (typeof ReplyCode)[keyof typeof ReplyCode];

const NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(ReplyCode).map(([name, code]) => [code, name] as const),
);

/**
 * The constant's name for a reply code, as RabbitMQ writes it in reply texts ('NOT_FOUND');
 * `UNKNOWN_<code>` for a code that is not in the table. amqplib prints the same names with hyphens
 * ('NOT-FOUND'); the SDK converts where it mimics amqplib's messages.
 */
export function replyCodeName(code: number): string {
  return NAMES.get(code) ?? `UNKNOWN_${code}`;
}

// AMQP's scopes: these close the whole connection; every other non-success code closes only the
// channel (311-313, 403-406). 403 ACCESS_REFUSED during the handshake also closes the connection,
// but that depends on when it happens, not on the code, so it is not listed here.
const CONNECTION_ERRORS: ReadonlySet<number> = new Set([
  ReplyCode.CONNECTION_FORCED,
  ReplyCode.INVALID_PATH,
  ReplyCode.FRAME_ERROR,
  ReplyCode.SYNTAX_ERROR,
  ReplyCode.COMMAND_INVALID,
  ReplyCode.CHANNEL_ERROR,
  ReplyCode.UNEXPECTED_FRAME,
  ReplyCode.RESOURCE_ERROR,
  ReplyCode.NOT_ALLOWED,
  ReplyCode.NOT_IMPLEMENTED,
  ReplyCode.INTERNAL_ERROR,
]);

/** True for the codes whose error closes the connection rather than only the channel. */
export function isConnectionError(code: number): boolean {
  return CONNECTION_ERRORS.has(code);
}
