import type { BasicProperties } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { BrowseRequest, BrowseSource } from './message-browse.ts';
import {
  BrowseRequestError,
  browseMessages,
  checkBrowseRequest,
  MAX_BROWSE_SCAN,
  MAX_PAGE_BYTES,
} from './message-browse.ts';
import { MachineHarness, T0 } from './queue-test-harness.ts';
import type { StoredMessage } from './types.ts';

/** A real queue machine and the bodies of what it enqueued (the actor's body store, in a Map). */
class BrowsedQueue {
  readonly harness = new MachineHarness({ deadLetterExchange: undefined });
  readonly bodies = new Map<number, StoredMessage>();

  enqueue(body: string | Uint8Array, properties: BasicProperties = {}, ttl?: number): number {
    const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
    const message: StoredMessage = {
      exchange: 'ex',
      routingKey: 'rk',
      properties,
      body: bytes,
      bcc: undefined,
    };
    // Straight to the machine: the harness's recount after each apply would make 10k enqueues slow.
    this.harness.machine.apply(
      { type: 'enqueue', size: bytes.byteLength, ttl, message },
      this.harness.nextMeta(),
    );
    this.harness.index++;
    this.bodies.set(this.harness.index, message);
    return this.harness.index;
  }

  get source(): BrowseSource {
    const machine = this.harness.machine;
    return {
      readyEntries: (after, position) => machine.browseEntries(after, position),
      readyCount: machine.readyCount(),
      appliedIndex: machine.lastAppliedIndex,
      body: (id) => this.bodies.get(id),
    };
  }

  browse(request: Partial<BrowseRequest> = {}, now = this.harness.ts) {
    return browseMessages(this.source, { offset: 0, limit: 50, bodyBytes: 100, filter: {}, ...request }, now);
  }
}

const ids = (page: { messages: readonly { id: number }[] }): number[] => page.messages.map((m) => m.id);

describe('browseMessages', () => {
  it('reads ready messages in delivery order without taking them', () => {
    const q = new BrowsedQueue();
    const a = q.enqueue('a');
    const b = q.enqueue('b');
    const c = q.enqueue('c');
    // b goes out to a consumer and comes back: returned messages are delivered first.
    q.harness.apply({ type: 'get', owner: 'o', noAck: false });
    q.harness.apply({ type: 'get', owner: 'o', noAck: false });
    q.harness.apply({ type: 'return', owner: 'o', ids: [b] });
    const page = q.browse();
    expect(ids(page)).toEqual([b, c]);
    expect(page.messages[0]).toMatchObject({ id: b, deliveryCount: 1, redelivered: true, size: 1 });
    expect(page.messages[1]).toMatchObject({ id: c, deliveryCount: 0, redelivered: false, enqueuedAt: T0 });
    expect(page.ready).toBe(2);
    expect(page.next).toBeUndefined();
    // Browsing changed nothing: the same page again, and `a` is still held by its owner.
    expect(ids(q.browse())).toEqual([b, c]);
    expect(q.harness.machine.heldBy(a)).toBe('o');
    expect(q.harness.machine.counts()).toMatchObject({ ready: 2, unacked: 1 });
  });

  it('pages with limit and the next cursor, across the returned and main lists', () => {
    const q = new BrowsedQueue();
    const all = [1, 2, 3, 4, 5].map((n) => q.enqueue(`m${n}`));
    q.harness.apply({ type: 'get', owner: 'o', noAck: false });
    q.harness.apply({ type: 'return', owner: 'o', ids: [all[0] as number] });
    const first = q.browse({ limit: 2 });
    expect(ids(first)).toEqual([all[0], all[1]]);
    expect(first.next).toBe(all[1]);
    const second = q.browse({ limit: 2, after: first.next });
    expect(ids(second)).toEqual([all[2], all[3]]);
    const third = q.browse({ limit: 2, after: second.next });
    expect(ids(third)).toEqual([all[4]]);
    expect(third.next).toBeUndefined();
    // A cursor on the returned message alone goes on into the main list.
    expect(ids(q.browse({ limit: 1, after: all[0] }))).toEqual([all[1]]);
  });

  it('goes on after a cursor whose message was consumed meanwhile', () => {
    const q = new BrowsedQueue();
    const all = [1, 2, 3].map((n) => q.enqueue(`m${n}`));
    const first = q.browse({ limit: 1 });
    q.harness.apply({ type: 'get', owner: 'o', noAck: true });
    expect(ids(q.browse({ after: first.next }))).toEqual([all[1], all[2]]);
  });

  it('skips offset selected messages', () => {
    const q = new BrowsedQueue();
    const all = [1, 2, 3, 4].map((n) => q.enqueue(`m${n}`));
    expect(ids(q.browse({ offset: 1, limit: 2 }))).toEqual([all[1], all[2]]);
    expect(ids(q.browse({ offset: 9 }))).toEqual([]);
  });

  it('filters, the offset counting selected messages only', () => {
    const q = new BrowsedQueue();
    const tagged = (v: string): BasicProperties => ({
      headers: { entries: [{ key: 'k', value: { longStr: v } }] },
    });
    q.enqueue('1', tagged('x'));
    const two = q.enqueue('2', tagged('y'));
    q.enqueue('3', tagged('x'));
    const four = q.enqueue('4', tagged('y'));
    const filter = { headers: [{ name: 'k', value: 'y' }] };
    expect(ids(q.browse({ filter }))).toEqual([two, four]);
    expect(ids(q.browse({ filter, offset: 1 }))).toEqual([four]);
  });

  it('filters by age in the queue', () => {
    const q = new BrowsedQueue();
    const old = q.enqueue('old');
    q.harness.advance(5_000);
    const young = q.enqueue('young');
    const now = q.harness.ts + 1_000;
    expect(ids(q.browse({ filter: { olderThanMs: 3_000 } }, now))).toEqual([old]);
    expect(ids(q.browse({ filter: { newerThanMs: 3_000 } }, now))).toEqual([young]);
  });

  it('cuts bodies to the preview size and keeps the full size', () => {
    const q = new BrowsedQueue();
    q.enqueue('0123456789');
    const [m] = q.browse({ bodyBytes: 4 }).messages;
    expect(new TextDecoder().decode(m?.message?.body)).toBe('0123');
    expect(m?.size).toBe(10);
    expect(q.bodies.get(m?.id as number)?.body.byteLength).toBe(10);
  });

  it('shows a message whose body is missing here without it, and a property filter skips it', () => {
    const q = new BrowsedQueue();
    const id = q.enqueue('x');
    q.bodies.delete(id);
    expect(q.browse().messages).toEqual([expect.objectContaining({ id, message: undefined })]);
    expect(q.browse({ filter: { headers: [{ name: 'k', value: 'v' }] } }).messages).toEqual([]);
  });

  it('shows when a message expires', () => {
    const q = new BrowsedQueue();
    q.enqueue('x', {}, 5_000);
    q.enqueue('y');
    const [withTtl, without] = q.browse().messages;
    expect(withTtl?.expiresAt).toBe(T0 + 5_000);
    expect(without?.expiresAt).toBeUndefined();
  });

  it('stops a scan at MAX_BROWSE_SCAN and says where to go on, with the offset left', () => {
    const q = new BrowsedQueue();
    const all: number[] = [];
    for (let i = 0; i < MAX_BROWSE_SCAN + 5; i++) all.push(q.enqueue(''));
    // Nothing selected: the scan stops at its bound.
    const none = q.browse({ filter: { headers: [{ name: 'k', value: 'v' }] } });
    expect(none.messages).toEqual([]);
    expect(none.scanned).toBe(MAX_BROWSE_SCAN);
    expect(none.next).toBe(all[MAX_BROWSE_SCAN - 1]);
    const rest = q.browse({ filter: { headers: [{ name: 'k', value: 'v' }] }, after: none.next });
    expect(rest.scanned).toBe(5);
    expect(rest.next).toBeUndefined();
    // Skipping stops there too, and says how much offset is left.
    const skipping = q.browse({ offset: MAX_BROWSE_SCAN + 2 });
    expect(skipping.messages).toEqual([]);
    expect(skipping.offsetLeft).toBe(2);
    expect(ids(q.browse({ offset: skipping.offsetLeft, after: skipping.next, limit: 1 }))).toEqual([
      all[MAX_BROWSE_SCAN + 2],
    ]);
  });

  it('ends a page once it carries MAX_PAGE_BYTES of messages', () => {
    const q = new BrowsedQueue();
    const big = new Uint8Array(MAX_PAGE_BYTES / 2);
    const all = [q.enqueue(big), q.enqueue(big), q.enqueue(big)];
    const page = q.browse({ bodyBytes: MAX_PAGE_BYTES });
    expect(ids(page)).toEqual([all[0], all[1]]);
    expect(page.next).toBe(all[1]);
  });

  it('counts headers in the page bound: large headers cut a page of small bodies', () => {
    const q = new BrowsedQueue();
    // A publisher's headers can be as large as a frame: 1 MiB each here, bodies of 1 byte.
    const headers = { headers: { entries: [{ key: 'h', value: { longStr: 'x'.repeat(1024 * 1024) } }] } };
    const all = [1, 2, 3, 4, 5, 6].map(() => q.enqueue('b', headers));
    const page = q.browse({ bodyBytes: 1 });
    expect(ids(page)).toEqual(all.slice(0, 4));
    expect(page.next).toBe(all[3]);
  });
});

describe('checkBrowseRequest', () => {
  const good: BrowseRequest = { offset: 0, limit: 1, bodyBytes: 0, filter: {} };
  it.each([
    [{ after: -1 }, /'after'/],
    [{ offset: 1.5 }, /'offset'/],
    [{ limit: 0 }, /'limit' must be a whole number from 1 to 500/],
    [{ limit: 501 }, /'limit'/],
    [{ bodyBytes: 101 }, /'body_bytes' must be a whole number from 0 to 100/],
  ])('refuses %j', (change, message) => {
    expect(() => checkBrowseRequest({ ...good, ...change }, 100)).toThrow(BrowseRequestError);
    expect(() => checkBrowseRequest({ ...good, ...change }, 100)).toThrow(message);
  });

  it('accepts the bounds', () => {
    expect(() => checkBrowseRequest({ ...good, limit: 500, bodyBytes: 100, after: 0 }, 100)).not.toThrow();
  });
});
