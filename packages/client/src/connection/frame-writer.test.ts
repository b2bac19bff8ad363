import { describe, expect, it } from 'vitest';
import { MessageTooLargeError } from '../errors.ts';
import type { Frame } from '../wire/index.ts';
import { decodeBatch, encodeBatch, frame } from '../wire/index.ts';
import { FrameWriter } from './frame-writer.ts';

function sink(): { sent: Uint8Array[]; bufferedAmount: number; send(d: Uint8Array): void } {
  return {
    sent: [],
    bufferedAmount: 0,
    send(d) {
      this.sent.push(d);
    },
  };
}

const publish = (n: number, size: number): Frame =>
  frame(1, 'basicPublish', {
    exchange: '',
    routingKey: `q${n}`,
    mandatory: false,
    immediate: false,
    body: new Uint8Array(size).fill(n & 0xff),
  });

describe('FrameWriter', () => {
  it('sends the frames of one tick as one message, on a microtask', async () => {
    const s = sink();
    const w = new FrameWriter(s, { frameMax: 1 << 20 });
    const frames = [
      publish(1, 10),
      frame(1, 'basicAck', { deliveryTag: 1, multiple: false }),
      publish(2, 10),
    ];
    for (const f of frames) w.write(f);
    expect(s.sent).toHaveLength(0);
    expect(w.pendingFrames).toBe(3);
    await Promise.resolve();
    expect(s.sent).toHaveLength(1);
    expect(Array.from(s.sent[0] as Uint8Array)).toEqual(Array.from(encodeBatch(frames)));
    w.write(publish(3, 1));
    await Promise.resolve();
    expect(s.sent).toHaveLength(2);
  });

  it('splits a tick’s frames at frame boundaries so no message exceeds frameMax', () => {
    const s = sink();
    const frameMax = 1000;
    const w = new FrameWriter(s, { frameMax, schedule: () => {} });
    const frames = Array.from({ length: 25 }, (_, i) => publish(i, 50 + ((i * 37) % 300)));
    for (const f of frames) w.write(f);
    w.flush();
    expect(s.sent.length).toBeGreaterThan(1);
    for (const batch of s.sent) expect(batch.length).toBeLessThanOrEqual(frameMax);
    const received = s.sent.flatMap((b) => decodeBatch(b));
    expect(received.map((f) => (f.method === 'basicPublish' ? f.basicPublish.routingKey : f.method))).toEqual(
      frames.map((_, i) => `q${i}`),
    );
    // Greedy packing: each message but the last could not have taken the next frame.
    expect(s.sent.length).toBeLessThanOrEqual(Math.ceil(encodeBatch(frames).length / (frameMax / 2)));
  });

  it('puts a frame of exactly frameMax in a message of its own', () => {
    const s = sink();
    const big = publish(1, 500);
    const size = encodeBatch([big]).length;
    const w = new FrameWriter(s, { frameMax: size, schedule: () => {} });
    w.write(publish(0, 1));
    w.write(big);
    w.flush();
    expect(s.sent.map((b) => b.length)).toEqual([encodeBatch([publish(0, 1)]).length, size]);
  });

  it('refuses a frame larger than frameMax, queuing nothing', () => {
    const s = sink();
    const w = new FrameWriter(s, { frameMax: 100, schedule: () => {} });
    expect(() => w.write(publish(1, 200))).toThrow(MessageTooLargeError);
    try {
      w.write(publish(1, 200));
    } catch (err) {
      expect((err as MessageTooLargeError).code).toBe(311);
      expect((err as MessageTooLargeError).frameMax).toBe(100);
    }
    expect(w.pendingFrames).toBe(0);
  });

  it('counts the socket’s buffer plus unflushed bytes', () => {
    const s = sink();
    const w = new FrameWriter(s, { frameMax: 1 << 20, schedule: () => {} });
    s.bufferedAmount = 1000;
    w.write(publish(1, 100));
    const pending = encodeBatch([publish(1, 100)]).length;
    expect(w.bufferedBytes).toBe(1000 + pending);
    w.flush();
    expect(w.bufferedBytes).toBe(1000);
  });

  it('reports whether anything was sent since the last check', () => {
    const s = sink();
    const w = new FrameWriter(s, { frameMax: 1 << 20, schedule: () => {} });
    expect(w.takeSentFlag()).toBe(false);
    w.write(publish(1, 1));
    expect(w.takeSentFlag()).toBe(true);
    w.flush();
    expect(w.takeSentFlag()).toBe(true);
    expect(w.takeSentFlag()).toBe(false);
  });
});
