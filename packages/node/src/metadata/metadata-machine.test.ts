import type { FieldTable, FieldValue } from '@styx/client/wire';
import { decodeBatch, encodeBatch, fieldTableEquals, frame } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { metadataCommandCodec } from './command-codec.ts';
import {
  bootstrapCommands,
  MetadataMachine,
  SnapshotFormatError,
  STANDARD_EXCHANGES,
} from './metadata-machine.ts';
import type { MetadataCommand, MetadataError, MetadataOk, MetadataReply } from './types.ts';

const META = { index: 1, term: 1, ts: 0 };
const NO_ARGS: FieldTable = { entries: [] };

function table(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

function okReply(reply: MetadataReply): MetadataOk {
  if (reply.type !== 'ok') throw new Error(`expected ok, got ${reply.code} ${reply.text}`);
  return reply;
}

function errReply(reply: MetadataReply): MetadataError {
  if (reply.type !== 'error') throw new Error('expected an error reply');
  return reply;
}

function run(m: MetadataMachine, command: MetadataCommand): MetadataOk {
  return okReply(m.apply(command, META));
}

function fresh(): MetadataMachine {
  const m = new MetadataMachine();
  for (const c of bootstrapCommands({ passwordHash: 'hash' })) run(m, c);
  return m;
}

function exchangeCmd(
  name: string,
  over: Partial<Extract<MetadataCommand, { type: 'declareExchange' }>> = {},
): MetadataCommand {
  return {
    type: 'declareExchange',
    vhost: '/',
    name,
    exchangeType: 'direct',
    durable: true,
    autoDelete: false,
    internal: false,
    arguments: NO_ARGS,
    ...over,
  };
}

function queueCmd(
  name: string,
  over: Partial<Extract<MetadataCommand, { type: 'declareQueue' }>> = {},
): MetadataCommand {
  return {
    type: 'declareQueue',
    vhost: '/',
    name,
    durable: true,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: NO_ARGS,
    groupId: `g-${name}`,
    ...over,
  };
}

function deleteQueueCmd(
  name: string,
  over: Partial<Extract<MetadataCommand, { type: 'deleteQueue' }>> = {},
): MetadataCommand {
  return {
    type: 'deleteQueue',
    vhost: '/',
    name,
    ifUnused: false,
    ifEmpty: false,
    consumers: 0,
    messages: 0,
    ...over,
  };
}

function bindCmd(
  source: string,
  destination: string,
  routingKey = '',
  over: Partial<Extract<MetadataCommand, { type: 'bind' }>> = {},
): Extract<MetadataCommand, { type: 'bind' }> {
  return {
    type: 'bind',
    vhost: '/',
    source,
    destinationKind: 'queue',
    destination,
    routingKey,
    arguments: NO_ARGS,
    ...over,
  };
}

function unbindCmd(
  source: string,
  destination: string,
  routingKey = '',
  over: Partial<MetadataCommand> = {},
): MetadataCommand {
  return { ...bindCmd(source, destination, routingKey), ...over, type: 'unbind' } as MetadataCommand;
}

describe('bootstrap and vhosts', () => {
  it('bootstraps vhost /, an administrator guest with full permissions, and the standard exchanges', () => {
    const m = fresh();
    expect(m.vhosts()).toEqual([{ name: '/' }]);
    expect(m.user('guest')).toEqual({ name: 'guest', passwordHash: 'hash', tags: ['administrator'] });
    expect(m.permissions('guest', '/')).toEqual({
      user: 'guest',
      vhost: '/',
      configure: '.*',
      write: '.*',
      read: '.*',
    });
    expect(m.exchanges('/').map((x) => [x.name, x.type, x.durable, x.autoDelete, x.internal])).toEqual(
      STANDARD_EXCHANGES.map((x) => [x.name, x.type, true, false, false]),
    );
    expect(STANDARD_EXCHANGES.map((x) => x.name)).toEqual([
      '',
      'amq.direct',
      'amq.fanout',
      'amq.topic',
      'amq.headers',
      'amq.match',
    ]);
  });

  it('starts empty', () => {
    const m = new MetadataMachine();
    expect(m.vhosts()).toEqual([]);
    expect(m.users()).toEqual([]);
    expect(m.queues()).toEqual([]);
  });

  it('adds vhosts idempotently, each with its own standard exchanges', () => {
    const m = fresh();
    expect(run(m, { type: 'addVhost', name: 'v2' }).created).toBe(true);
    expect(run(m, { type: 'addVhost', name: 'v2' }).created).toBe(false);
    expect(m.exchange('v2', 'amq.topic')?.type).toBe('topic');
    expect(m.exchanges('nope')).toEqual([]);
  });

  it('deletes a vhost with everything in it, listing its queues and exchanges', () => {
    const m = fresh();
    run(m, { type: 'addVhost', name: 'v2' });
    run(m, { type: 'setPermissions', user: 'guest', vhost: 'v2', configure: '.*', write: '.*', read: '.*' });
    run(m, { ...queueCmd('q1'), vhost: 'v2' } as MetadataCommand);
    run(m, { ...queueCmd('q2', { exclusiveOwner: 'c1' }), vhost: 'v2' } as MetadataCommand);
    run(m, { ...bindCmd('amq.direct', 'q1', 'k'), vhost: 'v2' });
    const reply = run(m, { type: 'deleteVhost', name: 'v2' });
    expect(reply.removed).toBe(true);
    expect(reply.deletedQueues.map((q) => q.name)).toEqual(['q1', 'q2']);
    expect(reply.deletedExchanges.map((x) => x.name)).toEqual(STANDARD_EXCHANGES.map((x) => x.name));
    expect(m.vhost('v2')).toBeUndefined();
    expect(m.permissions('guest', 'v2')).toBeUndefined();
    expect(m.queues()).toEqual([]);
    // The exclusive-owner index forgot q2.
    expect(run(m, { type: 'deleteExclusive', connectionId: 'c1' }).deletedQueues).toEqual([]);
    expect(errReply(m.apply({ type: 'deleteVhost', name: 'v2' }))).toMatchObject({
      code: 404,
      text: "no vhost 'v2'",
    });
  });

  it('refuses commands in an unknown vhost with 404', () => {
    const m = fresh();
    expect(errReply(m.apply({ ...queueCmd('q'), vhost: 'x' } as MetadataCommand)).code).toBe(404);
    expect(errReply(m.apply({ ...exchangeCmd('e'), vhost: 'x' } as MetadataCommand)).code).toBe(404);
    expect(errReply(m.apply({ ...bindCmd('amq.direct', 'q'), vhost: 'x' })).code).toBe(404);
  });

  it('refuses a vhost name longer than 255 UTF-8 bytes with 406', () => {
    const m = fresh();
    expect(errReply(m.apply({ type: 'addVhost', name: 'é'.repeat(128) })).code).toBe(406);
    expect(run(m, { type: 'addVhost', name: 'é'.repeat(127) }).created).toBe(true);
  });
});

describe('users and permissions', () => {
  it('creates, replaces and deletes users; deleting a user drops its permissions', () => {
    const m = fresh();
    expect(run(m, { type: 'putUser', name: 'bob', passwordHash: 'h1', tags: [] }).created).toBe(true);
    expect(run(m, { type: 'putUser', name: 'bob', passwordHash: 'h2', tags: ['management'] }).created).toBe(
      false,
    );
    expect(m.user('bob')).toEqual({ name: 'bob', passwordHash: 'h2', tags: ['management'] });
    run(m, { type: 'setPermissions', user: 'bob', vhost: '/', configure: '', write: 'x', read: 'y' });
    expect(run(m, { type: 'deleteUser', name: 'bob' }).removed).toBe(true);
    expect(m.user('bob')).toBeUndefined();
    expect(m.permissions('bob', '/')).toBeUndefined();
    expect(errReply(m.apply({ type: 'deleteUser', name: 'bob' }))).toMatchObject({
      code: 404,
      text: "no user 'bob'",
    });
  });

  it('sets and clears permissions, checking the user, the vhost and the regexes', () => {
    const m = fresh();
    const set = (over: object): MetadataReply =>
      m.apply({
        type: 'setPermissions',
        user: 'guest',
        vhost: '/',
        configure: '',
        write: '',
        read: '',
        ...over,
      } as MetadataCommand);
    expect(errReply(set({ user: 'nobody' })).code).toBe(404);
    expect(errReply(set({ vhost: 'nowhere' })).code).toBe(404);
    const bad = errReply(set({ write: '(' }));
    expect(bad.code).toBe(406);
    expect(bad.text).toContain("invalid write regular expression '('");
    expect(okReply(set({ read: '^amq\\.' })).created).toBe(false);
    expect(m.permissions('guest', '/')?.read).toBe('^amq\\.');
    expect(run(m, { type: 'clearPermissions', user: 'guest', vhost: '/' }).removed).toBe(true);
    expect(run(m, { type: 'clearPermissions', user: 'guest', vhost: '/' }).removed).toBe(false);
    expect(m.permissions('guest', '/')).toBeUndefined();
    expect(errReply(m.apply({ type: 'clearPermissions', user: 'x', vhost: '/' })).code).toBe(404);
    expect(errReply(m.apply({ type: 'clearPermissions', user: 'guest', vhost: 'x' })).code).toBe(404);
  });
});

describe('exchanges', () => {
  it('declares an exchange and accepts an equivalent redeclare', () => {
    const m = fresh();
    const first = run(
      m,
      exchangeCmd('logs', {
        exchangeType: 'topic',
        arguments: table({ 'alternate-exchange': { longStr: 'ae' } }),
      }),
    );
    expect(first.created).toBe(true);
    expect(first.exchange).toMatchObject({ vhost: '/', name: 'logs', type: 'topic', durable: true });
    const again = run(
      m,
      exchangeCmd('logs', {
        exchangeType: 'topic',
        arguments: table({ 'alternate-exchange': { shortStr: 'ae' } }),
      }),
    );
    expect(again.created).toBe(false);
    expect(again.exchange).toBe(first.exchange);
  });

  it('refuses inequivalent redeclares with 406 and RabbitMQ wording', () => {
    const m = fresh();
    run(m, exchangeCmd('x'));
    const cases: [Partial<Extract<MetadataCommand, { type: 'declareExchange' }>>, string][] = [
      [
        { exchangeType: 'fanout' },
        "inequivalent arg 'type' for exchange 'x' in vhost '/': received 'fanout' but current is 'direct'",
      ],
      [
        { durable: false },
        "inequivalent arg 'durable' for exchange 'x' in vhost '/': received 'false' but current is 'true'",
      ],
      [
        { autoDelete: true },
        "inequivalent arg 'auto_delete' for exchange 'x' in vhost '/': received 'true' but current is 'false'",
      ],
      [
        { internal: true },
        "inequivalent arg 'internal' for exchange 'x' in vhost '/': received 'true' but current is 'false'",
      ],
      [
        { arguments: table({ 'alternate-exchange': { longStr: 'ae' } }) },
        "inequivalent arg 'alternate-exchange' for exchange 'x' in vhost '/': received the value 'ae' of type 'longstr' but current is none",
      ],
    ];
    for (const [over, text] of cases) {
      expect(errReply(m.apply(exchangeCmd('x', over)))).toEqual({ type: 'error', code: 406, text });
    }
    // Other arguments are not compared (RabbitMQ compares only alternate-exchange).
    expect(run(m, exchangeCmd('x', { arguments: table({ foo: { i32: 1 } }) })).created).toBe(false);
  });

  it('refuses unknown types with 503, the default exchange and amq.* names with 403, long names with 406', () => {
    const m = fresh();
    expect(errReply(m.apply(exchangeCmd('x', { exchangeType: 'foo' })))).toEqual({
      type: 'error',
      code: 503,
      text: "invalid exchange type 'foo'",
    });
    expect(errReply(m.apply(exchangeCmd('')))).toEqual({
      type: 'error',
      code: 403,
      text: 'operation not permitted on the default exchange',
    });
    expect(errReply(m.apply(exchangeCmd('amq.custom')))).toEqual({
      type: 'error',
      code: 403,
      text: "exchange name 'amq.custom' contains reserved prefix 'amq.*'",
    });
    expect(errReply(m.apply(exchangeCmd('x'.repeat(256)))).code).toBe(406);
    expect(run(m, exchangeCmd('x'.repeat(255))).created).toBe(true);
  });

  it('accepts an equivalent redeclare of a standard exchange but not an inequivalent one', () => {
    const m = fresh();
    expect(run(m, exchangeCmd('amq.topic', { exchangeType: 'topic' })).created).toBe(false);
    expect(errReply(m.apply(exchangeCmd('amq.topic'))).code).toBe(406);
  });

  it('deletes exchanges: missing is ok, default and amq.* are 403, if-unused with bindings is 406', () => {
    const m = fresh();
    const del = (name: string, ifUnused = false): MetadataReply =>
      m.apply({ type: 'deleteExchange', vhost: '/', name, ifUnused });
    expect(okReply(del('missing')).removed).toBe(false);
    expect(errReply(del('')).code).toBe(403);
    expect(errReply(del('amq.direct'))).toEqual({
      type: 'error',
      code: 403,
      text: "deletion of system exchange 'amq.direct' in vhost '/' not allowed",
    });
    run(m, exchangeCmd('x'));
    run(m, queueCmd('q'));
    run(m, bindCmd('x', 'q', 'k'));
    expect(errReply(del('x', true))).toEqual({
      type: 'error',
      code: 406,
      text: "exchange 'x' in vhost '/' in use",
    });
    const reply = okReply(del('x'));
    expect(reply.removed).toBe(true);
    expect(reply.deletedExchanges.map((x) => x.name)).toEqual(['x']);
    expect(m.exchange('/', 'x')).toBeUndefined();
    expect(m.bindings('/')).toEqual([]);
  });

  it('deleting an exchange removes bindings where it is source or destination', () => {
    const m = fresh();
    run(m, exchangeCmd('a'));
    run(m, exchangeCmd('b'));
    run(m, queueCmd('q'));
    run(m, bindCmd('a', 'b', 'k', { destinationKind: 'exchange' }));
    run(m, bindCmd('b', 'q', 'k'));
    run(m, bindCmd('amq.direct', 'q', 'z'));
    run(m, { type: 'deleteExchange', vhost: '/', name: 'b', ifUnused: false });
    expect(m.bindings('/').map((b) => [b.source, b.destination])).toEqual([['amq.direct', 'q']]);
  });
});

describe('queues', () => {
  it('declares a queue with its record and accepts an equivalent redeclare, keeping the first groupId', () => {
    const m = fresh();
    const args = table({ 'x-message-ttl': { i32: 1000 }, 'x-dead-letter-exchange': { longStr: 'dlx' } });
    const first = run(m, queueCmd('q', { arguments: args, groupId: 'g1' }));
    expect(first.created).toBe(true);
    expect(first.queue).toEqual({
      vhost: '/',
      name: 'q',
      durable: true,
      exclusiveOwner: undefined,
      autoDelete: false,
      arguments: args,
      groupId: 'g1',
    });
    // Integer widths are one type for equivalence; short and long strings too.
    const same = table({ 'x-message-ttl': { i64: 1000 }, 'x-dead-letter-exchange': { shortStr: 'dlx' } });
    const again = run(m, queueCmd('q', { arguments: same, groupId: 'g2' }));
    expect(again.created).toBe(false);
    expect(again.queue?.groupId).toBe('g1');
    expect(m.queue('/', 'q')?.groupId).toBe('g1');
  });

  it('refuses inequivalent redeclares with 406 and RabbitMQ wording', () => {
    const m = fresh();
    run(m, queueCmd('q'));
    expect(errReply(m.apply(queueCmd('q', { durable: false })))).toEqual({
      type: 'error',
      code: 406,
      text: "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'false' but current is 'true'",
    });
    expect(errReply(m.apply(queueCmd('q', { autoDelete: true }))).text).toBe(
      "inequivalent arg 'auto_delete' for queue 'q' in vhost '/': received 'true' but current is 'false'",
    );
    expect(
      errReply(m.apply(queueCmd('q', { arguments: table({ 'x-message-ttl': { i32: 1000 } }) }))),
    ).toEqual({
      type: 'error',
      code: 406,
      text: "inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/': received the value '1000' of type 'signedint' but current is none",
    });
    run(m, queueCmd('t', { arguments: table({ 'x-max-length': { i32: 5 } }) }));
    expect(errReply(m.apply(queueCmd('t', { arguments: table({ 'x-max-length': { i32: 6 } }) }))).text).toBe(
      "inequivalent arg 'x-max-length' for queue 't' in vhost '/': received the value '6' of type 'signedint' but current is the value '5' of type 'signedint'",
    );
    // Removing a compared argument is inequivalent too.
    expect(errReply(m.apply(queueCmd('t'))).text).toContain("received none but current is the value '5'");
    // Unknown arguments are not compared.
    expect(run(m, queueCmd('q', { arguments: table({ 'x-custom': { i32: 1 } }) })).created).toBe(false);
  });

  it('treats a queue declared without x-queue-type as classic, but not as quorum', () => {
    const m = fresh();
    run(m, queueCmd('q'));
    expect(
      run(m, queueCmd('q', { arguments: table({ 'x-queue-type': { longStr: 'classic' } }) })).created,
    ).toBe(false);
    expect(
      errReply(m.apply(queueCmd('q', { arguments: table({ 'x-queue-type': { longStr: 'quorum' } }) }))).code,
    ).toBe(406);
  });

  it('refuses invalid arguments with 406 naming the queue', () => {
    const m = fresh();
    expect(
      errReply(m.apply(queueCmd('q', { arguments: table({ 'x-message-ttl': { longStr: '1000' } }) }))),
    ).toEqual({
      type: 'error',
      code: 406,
      text: "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': {unacceptable_type,longstr}",
    });
    expect(m.queue('/', 'q')).toBeUndefined();
  });

  it('refuses reserved, empty and over-long names, but allows server-generated amq.gen names', () => {
    const m = fresh();
    expect(errReply(m.apply(queueCmd('amq.q')))).toEqual({
      type: 'error',
      code: 403,
      text: "queue name 'amq.q' contains reserved prefix 'amq.*'",
    });
    expect(run(m, queueCmd('amq.gen-abc', { serverNamed: true })).created).toBe(true);
    expect(errReply(m.apply(queueCmd(''))).code).toBe(406);
    expect(errReply(m.apply(queueCmd('q'.repeat(256)))).code).toBe(406);
  });

  it('enforces exclusive ownership with 405 (strictly on redeclare)', () => {
    const m = fresh();
    run(m, queueCmd('ex', { exclusiveOwner: 'c1' }));
    expect(run(m, queueCmd('ex', { exclusiveOwner: 'c1' })).created).toBe(false);
    const locked = errReply(m.apply(queueCmd('ex', { exclusiveOwner: 'c2' })));
    expect(locked.code).toBe(405);
    expect(locked.text).toMatch(/^cannot obtain exclusive access to locked queue 'ex' in vhost '\/'/);
    // The owner redeclaring it as shared does not match the original declaration either.
    expect(errReply(m.apply(queueCmd('ex'))).code).toBe(405);
    // Nor may a shared queue be redeclared exclusive.
    run(m, queueCmd('shared'));
    expect(errReply(m.apply(queueCmd('shared', { exclusiveOwner: 'c1' }))).code).toBe(405);
    // Delete and bind check ownership when a connection acts.
    expect(errReply(m.apply(deleteQueueCmd('ex', { connectionId: 'c2' }))).code).toBe(405);
    expect(errReply(m.apply(bindCmd('amq.direct', 'ex', 'k', { connectionId: 'c2' }))).code).toBe(405);
    expect(run(m, bindCmd('amq.direct', 'ex', 'k', { connectionId: 'c1' })).created).toBe(true);
    expect(run(m, bindCmd('amq.direct', 'shared', 'k', { connectionId: 'c2' })).created).toBe(true);
    // The node's own operations (no connection) may touch any queue.
    expect(run(m, deleteQueueCmd('ex')).removed).toBe(true);
  });

  it('deletes queues: missing is ok, if-unused and if-empty decide on the counts in the command', () => {
    const m = fresh();
    expect(run(m, deleteQueueCmd('missing')).removed).toBe(false);
    run(m, queueCmd('q'));
    expect(errReply(m.apply(deleteQueueCmd('q', { ifUnused: true, consumers: 1 })))).toEqual({
      type: 'error',
      code: 406,
      text: "queue 'q' in vhost '/' in use",
    });
    expect(errReply(m.apply(deleteQueueCmd('q', { ifEmpty: true, messages: 3 })))).toEqual({
      type: 'error',
      code: 406,
      text: "queue 'q' in vhost '/' not empty",
    });
    // The flags alone do not refuse: the counts do.
    const reply = run(m, deleteQueueCmd('q', { ifUnused: true, ifEmpty: true, consumers: 0, messages: 0 }));
    expect(reply.removed).toBe(true);
    expect(reply.deletedQueues.map((q) => q.groupId)).toEqual(['g-q']);
    expect(m.queue('/', 'q')).toBeUndefined();
  });

  it('leaves a newer incarnation alone when deleteQueue names an old groupId', () => {
    const m = fresh();
    run(m, queueCmd('q', { groupId: 'old' }));
    run(m, deleteQueueCmd('q'));
    run(m, queueCmd('q', { groupId: 'new' }));
    expect(run(m, deleteQueueCmd('q', { groupId: 'old' })).removed).toBe(false);
    expect(m.queue('/', 'q')?.groupId).toBe('new');
    expect(run(m, deleteQueueCmd('q', { groupId: 'new' })).removed).toBe(true);
  });

  it('deleting a queue removes its bindings', () => {
    const m = fresh();
    run(m, queueCmd('q'));
    run(m, queueCmd('r'));
    run(m, bindCmd('amq.direct', 'q', 'a'));
    run(m, bindCmd('amq.topic', 'q', '#'));
    run(m, bindCmd('amq.direct', 'r', 'a'));
    run(m, deleteQueueCmd('q'));
    expect(m.bindings('/').map((b) => b.destination)).toEqual(['r']);
  });

  it("deleteExclusive removes exactly that connection's exclusive queues", () => {
    const m = fresh();
    run(m, queueCmd('a', { exclusiveOwner: 'c1' }));
    run(m, queueCmd('b', { exclusiveOwner: 'c2' }));
    run(m, queueCmd('c', { exclusiveOwner: 'c1', autoDelete: true }));
    run(m, queueCmd('d'));
    run(m, bindCmd('amq.fanout', 'a'));
    const reply = run(m, { type: 'deleteExclusive', connectionId: 'c1' });
    expect(reply.deletedQueues.map((q) => q.name)).toEqual(['a', 'c']);
    expect(m.queues().map((q) => q.name)).toEqual(['b', 'd']);
    expect(m.bindings('/')).toEqual([]);
    expect(run(m, { type: 'deleteExclusive', connectionId: 'c1' }).deletedQueues).toEqual([]);
  });
});

describe('bindings', () => {
  it('binds idempotently; identity includes the arguments regardless of their order', () => {
    const m = fresh();
    run(m, queueCmd('q'));
    expect(run(m, bindCmd('amq.direct', 'q', 'k')).created).toBe(true);
    expect(run(m, bindCmd('amq.direct', 'q', 'k')).created).toBe(false);
    const ab = table({ a: { i32: 1 }, b: { longStr: 'x' } });
    const ba = table({ b: { longStr: 'x' }, a: { i32: 1 } });
    expect(run(m, bindCmd('amq.direct', 'q', 'k', { arguments: ab })).created).toBe(true);
    expect(run(m, bindCmd('amq.direct', 'q', 'k', { arguments: ba })).created).toBe(false);
    // Type-exact: an i8 1 is another binding.
    expect(
      run(m, bindCmd('amq.direct', 'q', 'k', { arguments: table({ a: { i8: 1 }, b: { longStr: 'x' } }) }))
        .created,
    ).toBe(true);
    expect(m.bindings('/')).toHaveLength(3);
    expect(run(m, unbindCmd('amq.direct', 'q', 'k', { arguments: ba })).removed).toBe(true);
    expect(run(m, unbindCmd('amq.direct', 'q', 'k', { arguments: ba })).removed).toBe(false);
    expect(m.bindings('/')).toHaveLength(2);
  });

  it('refuses the default exchange with 403, missing ends with 404, long keys with 406', () => {
    const m = fresh();
    run(m, queueCmd('q'));
    run(m, exchangeCmd('x'));
    const defaultText = 'operation not permitted on the default exchange';
    expect(errReply(m.apply(bindCmd('', 'q', 'q')))).toEqual({ type: 'error', code: 403, text: defaultText });
    expect(errReply(m.apply(bindCmd('x', '', 'k', { destinationKind: 'exchange' }))).code).toBe(403);
    expect(errReply(m.apply(unbindCmd('', 'q', 'q'))).code).toBe(403);
    expect(errReply(m.apply(bindCmd('nope', 'q')))).toEqual({
      type: 'error',
      code: 404,
      text: "no exchange 'nope' in vhost '/'",
    });
    expect(errReply(m.apply(bindCmd('x', 'nope')))).toEqual({
      type: 'error',
      code: 404,
      text: "no queue 'nope' in vhost '/'",
    });
    expect(errReply(m.apply(bindCmd('x', 'nope', '', { destinationKind: 'exchange' }))).text).toBe(
      "no exchange 'nope' in vhost '/'",
    );
    expect(errReply(m.apply(unbindCmd('nope', 'q'))).code).toBe(404);
    expect(errReply(m.apply(unbindCmd('x', 'nope'))).code).toBe(404);
    expect(errReply(m.apply(bindCmd('x', 'q', 'k'.repeat(256)))).code).toBe(406);
  });

  it('validates x-match on headers exchanges with 406', () => {
    const m = fresh();
    run(m, queueCmd('q'));
    const bad = errReply(
      m.apply(bindCmd('amq.headers', 'q', '', { arguments: table({ 'x-match': { longStr: 'some' } }) })),
    );
    expect(bad.code).toBe(406);
    expect(bad.text).toContain('Invalid x-match field value');
    expect(
      errReply(m.apply(bindCmd('amq.headers', 'q', '', { arguments: table({ 'x-match': { i32: 1 } }) })))
        .code,
    ).toBe(406);
    // On other exchange types x-match is just an argument.
    expect(
      run(m, bindCmd('amq.direct', 'q', '', { arguments: table({ 'x-match': { longStr: 'some' } }) }))
        .created,
    ).toBe(true);
  });

  it('deletes an auto-delete exchange when its last binding as source goes, cascading up e2e chains', () => {
    const m = fresh();
    run(m, exchangeCmd('top', { autoDelete: true }));
    run(m, exchangeCmd('mid', { autoDelete: true }));
    run(m, queueCmd('q1'));
    run(m, queueCmd('q2'));
    // A fresh auto-delete exchange with no bindings stays.
    expect(m.exchange('/', 'top')).toBeDefined();
    run(m, bindCmd('top', 'mid', '', { destinationKind: 'exchange' }));
    run(m, bindCmd('mid', 'q1'));
    run(m, bindCmd('mid', 'q2'));
    expect(run(m, unbindCmd('mid', 'q1')).deletedExchanges).toEqual([]);
    // Deleting q2 removes mid's last binding: mid goes, which removes top's last binding: top goes.
    const reply = run(m, deleteQueueCmd('q2'));
    expect(reply.deletedExchanges.map((x) => x.name)).toEqual(['mid', 'top']);
    expect(m.exchange('/', 'mid')).toBeUndefined();
    expect(m.exchange('/', 'top')).toBeUndefined();
    expect(m.bindings('/')).toEqual([]);
  });

  it('auto-deletes on unbind, and survives an auto-delete exchange bound to itself', () => {
    const m = fresh();
    run(m, exchangeCmd('ad', { autoDelete: true }));
    run(m, bindCmd('ad', 'ad', 'k', { destinationKind: 'exchange' }));
    const reply = run(m, unbindCmd('ad', 'ad', 'k', { destinationKind: 'exchange' }));
    expect(reply.removed).toBe(true);
    expect(reply.deletedExchanges.map((x) => x.name)).toEqual(['ad']);
    run(m, exchangeCmd('ad2', { autoDelete: true }));
    run(m, exchangeCmd('ad3', { autoDelete: true }));
    run(m, bindCmd('ad2', 'ad3', 'k', { destinationKind: 'exchange' }));
    run(m, bindCmd('ad3', 'ad2', 'k', { destinationKind: 'exchange' }));
    const cycle = run(m, { type: 'deleteExchange', vhost: '/', name: 'ad2', ifUnused: false });
    expect(cycle.deletedExchanges.map((x) => x.name).sort()).toEqual(['ad2', 'ad3']);
    expect(m.bindings('/')).toEqual([]);
  });
});

describe('bad input', () => {
  it('answers malformed commands with error replies instead of throwing', () => {
    const m = fresh();
    const bad = [
      null,
      {},
      { type: 'frobnicate' },
      { type: 'addVhost' },
      { type: 'declareQueue', vhost: '/', name: 'q' },
      { ...queueCmd('q'), arguments: null },
      { ...queueCmd('q'), arguments: { entries: [{ key: 'k', value: {} }] } },
      { ...queueCmd('q'), durable: 'yes' },
      { ...deleteQueueCmd('q'), consumers: -1 },
      { ...bindCmd('amq.direct', 'q'), destinationKind: 'stream' },
      { type: 'putUser', name: 'u', passwordHash: 'h', tags: [1] },
    ];
    for (const command of bad) {
      const reply = m.apply(command as unknown as MetadataCommand, META);
      expect(reply.type).toBe('error');
    }
    expect(m.queues()).toEqual([]);
  });
});

describe('snapshots and the command codec', () => {
  function populated(): MetadataMachine {
    const m = fresh();
    run(m, { type: 'addVhost', name: 'v2' });
    run(m, { type: 'putUser', name: 'bob', passwordHash: 'h', tags: ['monitoring'] });
    run(m, { type: 'setPermissions', user: 'bob', vhost: 'v2', configure: '^bob', write: '', read: '.*' });
    run(m, exchangeCmd('hx', { exchangeType: 'headers' }));
    run(m, exchangeCmd('tx', { exchangeType: 'topic', autoDelete: true, internal: true }));
    const args = table({
      'x-message-ttl': { i32: 5 },
      bytes: { byteArray: new Uint8Array([0, 1, 255]) },
      inf: { f64: Number.POSITIVE_INFINITY },
      nested: {
        table: table({
          a: { array: { values: [{ bool: true }, { void: {} }, { decimal: { scale: 2, value: 314 } }] } },
        }),
      },
    });
    run(m, queueCmd('q', { arguments: args }));
    run(m, queueCmd('ex', { exclusiveOwner: 'c1' }));
    run(m, bindCmd('hx', 'q', '', { arguments: table({ 'x-match': { longStr: 'any' }, a: { i32: 1 } }) }));
    run(m, bindCmd('tx', 'q', 'a.*'));
    run(m, bindCmd('hx', 'tx', '', { destinationKind: 'exchange' }));
    run(m, bindCmd('amq.direct', 'ex', 'k'));
    return m;
  }

  it('round-trips: the restored machine has the same state and snapshots to the same bytes', () => {
    const m = populated();
    const bytes = m.snapshot();
    const r = new MetadataMachine();
    r.restore(bytes, META);
    expect(r.snapshot()).toEqual(bytes);
    expect(r.vhosts()).toEqual(m.vhosts());
    expect(r.users()).toEqual(m.users());
    expect(r.allPermissions()).toEqual(m.allPermissions());
    expect(r.queues()).toEqual(m.queues());
    expect(r.exchanges('/')).toEqual(m.exchanges('/'));
    expect(r.bindings('/')).toEqual(m.bindings('/'));
    const q = r.queue('/', 'q');
    expect(q?.arguments.entries[1]?.value.byteArray).toEqual(new Uint8Array([0, 1, 255]));
    expect(q?.arguments.entries[2]?.value.f64).toBe(Number.POSITIVE_INFINITY);
    // The restored machine behaves the same: indexes, exclusive owners and auto-delete work.
    expect(
      run(r, bindCmd('hx', 'q', '', { arguments: table({ a: { i32: 1 }, 'x-match': { longStr: 'any' } }) }))
        .created,
    ).toBe(false);
    expect(run(r, { type: 'deleteExclusive', connectionId: 'c1' }).deletedQueues.map((x) => x.name)).toEqual([
      'ex',
    ]);
    expect(run(r, unbindCmd('tx', 'q', 'a.*')).deletedExchanges.map((x) => x.name)).toEqual(['tx']);
  });

  it('restore replaces the previous state', () => {
    const empty = new MetadataMachine().snapshot();
    const m = populated();
    m.restore(empty, META);
    expect(m.vhosts()).toEqual([]);
    expect(m.users()).toEqual([]);
    expect(m.queues()).toEqual([]);
  });

  it('refuses a corrupt or foreign snapshot with SnapshotFormatError', () => {
    const m = new MetadataMachine();
    expect(() => m.restore(new TextEncoder().encode('{nope'), META)).toThrow(SnapshotFormatError);
    expect(() => m.restore(new TextEncoder().encode('{"version":99}'), META)).toThrow(SnapshotFormatError);
    expect(() => m.restore(new TextEncoder().encode('{"version":1,"vhosts":7}'), META)).toThrow(
      SnapshotFormatError,
    );
  });

  it('encodes and decodes commands with typed field tables', () => {
    const command = queueCmd('q', {
      arguments: table({
        ttl: { i64: 7 },
        raw: { byteArray: new Uint8Array([9, 8]) },
        nan: { f64: Number.NaN },
      }),
    });
    const decoded = metadataCommandCodec.decode(metadataCommandCodec.encode(command));
    expect(decoded).toEqual(command);
    const m = fresh();
    expect(run(m, decoded).created).toBe(true);
  });

  it('replays the same commands to the same state (determinism)', () => {
    const a = populated();
    const b = populated();
    expect(a.snapshot()).toEqual(b.snapshot());
  });
});

describe('tables decoded from the wire', () => {
  it('stores a plain copy of a decoded protobuf table, equal in meaning and free of the frame buffer', () => {
    const sent = table({
      'x-message-ttl': { i32: 1000 },
      raw: { byteArray: new Uint8Array([1, 2, 3]) },
      flag: { void: {} },
      nested: {
        table: table({
          d: { decimal: { scale: 1, value: 5 } },
          list: { array: { values: [{ u8: 0 }, { longStr: '' }] } },
        }),
      },
    });
    const bytes = encodeBatch([
      frame(1, 'queueDeclare', {
        queue: 'q',
        passive: false,
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: sent,
      }),
    ]);
    const decoded = decodeBatch(bytes)[0] as { queueDeclare: { arguments: FieldTable } };
    const m = fresh();
    const reply = run(m, queueCmd('q', { arguments: decoded.queueDeclare.arguments }));
    const stored = reply.queue?.arguments as FieldTable;
    expect(fieldTableEquals(stored, sent)).toBe(true);
    expect(stored.entries[1]?.value.byteArray?.buffer).not.toBe(bytes.buffer);
    // One own member per value: the snapshot round-trips to the same meaning.
    const r = new MetadataMachine();
    r.restore(m.snapshot(), META);
    expect(fieldTableEquals(r.queue('/', 'q')?.arguments, sent)).toBe(true);
    // An equivalent redeclare with the plain table is accepted.
    expect(run(m, queueCmd('q', { arguments: sent })).created).toBe(false);
  });
});
