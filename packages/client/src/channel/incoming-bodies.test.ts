import { describe, expect, it } from 'vitest';
import { wireErrorCode as codeOf } from '../test-support/wire-error-code.ts';
import type { Frame } from '../wire/index.ts';
import {
  decodeBatch,
  encodeBodyParts,
  encodeDeliverFrame,
  joinEncodedFrames,
  ReplyCode,
} from '../wire/index.ts';
import { IncomingBodies } from './incoming-bodies.ts';

/** What the wire gives for these encoded frames, in order. */
const decoded = (...frames: Uint8Array[]): Frame[] =>
  frames.flatMap((f) => decodeBatch(joinEncodedFrames([f])));

const deliver = (bodySize: number, body = new Uint8Array(0)): Uint8Array =>
  encodeDeliverFrame(1, 'c', 7, false, 'x', 'k', undefined, body, bodySize);

describe('IncomingBodies', () => {
  it('holds a delivery declaring body_size until its parts came, then gives it whole', () => {
    const body = Uint8Array.from({ length: 10_000 }, (_, i) => i % 251);
    const [head, ...parts] = decoded(deliver(body.length), ...encodeBodyParts(1, body, 4096));
    const bodies = new IncomingBodies();
    expect(bodies.take(head as Frame)).toBeUndefined();
    const out = parts.map((p) => bodies.take(p));
    expect(out.slice(0, -1)).toEqual([undefined, undefined]);
    const whole = out.at(-1);
    if (whole?.method !== 'basicDeliver') throw new Error(String(whole?.method));
    expect(whole.basicDeliver.deliveryTag).toBe(7);
    expect(Buffer.from(whole.basicDeliver.body).equals(Buffer.from(body))).toBe(true);
    // A frame with its body whole passes through.
    const [plain] = decoded(deliver(0, new Uint8Array([1, 2])));
    expect(bodies.take(plain as Frame)).toBe(plain);
  });

  it('refuses a part with no body declared and another frame between parts (505)', () => {
    const [part] = decoded(...encodeBodyParts(1, new Uint8Array(5), 4096));
    expect(codeOf(() => new IncomingBodies().take(part as Frame))).toBe(ReplyCode.UNEXPECTED_FRAME);
    const bodies = new IncomingBodies();
    const [head, other] = decoded(deliver(5), deliver(0, new Uint8Array(1)));
    bodies.take(head as Frame);
    expect(codeOf(() => bodies.take(other as Frame))).toBe(ReplyCode.UNEXPECTED_FRAME);
  });
});
