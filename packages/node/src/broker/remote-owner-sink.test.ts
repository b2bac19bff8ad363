import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  decodeDelivery,
  encodeCancelled,
  encodeDelivery,
  joinSendBody,
  QueueOp,
} from '../cluster/queue-rpc-codec.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { StoredMessage } from '../queue/types.ts';
import type { RemoteOwnerSinkLimits } from './remote-owner-sink.ts';
import { RESEND_DELAY_MS, RemoteOwnerSink } from './remote-owner-sink.ts';

type Outcome = 'owner-gone' | 'refused' | 'lost';

const OWNER = 'n2:1.1/1';

/**
 * A port whose sends stay pending until the test answers them, named `group:text` by the text of
 * the delivered message's body (`group:cancel` for a cancellation).
 */
function fakePort(limits?: RemoteOwnerSinkLimits) {
  const sent: string[] = [];
  /** The redelivered flag of each delivery sent, in order. */
  const flags: boolean[] = [];
  const pending = new Map<string, { resolve: () => void; reject: (kind: Outcome) => void }>();
  const lost: string[] = [];
  const returned: string[] = [];
  const warned: string[] = [];
  let down = false;
  let gone = false;
  let nextId = 1;
  const ids = new Map<number, string>();
  const sink = new RemoteOwnerSink(
    {
      send: (op, group, body) => {
        let name: string;
        if (op === QueueOp.deliver) {
          const delivery = decodeDelivery(joinSendBody(body));
          name = `${group}:${new TextDecoder().decode(delivery.message.body)}`;
          flags.push(delivery.redelivered);
        } else {
          name = op === QueueOp.cancelled ? `${group}:cancel` : `${group}:op${op}`;
        }
        sent.push(name);
        return new Promise((resolve, reject) => {
          pending.set(name, { resolve: () => resolve(undefined), reject });
        });
      },
      classify: (error) => error as Outcome,
      nodeDown: () => down,
      ownerGone: () => gone,
      lost: (actor) => lost.push(actor.groupId),
      warn: (_fields, message) => warned.push(message),
    },
    limits,
  );
  const actor = (groupId: string, isLeader = true) =>
    ({
      groupId,
      isLeader,
      returnMessages: (owner: string, returnedIds: readonly number[]) => {
        for (const id of returnedIds) returned.push(`${groupId}:${owner}:${ids.get(id)}`);
        return Promise.resolve();
      },
    }) as unknown as QueueActor;
  const q = actor('q');
  const message = (text: string): StoredMessage => ({
    exchange: '',
    routingKey: 'q',
    properties: {},
    body: new TextEncoder().encode(text),
    bcc: undefined,
  });
  return {
    sink,
    sent,
    flags,
    lost,
    returned,
    warned,
    send: (text: string, a: QueueActor = q) => {
      const id = nextId++;
      ids.set(id, text);
      sink.send(a, QueueOp.deliver, encodeDelivery(OWNER, 'c', id, false, 0, message(text)));
    },
    cancel: (a: QueueActor = q) => sink.send(a, QueueOp.cancelled, encodeCancelled(OWNER, 'c')),
    ok: async (name: string) => {
      pending.get(name)?.resolve();
      await Promise.resolve();
    },
    fail: async (name: string, kind: Outcome = 'lost') => {
      pending.get(name)?.reject(kind);
      await Promise.resolve();
    },
    setDown: () => {
      down = true;
    },
    setGone: () => {
      gone = true;
    },
    q,
    actor,
  };
}

describe('RemoteOwnerSink', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('pipelines sends while they arrive', async () => {
    const t = fakePort();
    t.send('a');
    t.send('b');
    t.send('c');
    expect(t.sent).toEqual(['q:a', 'q:b', 'q:c']);
  });

  it('once a send is lost, later sends wait behind it and all go again in order', async () => {
    const t = fakePort();
    t.send('a');
    t.send('b');
    await t.fail('q:a');
    t.send('c'); // after the loss: must not overtake a
    t.send('d');
    expect(t.sent).toEqual(['q:a', 'q:b']);
    await t.ok('q:b');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.sent).toEqual(['q:a', 'q:b', 'q:a', 'q:c', 'q:d']);
    // Still recovering until those are answered: a new send waits behind them.
    t.send('e');
    expect(t.sent.length).toBe(5);
    await t.ok('q:a');
    await t.ok('q:c');
    await t.ok('q:d');
    await vi.advanceTimersByTimeAsync(0);
    expect(t.sent).toEqual(['q:a', 'q:b', 'q:a', 'q:c', 'q:d', 'q:e']);
    // Recovered: direct again.
    t.send('f');
    expect(t.sent.at(-1)).toBe('q:f');
  });

  it('sends lost again go again, in their first order', async () => {
    const t = fakePort();
    t.send('a');
    t.send('b');
    await t.fail('q:b');
    await t.fail('q:a');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.sent).toEqual(['q:a', 'q:b', 'q:a', 'q:b']);
  });

  it('gives the owner up when its channel or its node is known gone, and never resends a refused send', async () => {
    const t = fakePort();
    t.send('a');
    await t.fail('q:a', 'owner-gone');
    t.send('b');
    await t.fail('q:b', 'refused');
    expect(t.lost).toEqual(['q']);
    t.setGone(); // forgotten, or restarted as a new incarnation
    t.send('c');
    await t.fail('q:c', 'lost');
    expect(t.lost).toEqual(['q', 'q']);
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS * 4);
    expect(t.sent).toEqual(['q:a', 'q:b', 'q:c']);
  });

  it('keeps sending again to a node that is only suspected: the owner is not given up for it', async () => {
    const t = fakePort();
    t.setDown();
    t.send('a');
    await t.fail('q:a', 'lost');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    await t.fail('q:a', 'lost');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.lost).toEqual([]);
    expect(t.sent).toEqual(['q:a', 'q:a', 'q:a']);
    await t.ok('q:a');
  });

  it('forget: a queue that gave the owner up past its timeout has its held deliveries dropped', async () => {
    const t = fakePort();
    const other = t.actor('other');
    t.send('a');
    t.send('b', other);
    await t.fail('q:a');
    t.send('c');
    t.cancel();
    await t.fail('other:b');
    t.sink.forget(t.q);
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    // q's deliveries (the lost a, the waiting c) are not sent again; its cancellation and the
    // other queue's delivery are.
    expect(t.sent.slice(2)).toEqual(['other:b', 'q:cancel']);
    expect(t.lost).toEqual([]);
  });

  it('drops, on resending, what queues this node no longer leads sent', async () => {
    const t = fakePort();
    const former = t.actor('old', false);
    t.send('a', former);
    t.send('b');
    await t.fail('old:a');
    await t.fail('q:b');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.sent).toEqual(['old:a', 'q:b', 'q:b']);
  });

  it('marks a delivery that goes again redelivered (it may have arrived: only its answer was lost)', async () => {
    const t = fakePort();
    t.send('a');
    t.send('b');
    await t.fail('q:a');
    t.send('c'); // waits behind a: its first send, not marked
    await t.ok('q:b');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.sent).toEqual(['q:a', 'q:b', 'q:a', 'q:c']);
    expect(t.flags).toEqual([false, false, true, false]);
  });

  it('returns a refused delivery to its queue (freeing its slot; delivered again from there, redelivered)', async () => {
    const t = fakePort();
    t.send('a');
    t.send('b');
    await t.fail('q:a', 'refused');
    await t.ok('q:b');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.returned).toEqual([`q:${OWNER}:a`]);
    expect(t.sent).toEqual(['q:a', 'q:b']); // not sent again from here
    expect(t.lost).toEqual([]); // the owner is kept
  });

  it('leaves a refused delivery to the next leader when this node no longer leads', async () => {
    const t = fakePort();
    const former = t.actor('old', false);
    t.send('a', former);
    await t.fail('old:a', 'refused');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    expect(t.returned).toEqual([]);
  });

  it('bounds the sends it holds: past it, the queues with deliveries held give the owner up and the node is told to register again', async () => {
    const t = fakePort({ maxHeldSends: 3, maxHeldBytes: 1 << 20 });
    const other = t.actor('r');
    t.send('a');
    await t.fail('q:a'); // lost: 1 held
    t.send('b', other);
    t.cancel();
    expect(t.lost).toEqual([]);
    t.send('c'); // 4 held: over
    expect(t.lost.sort()).toEqual(['q', 'r']);
    expect(t.warned.length).toBe(1);
    expect(t.sent).toEqual(['q:a', ':op7']);
    await t.ok(':op7');
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS * 4);
    // The held deliveries are not sent (their queues took them back); the cancellation is.
    expect(t.sent).toEqual(['q:a', ':op7', 'q:cancel']);
  });

  it('bounds the bytes it holds, and drops later losses of deliveries sent before the give-up', async () => {
    const t = fakePort({ maxHeldSends: 1000, maxHeldBytes: 150 });
    t.send('x'.repeat(60));
    t.send('y'.repeat(60)); // in flight
    await t.fail(`q:${'x'.repeat(60)}`);
    t.send('z'.repeat(60)); // over 150 bytes held (each delivery is some 90 bytes)
    expect(t.lost).toEqual(['q']);
    await t.fail(`q:${'y'.repeat(60)}`); // lost after the give-up: dropped
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS * 4);
    expect(t.sent.filter((name) => name.startsWith('q:'))).toEqual([
      `q:${'x'.repeat(60)}`,
      `q:${'y'.repeat(60)}`,
    ]);
  });

  it('keeps telling the node to register again while it is up and the notice is lost', async () => {
    const t = fakePort({ maxHeldSends: 1, maxHeldBytes: 1 << 20 });
    t.send('a');
    await t.fail('q:a');
    t.send('b'); // over
    expect(t.sent).toEqual(['q:a', ':op7']);
    for (let i = 0; i < 12; i++) {
      await t.fail(':op7');
      await vi.advanceTimersByTimeAsync(10_000);
    }
    expect(t.sent.filter((name) => name === ':op7').length).toBe(13);
    t.setDown();
    await t.fail(':op7');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(t.sent.filter((name) => name === ':op7').length).toBe(13);
  });
});
