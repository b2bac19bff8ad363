import { describe, expect, it } from 'vitest';
import { replyText } from './reply-text.ts';

describe('replyText', () => {
  it("leads with the reply code's spec name, as RabbitMQ does", () => {
    expect(replyText(404, "no queue 'orders' in vhost '/'")).toBe(
      "NOT_FOUND - no queue 'orders' in vhost '/'",
    );
    expect(replyText(406, 'unknown delivery tag 99')).toBe('PRECONDITION_FAILED - unknown delivery tag 99');
    expect(replyText(403, 'login refused')).toBe('ACCESS_REFUSED - login refused');
    expect(replyText(320, 'node shutting down')).toBe('CONNECTION_FORCED - node shutting down');
    expect(replyText(501, 'frame size 5008 > negotiated max 4096')).toBe(
      'FRAME_ERROR - frame size 5008 > negotiated max 4096',
    );
    expect(replyText(540, 'x')).toBe('NOT_IMPLEMENTED - x');
    expect(replyText(200, 'Goodbye')).toBe('REPLY_SUCCESS - Goodbye');
  });

  it('does not name it twice, and an empty text is the name alone', () => {
    expect(replyText(404, 'NOT_FOUND - no queue')).toBe('NOT_FOUND - no queue');
    expect(replyText(404, 'NOT_FOUND')).toBe('NOT_FOUND');
    expect(replyText(404, '')).toBe('NOT_FOUND');
  });

  it('leaves a code the spec does not name, and never takes a frame type for a code', () => {
    expect(replyText(999, 'odd')).toBe('odd');
    expect(replyText(0, 'zero')).toBe('zero');
    expect(replyText(206, 'frame end is not a reply code')).toBe('frame end is not a reply code');
    expect(replyText(3, 'body frame type')).toBe('body frame type');
  });
});
