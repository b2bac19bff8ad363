import { describe, expect, it } from 'vitest';
import { isConnectionError, ReplyCode, replyCodeName } from './reply-codes.ts';

describe('reply codes', () => {
  it('has AMQP 0-9-1 values', () => {
    expect(ReplyCode).toEqual({
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
    });
  });

  it('names every code, and unknown ones recognisably', () => {
    for (const [name, code] of Object.entries(ReplyCode)) expect(replyCodeName(code)).toBe(name);
    expect(replyCodeName(999)).toBe('UNKNOWN_999');
  });

  it("splits connection and channel errors as AMQP's spec does", () => {
    const connection = Object.values(ReplyCode).filter(isConnectionError);
    expect(connection.sort()).toEqual([320, 402, 501, 502, 503, 504, 505, 506, 530, 540, 541]);
    for (const code of [200, 311, 312, 313, 403, 404, 405, 406]) expect(isConnectionError(code)).toBe(false);
  });
});
