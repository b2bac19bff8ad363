import { describe, expect, it } from 'vitest';
import { fill, Inbox, unique, useBroker } from './messaging-helpers.ts';

// The broker proposes the acks (and nacks of one kind) a channel receives in one turn as one queue
// command per queue, at the end of the turn or before anything else the channel sends. These check
// that the batching keeps the order the client sent: what was acked before a close or a nack stays
// acked.
const { connect } = useBroker();

const range = (n: number): string[] => Array.from({ length: n }, (_, i) => `m${i}`);

describe('acks and nacks of one turn', () => {
  it('are settled before a channel close sent right after them: nothing acked comes back', async () => {
    const conn = await connect();
    const pub = await conn.createConfirmChannel();
    const { queue } = await pub.assertQueue(unique('q.ack-batch'), { durable: true });
    await fill(pub, queue, range(20));
    const ch = await conn.createChannel();
    await ch.prefetch(20);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage);
    const msgs = await inbox.atLeast(20);
    // Ack the first 15 one by one, then close: all in one turn, so in one WebSocket message.
    for (const m of msgs.slice(0, 15)) ch.ack(m);
    await ch.close();
    const check = await conn.createChannel();
    expect((await check.checkQueue(queue)).messageCount).toBe(5);
    const rest: string[] = [];
    for (;;) {
      const m = await check.get(queue, { noAck: true });
      if (m === false) break;
      rest.push(m.content.toString());
    }
    expect(rest.sort()).toEqual(range(20).slice(15).sort());
  });

  it('keep their order when the kind changes within the turn: acks, requeues, rejects', async () => {
    const conn = await connect();
    const pub = await conn.createConfirmChannel();
    const { queue } = await pub.assertQueue(unique('q.ack-batch'), { durable: true });
    await fill(pub, queue, range(9));
    const ch = await conn.createChannel();
    await ch.prefetch(9);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage);
    const msgs = await inbox.atLeast(9);
    for (const m of msgs.slice(0, 3)) ch.ack(m);
    for (const m of msgs.slice(3, 6)) ch.nack(m, false, true);
    for (const m of msgs.slice(6, 9)) ch.reject(m, false);
    // The requeued three come back, redelivered, and nothing else does.
    const again = await inbox.atLeast(12);
    const redelivered = again.slice(9);
    expect(redelivered.map((m) => m.content.toString()).sort()).toEqual(['m3', 'm4', 'm5']);
    expect(redelivered.every((m) => m.fields.redelivered)).toBe(true);
    for (const m of redelivered) ch.ack(m);
    await ch.close();
    const check = await conn.createChannel();
    expect((await check.checkQueue(queue)).messageCount).toBe(0);
  });
});
