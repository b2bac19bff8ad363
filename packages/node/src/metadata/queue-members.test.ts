import { ReplyCode } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { metadataCommandCodec } from './command-codec.ts';
import { bootstrapCommands, MetadataMachine } from './metadata-machine.ts';
import type { MetadataCommand, MetadataOk, MetadataReply } from './types.ts';

type DeclareQueue = Extract<MetadataCommand, { type: 'declareQueue' }>;
type SetQueueMembers = Extract<MetadataCommand, { type: 'setQueueMembers' }>;

const META = { index: 1, term: 1, ts: 0 };

function ok(reply: MetadataReply): MetadataOk {
  if (reply.type !== 'ok') throw new Error(`expected ok, got ${reply.code} ${reply.text}`);
  return reply;
}

function apply(m: MetadataMachine, command: MetadataCommand): MetadataReply {
  return m.apply(command, META);
}

function declare(name: string, over: Partial<DeclareQueue> = {}): DeclareQueue {
  return {
    type: 'declareQueue',
    vhost: '/',
    name,
    durable: true,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: { entries: [] },
    groupId: `g-${name}`,
    ...over,
  };
}

function setMembers(
  name: string,
  members: readonly string[],
  over: Partial<SetQueueMembers> = {},
): SetQueueMembers {
  return { type: 'setQueueMembers', vhost: '/', name, groupId: `g-${name}`, members, ...over };
}

/** A bootstrapped machine with cluster members id-1, id-2 and id-3 (names styx-1…3). */
function cluster(): MetadataMachine {
  const m = new MetadataMachine();
  for (const c of bootstrapCommands({ passwordHash: 'hash' })) ok(apply(m, c));
  for (const n of [1, 2, 3]) {
    ok(
      apply(m, {
        type: 'addClusterNode',
        id: `id-${n}`,
        peerId: `id-${n}`,
        name: `styx-${n}`,
        address: `10.0.0.${n}:25680`,
      }),
    );
  }
  return m;
}

describe('setQueueMembers', () => {
  it('replaces the record’s members (the preferred leader first) and answers with the new record', () => {
    const m = cluster();
    ok(apply(m, declare('q', { node: 'id-1', members: ['id-1'] })));
    const before = m.queue('/', 'q');
    expect(before?.members).toEqual(['id-1']);
    const reply = ok(apply(m, setMembers('q', ['id-2', 'id-1', 'id-3'])));
    const after = m.queue('/', 'q');
    expect(after?.members).toEqual(['id-2', 'id-1', 'id-3']);
    expect(reply.queue).toEqual(after);
    // The record is replaced, not mutated; everything else is kept.
    expect(before?.members).toEqual(['id-1']);
    expect(after).not.toBe(before);
    expect({ ...after, members: undefined }).toEqual({ ...before, members: undefined });
    expect(Object.isFrozen(after?.members)).toBe(true);
  });

  it('drops repeated ids, keeping the first place of each', () => {
    const m = cluster();
    ok(apply(m, declare('q', { node: 'id-1', members: ['id-1'] })));
    ok(apply(m, setMembers('q', ['id-3', 'id-1', 'id-3', 'id-1'])));
    expect(m.queue('/', 'q')?.members).toEqual(['id-3', 'id-1']);
  });

  it('gives members to a queue declared before replication (node only)', () => {
    const m = cluster();
    ok(apply(m, declare('old', { node: 'id-1' })));
    expect(m.queue('/', 'old')?.members).toBeUndefined();
    ok(apply(m, setMembers('old', ['id-1', 'id-2'])));
    expect(m.queue('/', 'old')).toMatchObject({ node: 'id-1', members: ['id-1', 'id-2'] });
  });

  it('ignores an unknown queue, vhost or incarnation (ok, nothing changed)', () => {
    const m = cluster();
    ok(apply(m, declare('q', { members: ['id-1'] })));
    const before = m.snapshot();
    expect(ok(apply(m, setMembers('nope', ['id-2']))).queue).toBeUndefined();
    expect(ok(apply(m, setMembers('q', ['id-2'], { vhost: 'no-such-vhost' }))).queue).toBeUndefined();
    // The queue was deleted and declared again: a change for the old incarnation is stale.
    expect(ok(apply(m, setMembers('q', ['id-2'], { groupId: 'g-q-previous' }))).queue).toBeUndefined();
    expect(m.queue('/', 'q')?.members).toEqual(['id-1']);
    expect(m.snapshot()).toEqual(before);
  });

  it('refuses a node that is not a cluster member with 406, changing nothing', () => {
    const m = cluster();
    ok(apply(m, declare('q', { members: ['id-1'] })));
    const reply = apply(m, setMembers('q', ['id-1', 'id-9']));
    expect(reply).toMatchObject({ type: 'error', code: ReplyCode.PRECONDITION_FAILED });
    expect(reply.type === 'error' ? reply.text : '').toContain('id-9');
    // A member's name is not its id.
    expect(apply(m, setMembers('q', ['styx-2']))).toMatchObject({
      type: 'error',
      code: ReplyCode.PRECONDITION_FAILED,
    });
    // A forgotten node is no member any more.
    ok(apply(m, { type: 'forgetClusterNode', node: 'id-3' }));
    expect(apply(m, setMembers('q', ['id-1', 'id-3']))).toMatchObject({
      type: 'error',
      code: ReplyCode.PRECONDITION_FAILED,
    });
    expect(m.queue('/', 'q')?.members).toEqual(['id-1']);
  });

  it('refuses an empty list with 406, changing nothing', () => {
    const m = cluster();
    ok(apply(m, declare('q', { members: ['id-1', 'id-2'] })));
    const reply = apply(m, setMembers('q', []));
    expect(reply).toMatchObject({ type: 'error', code: ReplyCode.PRECONDITION_FAILED });
    expect(reply.type === 'error' ? reply.text : '').toContain('no members left');
    expect(m.queue('/', 'q')?.members).toEqual(['id-1', 'id-2']);
  });

  it('refuses a malformed command (members not a list of strings) with an error reply', () => {
    const m = cluster();
    ok(apply(m, declare('q', { members: ['id-1'] })));
    for (const members of ['id-1', [1, 2], null, undefined]) {
      const reply = apply(m, { ...setMembers('q', []), members } as unknown as MetadataCommand);
      expect(reply.type).toBe('error');
    }
    expect(apply(m, { ...setMembers('q', ['id-1']), groupId: 7 } as unknown as MetadataCommand).type).toBe(
      'error',
    );
    expect(m.queue('/', 'q')?.members).toEqual(['id-1']);
  });

  it('round-trips through the command codec', () => {
    const command = setMembers('qü', ['id-1', 'id-2']);
    expect(metadataCommandCodec.decode(metadataCommandCodec.encode(command))).toEqual(command);
  });
});

describe('declareQueue members', () => {
  it('keeps a non-empty members list; an empty or absent one leaves the record without members', () => {
    const m = cluster();
    ok(apply(m, declare('a', { node: 'id-1', members: ['id-1', 'id-2'] })));
    ok(apply(m, declare('b', { node: 'id-1', members: [] })));
    ok(apply(m, declare('c', { node: 'id-1' })));
    expect(m.queue('/', 'a')?.members).toEqual(['id-1', 'id-2']);
    expect(m.queue('/', 'b')).not.toHaveProperty('members');
    expect(m.queue('/', 'c')).not.toHaveProperty('members');
  });

  it('refuses members that are not a list of strings', () => {
    const m = cluster();
    const reply = apply(m, { ...declare('q'), members: 'id-1' } as unknown as MetadataCommand);
    expect(reply.type).toBe('error');
    expect(m.queue('/', 'q')).toBeUndefined();
  });
});

describe('snapshots keep queue members', () => {
  it('a restored machine has the same records: members with and without a home node, and neither', () => {
    const m = cluster();
    ok(apply(m, declare('with-node', { node: 'id-1', members: ['id-1', 'id-2', 'id-3'] })));
    ok(apply(m, declare('members-only', { members: ['id-2'] })));
    ok(apply(m, declare('node-only', { node: 'id-3' })));
    ok(apply(m, declare('neither')));
    ok(apply(m, setMembers('with-node', ['id-3', 'id-1'])));
    const bytes = m.snapshot();
    const r = new MetadataMachine();
    r.restore(bytes, META);
    expect(r.queues()).toEqual(m.queues());
    expect(r.queue('/', 'with-node')).toMatchObject({ node: 'id-1', members: ['id-3', 'id-1'] });
    expect(r.queue('/', 'members-only')?.members).toEqual(['id-2']);
    expect(r.queue('/', 'members-only')).not.toHaveProperty('node');
    expect(r.queue('/', 'node-only')).not.toHaveProperty('members');
    expect(r.queue('/', 'node-only')?.node).toBe('id-3');
    expect(r.queue('/', 'neither')).not.toHaveProperty('node');
    expect(r.queue('/', 'neither')).not.toHaveProperty('members');
    expect(r.snapshot()).toEqual(bytes);
    // The restored machine goes on applying member changes.
    ok(apply(r, setMembers('members-only', ['id-2', 'id-1'])));
    expect(r.queue('/', 'members-only')?.members).toEqual(['id-2', 'id-1']);
  });
});

describe('founders (queue_founders)', () => {
  it('are recorded at the declare, kept through member changes and snapshots, and never set by a redeclare', () => {
    const m = cluster();
    ok(
      apply(
        m,
        declare('f', { node: 'id-1', members: ['id-1', 'id-2', 'id-3'], founders: ['id-1', 'id-2', 'id-3'] }),
      ),
    );
    ok(apply(m, declare('plain', { node: 'id-1', members: ['id-1', 'id-2'] })));
    expect(m.queue('/', 'f')?.founders).toEqual(['id-1', 'id-2', 'id-3']);
    expect(Object.isFrozen(m.queue('/', 'f')?.founders)).toBe(true);
    expect(m.queue('/', 'plain')).not.toHaveProperty('founders');
    // Members move on; the group's initial voters stay what they were.
    ok(apply(m, setMembers('f', ['id-2', 'id-3'])));
    expect(m.queue('/', 'f')).toMatchObject({
      members: ['id-2', 'id-3'],
      founders: ['id-1', 'id-2', 'id-3'],
    });
    // Declaring the existing queue again names other founders: the record keeps its own.
    ok(apply(m, declare('f', { node: 'id-2', members: ['id-2'], founders: ['id-2'] })));
    expect(m.queue('/', 'f')?.founders).toEqual(['id-1', 'id-2', 'id-3']);
    // An empty list records nothing.
    ok(apply(m, declare('empty', { node: 'id-1', members: ['id-1'], founders: [] })));
    expect(m.queue('/', 'empty')).not.toHaveProperty('founders');
    const bytes = m.snapshot();
    const r = new MetadataMachine();
    r.restore(bytes, META);
    expect(r.queues()).toEqual(m.queues());
    expect(r.snapshot()).toEqual(bytes);
  });

  it('refuses founders that are not a list of strings', () => {
    const m = cluster();
    const bad = { ...declare('q', { members: ['id-1'] }), founders: 'id-1' } as unknown as MetadataCommand;
    const reply = apply(m, bad);
    expect(reply.type).toBe('error');
    expect(m.queue('/', 'q')).toBeUndefined();
  });
});
