import type { Channel, Connection } from '@styx/client';
import { describe, expect, it } from 'vitest';
import {
  channelClosed,
  drain,
  fill,
  getOne,
  Inbox,
  rejectionOf,
  unique,
  useBroker,
  waitFor,
} from './messaging-helpers.ts';

// Queues against a real `styx server`: declare (with its flags, generated names and arguments),
// exclusivity, auto-delete, delete with if-unused / if-empty, purge, and bindings.
const { connect } = useBroker();

/** Whether `queue` exists, asked on a throwaway channel (a passive declare closes it with 404). */
async function exists(conn: Connection, queue: string): Promise<boolean> {
  const ch = await conn.createChannel();
  try {
    await ch.checkQueue(queue);
    await ch.close();
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return false;
    throw err;
  }
}

/** The reply code `op` fails with on a fresh channel of `conn` (which the failure closes). */
async function failureCode(
  conn: Connection,
  op: (ch: Channel) => Promise<unknown>,
): Promise<number | undefined> {
  const ch = await conn.createChannel();
  const closed = channelClosed(ch);
  const err = await rejectionOf(op(ch));
  await closed;
  return err.code;
}

describe('queue declare', () => {
  it('replies with the name, the ready message count and the consumer count', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const name = unique('q.declare');
    expect(await ch.assertQueue(name, { durable: true })).toEqual({
      queue: name,
      messageCount: 0,
      consumerCount: 0,
    });
    await fill(ch, name, ['a', 'b', 'c']);
    // One message checked out (unacked) is not counted: the counts are of ready messages.
    await getOne(ch, name, false);
    const consumerCh = await conn.createChannel();
    await consumerCh.prefetch(1);
    const inbox = new Inbox();
    await consumerCh.consume(name, inbox.onMessage);
    await inbox.atLeast(1);
    expect(await ch.assertQueue(name, { durable: true })).toEqual({
      queue: name,
      messageCount: 1,
      consumerCount: 1,
    });
    expect(await ch.checkQueue(name)).toEqual({ queue: name, messageCount: 1, consumerCount: 1 });
    await ch.deleteQueue(name);
  });

  it('a declare that races the one creating the queue returns only once the queue can be used', async () => {
    // Several connections declare the same new durable queue at once, as a work queue's workers
    // do, and consume at once: none may see the queue before its log is open (541 before).
    const conns = await Promise.all([connect(), connect(), connect(), connect()]);
    for (let round = 0; round < 5; round++) {
      const name = unique('q.race');
      const inboxes = conns.map(() => new Inbox());
      await Promise.all(
        conns.map(async (conn, i) => {
          const ch = await conn.createChannel();
          await ch.assertQueue(name, { durable: true });
          await ch.consume(name, (inboxes[i] as Inbox).onMessage);
        }),
      );
      const ch = await (conns[0] as Connection).createChannel();
      expect((await ch.checkQueue(name)).consumerCount).toBe(conns.length);
      await ch.deleteQueue(name);
      await ch.close();
    }
  });

  it('generates a name for an empty one; a client-chosen amq.* name is 403', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const a = await ch.assertQueue('', { exclusive: true });
    const b = await ch.assertQueue('', { exclusive: true });
    expect(a.queue).toMatch(/^amq\.gen-[A-Za-z0-9_-]+$/);
    expect(b.queue).toMatch(/^amq\.gen-/);
    expect(a.queue).not.toBe(b.queue);
    expect(await ch.checkQueue(a.queue)).toMatchObject({ queue: a.queue });
    expect(await failureCode(conn, (c) => c.assertQueue('amq.mine'))).toBe(403);
  });

  it('passive declare of a missing queue is 404 and closes only that channel', async () => {
    const conn = await connect();
    const bystander = await conn.createChannel();
    expect(await failureCode(conn, (c) => c.checkQueue(unique('missing')))).toBe(404);
    await expect(bystander.checkExchange('amq.direct')).resolves.toEqual({});
  });

  it('a re-declare with different durable, auto-delete or compared arguments is 406', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const name = unique('q.redeclare');
    await ch.assertQueue(name, { durable: true, messageTtl: 1000, arguments: { 'x-custom': 'a' } });
    // Arguments RabbitMQ does not compare may differ; integer widths are one type.
    await ch.assertQueue(name, {
      durable: true,
      arguments: { 'x-message-ttl': { '!': 'long', value: 1000 }, 'x-custom': 'b' },
    });
    const cases: [string, Parameters<Channel['assertQueue']>[1]][] = [
      ['durable', { durable: false, messageTtl: 1000 }],
      ['auto_delete', { durable: true, autoDelete: true, messageTtl: 1000 }],
      ['x-message-ttl', { durable: true, messageTtl: 2000 }],
      ['x-message-ttl', { durable: true }],
      ['x-max-length', { durable: true, messageTtl: 1000, maxLength: 10 }],
    ];
    for (const [field, options] of cases) {
      const c = await conn.createChannel();
      const err = await rejectionOf(c.assertQueue(name, options), `406 for ${field}`);
      expect(err.code, field).toBe(406);
      expect(err.message, field).toContain(`inequivalent arg '${field}'`);
    }
    await ch.deleteQueue(name);
  });

  it("accepts x-queue-type 'quorum' and 'classic' (refusing a switch between them) and refuses 'stream'", async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const quorum = unique('q.quorum');
    const classic = unique('q.classic');
    await ch.assertQueue(quorum, { arguments: { 'x-queue-type': 'quorum' } });
    await ch.assertQueue(classic, { arguments: { 'x-queue-type': 'classic' } });
    // A queue declared without a type is classic, so these two are equivalent.
    await ch.assertQueue(classic, {});
    expect(
      await failureCode(conn, (c) => c.assertQueue(quorum, { arguments: { 'x-queue-type': 'classic' } })),
    ).toBe(406);
    expect(await failureCode(conn, (c) => c.assertQueue(quorum, {}))).toBe(406);
    const stream = await conn.createChannel();
    const err = await rejectionOf(
      stream.assertQueue(unique('q.stream'), { arguments: { 'x-queue-type': 'stream' } }),
    );
    expect(err.code).toBe(406);
    expect(err.message).toContain('x-queue-type');
    await ch.deleteQueue(quorum);
    await ch.deleteQueue(classic);
  });

  it('refuses invalid argument values with 406', async () => {
    const conn = await connect();
    const bad: Record<string, unknown>[] = [
      { 'x-message-ttl': -1 },
      { 'x-message-ttl': 'soon' },
      { 'x-expires': 0 },
      { 'x-max-length': 'ten' },
      { 'x-max-length-bytes': -5 },
      { 'x-overflow': 'drop-tail' },
    ];
    for (const args of bad) {
      const ch = await conn.createChannel();
      const err = await rejectionOf(
        ch.assertQueue(unique('q.badarg'), { arguments: args }),
        JSON.stringify(args),
      );
      expect(err.code, JSON.stringify(args)).toBe(406);
      expect(err.message).toContain(`invalid arg '${Object.keys(args)[0]}'`);
    }
  });
});

describe('exclusive queues', () => {
  it('are 405 RESOURCE_LOCKED to every other connection, for every operation', async () => {
    const owner = await connect();
    const ch = await owner.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.exclusive'), { exclusive: true });
    await fill(ch, queue, ['mine']);

    const other = await connect();
    const ops: [string, (c: Channel) => Promise<unknown>][] = [
      ['declare', (c) => c.assertQueue(queue, { exclusive: true })],
      ['passive declare', (c) => c.checkQueue(queue)],
      ['consume', (c) => c.consume(queue, () => {})],
      ['get', (c) => c.get(queue)],
      ['purge', (c) => c.purgeQueue(queue)],
      ['delete', (c) => c.deleteQueue(queue)],
      ['bind', (c) => c.bindQueue(queue, 'amq.fanout', '')],
    ];
    for (const [what, op] of ops) expect(await failureCode(other, op), what).toBe(405);
    // A non-exclusive declare of it, even by its owner, is refused too (the flags must match).
    expect(await failureCode(owner, (c) => c.assertQueue(queue, { exclusive: false }))).toBe(405);
    // Publishing is not an exclusive use: any connection may publish to it.
    const publisher = await other.createConfirmChannel();
    await fill(publisher, queue, ['from another connection']);
    // Untouched by all that, and fully usable by its owner.
    expect(await drain(ch, queue)).toEqual(['mine', 'from another connection']);
    // The converse holds too: a shared queue cannot be re-declared as exclusive.
    const { queue: shared } = await ch.assertQueue(unique('q.shared'), { durable: false });
    expect(await failureCode(other, (c) => c.assertQueue(shared, { durable: false, exclusive: true }))).toBe(
      405,
    );
    await ch.deleteQueue(shared);
  });

  it('disappear when their connection closes', async () => {
    const owner = await connect();
    const ch = await owner.createChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    const watcher = await connect();
    expect(await failureCode(watcher, (c) => c.checkQueue(queue))).toBe(405);
    await owner.close();
    await waitFor(async () => !(await exists(watcher, queue)), 'the exclusive queue to be deleted');
  });
});

describe('auto-delete queues', () => {
  it('go when the last consumer cancels, not before, and not if never consumed from', async () => {
    const conn = await connect();
    const ch1 = await conn.createChannel();
    const ch2 = await conn.createChannel();
    const name = unique('q.autodelete');
    const unused = unique('q.autodelete.unused');
    await ch1.assertQueue(name, { autoDelete: true, durable: false });
    await ch1.assertQueue(unused, { autoDelete: true, durable: false });
    const a = await ch1.consume(name, () => {});
    const b = await ch2.consume(name, () => {});
    await ch1.cancel(a.consumerTag);
    expect(await ch1.checkQueue(name)).toMatchObject({ consumerCount: 1 });
    await ch2.cancel(b.consumerTag);
    await waitFor(async () => !(await exists(conn, name)), 'the auto-delete queue to be deleted');
    expect(await exists(conn, unused)).toBe(true);
  });

  it('go when the last consumer’s channel or connection closes', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const { queue } = await ch.assertQueue(unique('q.autodelete.close'), {
      autoDelete: true,
      durable: false,
    });
    await ch.consume(queue, () => {});
    await ch.close();
    await waitFor(async () => !(await exists(conn, queue)), 'the auto-delete queue to be deleted');

    const consumerConn = await connect();
    const consumerCh = await consumerConn.createChannel();
    const { queue: other } = await consumerCh.assertQueue(unique('q.autodelete.conn'), {
      autoDelete: true,
      durable: false,
    });
    await consumerCh.consume(other, () => {});
    await consumerConn.close();
    await waitFor(async () => !(await exists(conn, other)), 'the auto-delete queue to be deleted');
  });
});

describe('queue delete and purge', () => {
  it('delete replies with the ready message count; a missing queue deletes fine with 0', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.delete'), { durable: false });
    await fill(ch, queue, ['1', '2', '3']);
    expect(await ch.deleteQueue(queue)).toEqual({ messageCount: 3 });
    expect(await exists(conn, queue)).toBe(false);
    expect(await ch.deleteQueue(queue)).toEqual({ messageCount: 0 });
  });

  it('if-unused refuses a queue with consumers and if-empty one with messages (406)', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.ifunused'), { durable: false });
    const consumerCh = await conn.createChannel();
    const { consumerTag } = await consumerCh.consume(queue, () => {}, { noAck: true });

    const inUse = await conn.createChannel();
    const closed = channelClosed(inUse);
    const e1 = await rejectionOf(inUse.deleteQueue(queue, { ifUnused: true }));
    expect(e1.code).toBe(406);
    expect(e1.message).toContain('in use');
    await closed;
    await consumerCh.cancel(consumerTag);

    await fill(ch, queue, ['x']);
    const notEmpty = await conn.createChannel();
    const e2 = await rejectionOf(notEmpty.deleteQueue(queue, { ifEmpty: true }));
    expect(e2.code).toBe(406);
    expect(e2.message).toContain('not empty');

    expect(await exists(conn, queue)).toBe(true);
    await ch.purgeQueue(queue);
    expect(await ch.deleteQueue(queue, { ifUnused: true, ifEmpty: true })).toEqual({ messageCount: 0 });
  });

  it('purge removes the ready messages and replies with their count; unacked ones survive', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.purge'), { durable: false });
    await fill(ch, queue, ['held', 'a', 'b', 'c']);
    const holder = await conn.createChannel();
    const held = await getOne(holder, queue, false);
    expect(held.content.toString()).toBe('held');
    expect(await ch.purgeQueue(queue)).toEqual({ messageCount: 3 });
    expect(await ch.purgeQueue(queue)).toEqual({ messageCount: 0 });
    await holder.close();
    const back = await getOne(ch, queue);
    expect({ body: back.content.toString(), redelivered: back.fields.redelivered }).toEqual({
      body: 'held',
      redelivered: true,
    });
  });
});

describe('queue bindings', () => {
  it('bind and unbind change routing; a missing end is 404; unbinding what is not bound is fine', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const x = unique('x.bind');
    await ch.assertExchange(x, 'direct', { durable: false });
    const { queue } = await ch.assertQueue(unique('q.bind'), { durable: false });
    await ch.bindQueue(queue, x, 'k');
    // Binding twice is one binding.
    await ch.bindQueue(queue, x, 'k');
    ch.publish(x, 'k', Buffer.from('bound'));
    await ch.waitForConfirms();
    expect(await drain(ch, queue)).toEqual(['bound']);
    await ch.unbindQueue(queue, x, 'k');
    await ch.unbindQueue(queue, x, 'never-bound');
    ch.publish(x, 'k', Buffer.from('unbound'));
    await ch.waitForConfirms();
    expect(await drain(ch, queue)).toEqual([]);

    expect(await failureCode(conn, (c) => c.bindQueue(queue, unique('missing.x'), 'k'))).toBe(404);
    expect(await failureCode(conn, (c) => c.bindQueue(unique('missing.q'), x, 'k'))).toBe(404);
    expect(await failureCode(conn, (c) => c.bindExchange(unique('missing.x'), x, 'k'))).toBe(404);
  });

  it('deleting a queue removes its bindings', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const x = unique('x.bind.delete');
    await ch.assertExchange(x, 'fanout', { durable: false });
    const name = unique('q.bind.delete');
    await ch.assertQueue(name, { durable: false });
    await ch.bindQueue(name, x, '');
    await ch.deleteQueue(name);
    await ch.assertQueue(name, { durable: false });
    ch.publish(x, '', Buffer.from('to the old binding'));
    await ch.waitForConfirms();
    expect(await drain(ch, name)).toEqual([]);
    await ch.deleteQueue(name);
  });
});
