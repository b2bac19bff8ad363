import { describe, expect, it } from 'vitest';
import type { BatchedOutcome, BatchedSend } from './queue-batch-codec.ts';
import {
  decodeBatch,
  decodeBatchAnswer,
  encodeBatch,
  encodeBatchAnswer,
  encodeGroup,
} from './queue-batch-codec.ts';
import { QueueLinkFrameError } from './queue-link.ts';
import { QueueOp } from './queue-rpc-codec.ts';

const encoder = new TextEncoder();

/** The parts `encodeBatch` makes, in a row (as the link sends them). */
function joined(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let pos = 0;
  for (const part of parts) {
    out.set(part, pos);
    pos += part.byteLength;
  }
  return out;
}

function batchOf(sends: readonly BatchedSend[]): Uint8Array {
  return joined(
    encodeBatch(
      sends,
      sends.map((s) => encodeGroup(s.group)),
    ),
  );
}

const SENDS: readonly BatchedSend[] = [
  { op: QueueOp.deliver, group: 'g-1', body: encoder.encode('first') },
  { op: QueueOp.cancelled, group: 'grøup-ü', body: encoder.encode('second') },
  { op: QueueOp.deliver, group: 'g-1', body: new Uint8Array(0) },
  { op: QueueOp.reassert, group: '', body: new Uint8Array(0) },
];

describe('queue-link batches (QueueOp.batch)', () => {
  it('round-trips sends in order: op, group (UTF-8) and body, an empty body and group included', () => {
    const decoded = decodeBatch(batchOf(SENDS));
    expect(decoded.map((s) => ({ op: s.op, group: s.group, body: [...s.body] }))).toEqual(
      SENDS.map((s) => ({ op: s.op, group: s.group, body: [...s.body] })),
    );
  });

  it('carries bodies as given, whole or in parts, without copying them', () => {
    const body = encoder.encode('kept');
    const head = encoder.encode('head:');
    const tail = encoder.encode('tail');
    const sends = [
      { op: QueueOp.deliver, body },
      { op: QueueOp.deliver, body: [head, tail] },
    ];
    const parts = encodeBatch(sends, [encodeGroup('g'), encodeGroup('g')]);
    for (const part of [body, head, tail]) expect(parts).toContain(part);
    const decoded = decodeBatch(joined(parts));
    expect(decoded.map((s) => new TextDecoder().decode(s.body))).toEqual(['kept', 'head:tail']);
  });

  it('round-trips an empty batch and a thousand sends', () => {
    expect(decodeBatch(batchOf([]))).toEqual([]);
    const many = Array.from({ length: 1000 }, (_, i) => ({
      op: QueueOp.deliver,
      group: `g-${i % 3}`,
      body: encoder.encode(`m-${i}`),
    }));
    const decoded = decodeBatch(batchOf(many));
    expect(decoded.map((s) => new TextDecoder().decode(s.body))).toEqual(many.map((_, i) => `m-${i}`));
  });

  it('refuses bytes that do not follow the layout with QueueLinkFrameError', () => {
    const good = batchOf(SENDS);
    const bad: [string, Uint8Array][] = [
      ['shorter than its count', good.subarray(0, 3)],
      ['cut in a send', good.subarray(0, good.byteLength - 1)],
      ['trailing bytes', joined([good, Uint8Array.of(0)])],
      ['a count the bytes cannot hold', Uint8Array.of(0xff, 0xff, 0xff, 0xff, 3, 0, 0)],
      ['a group past the end', Uint8Array.of(0, 0, 0, 1, 3, 0xff, 0xff, 0, 0, 0, 0)],
      ['a body past the end', Uint8Array.of(0, 0, 0, 1, 3, 0, 0, 0, 0, 0, 9, 1)],
      ['a group that is not UTF-8', Uint8Array.of(0, 0, 0, 1, 3, 0, 1, 0xff, 0, 0, 0, 0)],
    ];
    for (const [what, bytes] of bad) expect(() => decodeBatch(bytes), what).toThrow(QueueLinkFrameError);
  });

  it('a group id longer than a u16 is refused before anything is encoded', () => {
    expect(() => encodeGroup('x'.repeat(0x10000))).toThrow(RangeError);
  });

  it('round-trips answers: done, and refusals with their code and text', () => {
    const outcomes: BatchedOutcome[] = [
      { ok: true },
      { ok: false, code: 'OWNER_GONE', text: 'n2:run.1/1' },
      { ok: true },
      { ok: false, code: 'UNKNOWN_MESSAGE', text: 'ünknown' },
    ];
    expect(decodeBatchAnswer(encodeBatchAnswer(outcomes), 4)).toEqual(outcomes);
  });

  it('cuts a long code and text to their bounds, the answer still decoding', () => {
    const [outcome] = decodeBatchAnswer(
      encodeBatchAnswer([{ ok: false, code: 'C'.repeat(300), text: 't'.repeat(5000) }]),
      1,
    );
    expect(outcome).toEqual({ ok: false, code: 'C'.repeat(255), text: 't'.repeat(1024) });
  });

  it('refuses an answer for another number of sends, an unknown status, or cut bytes', () => {
    const answer = encodeBatchAnswer([{ ok: true }, { ok: false, code: 'X', text: 'why' }]);
    expect(() => decodeBatchAnswer(answer, 3)).toThrow(/for 2 sends, not 3/);
    expect(() => decodeBatchAnswer(answer.subarray(0, answer.byteLength - 1), 2)).toThrow(
      QueueLinkFrameError,
    );
    expect(() => decodeBatchAnswer(joined([answer, Uint8Array.of(0)]), 2)).toThrow(QueueLinkFrameError);
    expect(() => decodeBatchAnswer(Uint8Array.of(0, 0, 0, 1, 7), 1)).toThrow(/status 7/);
    expect(() => decodeBatchAnswer(Uint8Array.of(0, 0), 0)).toThrow(QueueLinkFrameError);
  });
});
