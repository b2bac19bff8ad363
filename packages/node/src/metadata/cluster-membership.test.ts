import { ReplyCode } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { metadataCommandCodec } from './command-codec.ts';
import { bootstrapCommands, MetadataMachine, SnapshotFormatError } from './metadata-machine.ts';
import type { MetadataCommand, MetadataReply } from './types.ts';

type AddClusterNode = Extract<MetadataCommand, { type: 'addClusterNode' }>;

function add(n: number, over: Partial<AddClusterNode> = {}): AddClusterNode {
  return {
    type: 'addClusterNode',
    id: `id-${n}`,
    peerId: `id-${n}`,
    name: `styx-${n}`,
    address: `10.0.0.${n}:25680`,
    ...over,
  };
}

function forget(node: string): MetadataCommand {
  return { type: 'forgetClusterNode', node };
}

/** Apply with `ts` as the entry's time. */
function apply(m: MetadataMachine, command: MetadataCommand, ts = 1000): MetadataReply {
  return m.apply(command, { index: 1, term: 1, ts });
}

function expectOk(reply: MetadataReply, fields: { created?: boolean; removed?: boolean } = {}): void {
  expect(reply).toMatchObject({ type: 'ok', created: false, removed: false, ...fields });
}

function expectError(reply: MetadataReply, code: number, text: string | RegExp): void {
  if (reply.type !== 'error') throw new Error('expected an error reply');
  expect(reply.code).toBe(code);
  if (typeof text === 'string') expect(reply.text).toBe(text);
  else expect(reply.text).toMatch(text);
}

/** A machine with members 1, 2 and 3, joined at ts 10, 20 and 30. */
function threeNodes(): MetadataMachine {
  const m = new MetadataMachine();
  for (const n of [1, 2, 3]) expectOk(apply(m, add(n), n * 10), { created: true });
  return m;
}

describe('addClusterNode', () => {
  it('records members oldest first with the entry time as joinedAt', () => {
    const m = threeNodes();
    expect(m.clusterNodes()).toEqual([
      { id: 'id-1', peerId: 'id-1', name: 'styx-1', address: '10.0.0.1:25680', joinedAt: 10 },
      { id: 'id-2', peerId: 'id-2', name: 'styx-2', address: '10.0.0.2:25680', joinedAt: 20 },
      { id: 'id-3', peerId: 'id-3', name: 'styx-3', address: '10.0.0.3:25680', joinedAt: 30 },
    ]);
    expect(m.clusterNode('id-2')?.name).toBe('styx-2');
    expect(m.clusterNode('styx-3')?.id).toBe('id-3');
    expect(m.clusterNode('styx-9')).toBeUndefined();
  });

  it('is idempotent for the same id and peer id, updating name and address in place', () => {
    const m = threeNodes();
    const before = m.clusterNode('id-2');
    expectOk(apply(m, add(2), 99));
    expect(m.clusterNode('id-2')).toBe(before);
    expectOk(apply(m, add(2, { name: 'renamed', address: 'host-b:1' }), 99));
    expect(m.clusterNodes().map((n) => [n.id, n.name, n.address, n.joinedAt])).toEqual([
      ['id-1', 'styx-1', '10.0.0.1:25680', 10],
      ['id-2', 'renamed', 'host-b:1', 20],
      ['id-3', 'styx-3', '10.0.0.3:25680', 30],
    ]);
    expect(m.clusterNode('styx-2')).toBeUndefined();
  });

  it('refuses a new node under a member name: the node restarted with an empty data dir', () => {
    const m = threeNodes();
    expectError(
      apply(m, add(4, { name: 'styx-2' })),
      ReplyCode.PRECONDITION_FAILED,
      "a node named 'styx-2' is already a member (id id-2); if it was reset or replaced, forget it " +
        'first (forget_cluster_node styx-2), or give this node another name',
    );
    // Nor may a member take another member's name.
    expectError(apply(m, add(3, { name: 'styx-1' })), ReplyCode.PRECONDITION_FAILED, /'styx-1' is already/);
    expect(m.clusterNodes()).toHaveLength(3);
  });

  it('refuses an id or peer id that belongs to another member', () => {
    const m = threeNodes();
    expectError(
      apply(m, add(2, { peerId: 'other' })),
      ReplyCode.PRECONDITION_FAILED,
      'node id id-2 is already a member with peer id id-2, not other',
    );
    expectError(
      apply(m, add(4, { peerId: 'id-1' })),
      ReplyCode.PRECONDITION_FAILED,
      "peer id id-1 is already a member as node 'styx-1' (id id-1)",
    );
  });

  it('refuses empty fields and over-long names with 406', () => {
    const m = new MetadataMachine();
    for (const over of [{ id: '' }, { peerId: '' }, { name: '' }, { address: '' }]) {
      expectError(apply(m, add(1, over)), ReplyCode.PRECONDITION_FAILED, /needs a non-empty id/);
    }
    expectError(apply(m, add(1, { name: 'n'.repeat(256) })), ReplyCode.PRECONDITION_FAILED, /too long/);
    expect(m.clusterNodes()).toEqual([]);
  });
});

describe('forgetClusterNode', () => {
  it('removes a member by id or by name and remembers its id and peer id for ever', () => {
    const m = threeNodes();
    expectOk(apply(m, forget('styx-2')), { removed: true });
    expectOk(apply(m, add(4, { peerId: 'peer-4' })), { created: true });
    expectOk(apply(m, forget('id-4')), { removed: true });
    expect(m.clusterNodes().map((n) => n.name)).toEqual(['styx-1', 'styx-3']);
    expect(m.forgottenNodes()).toEqual(['id-2', 'id-4', 'peer-4']);
    expect(m.isForgotten('id-2')).toBe(true);
    expect(m.isForgotten('peer-4')).toBe(true);
    expect(m.isForgotten('id-1')).toBe(false);
  });

  it('refuses a forgotten id or peer id when it tries to rejoin, under any name', () => {
    const m = threeNodes();
    apply(m, forget('styx-2'));
    expectError(
      apply(m, add(2)),
      ReplyCode.PRECONDITION_FAILED,
      "node 'styx-2' cannot join: its id id-2 was removed from the cluster with forget_cluster_node " +
        'and may not rejoin; start it with an empty data dir (a new identity)',
    );
    expectError(apply(m, add(5, { peerId: 'id-2' })), ReplyCode.PRECONDITION_FAILED, /its peer id id-2 was/);
    // Its name is free again: a node with a new identity takes it.
    expectOk(apply(m, add(6, { name: 'styx-2' })), { created: true });
  });

  it('answers an unknown node with 404 and refuses the last member with 406', () => {
    const m = threeNodes();
    expectError(apply(m, forget('nope')), ReplyCode.NOT_FOUND, "no cluster node 'nope'");
    apply(m, forget('id-1'));
    expectError(
      apply(m, forget('id-1')),
      ReplyCode.NOT_FOUND,
      "no cluster node 'id-1': it was forgotten already",
    );
    apply(m, forget('styx-2'));
    expectError(
      apply(m, forget('styx-3')),
      ReplyCode.PRECONDITION_FAILED,
      "cannot forget node 'styx-3': it is the last member of the cluster",
    );
    expect(m.clusterNodes().map((n) => n.id)).toEqual(['id-3']);
  });
});

describe('membership in snapshots', () => {
  it('round-trips members and forgotten ids, in order', () => {
    const m = threeNodes();
    apply(m, forget('styx-1'));
    const r = new MetadataMachine();
    r.restore(m.snapshot());
    expect(r.clusterNodes()).toEqual(m.clusterNodes());
    expect(r.forgottenNodes()).toEqual(['id-1']);
    expect(r.snapshot()).toEqual(m.snapshot());
    // The restored machine enforces the same rules.
    expectError(apply(r, add(1)), ReplyCode.PRECONDITION_FAILED, /may not rejoin/);
  });

  it('restores a version 2 snapshot (before membership) with empty tables', () => {
    const m = threeNodes();
    apply(m, forget('styx-1'));
    for (const c of bootstrapCommands({ passwordHash: 'hash' })) apply(m, c);
    const old = JSON.parse(new TextDecoder().decode(m.snapshot())) as Record<string, unknown>;
    delete old.clusterNodes;
    delete old.forgottenNodes;
    old.version = 2;
    m.restore(new TextEncoder().encode(JSON.stringify(old)));
    expect(m.clusterNodes()).toEqual([]);
    expect(m.forgottenNodes()).toEqual([]);
    expect(m.vhosts().map((v) => v.name)).toEqual(['/']);
    expectOk(apply(m, add(1)), { created: true });
  });

  it('refuses malformed membership in a snapshot with SnapshotFormatError', () => {
    const snapshot = (extra: Record<string, unknown>): Uint8Array =>
      new TextEncoder().encode(
        JSON.stringify({ version: 3, vhosts: [], users: [], permissions: [], ...extra }),
      );
    const m = new MetadataMachine();
    for (const bad of [
      { clusterNodes: [['id', 'peer', 'name', 'addr']] },
      { clusterNodes: [['id', 'peer', 'name', 7, 1]] },
      { clusterNodes: 'nope' },
      { forgottenNodes: [1] },
    ]) {
      expect(() => m.restore(snapshot(bad))).toThrow(SnapshotFormatError);
    }
  });
});

describe('membership commands in the log', () => {
  it('round-trip through the command codec and apply the same', () => {
    const commands: MetadataCommand[] = [
      add(1, { peerId: '12D3KooWabc', address: '[::1]:25680' }),
      forget('x'),
    ];
    for (const command of commands) {
      expect(metadataCommandCodec.decode(metadataCommandCodec.encode(command))).toEqual(command);
    }
  });

  it('decodes bad bytes as a throw (corrupt entry) and bad fields as a command apply refuses', () => {
    expect(() => metadataCommandCodec.decode(new TextEncoder().encode('{"type":"addClusterNode"'))).toThrow();
    const decoded = metadataCommandCodec.decode(
      new TextEncoder().encode(
        '{"type":"addClusterNode","id":"a","peerId":"a","name":["n"],"address":"h:1"}',
      ),
    );
    expectError(
      new MetadataMachine().apply(decoded),
      ReplyCode.COMMAND_INVALID,
      "malformed metadata command 'addClusterNode': bad field 'name' (string)",
    );
  });

  it('answers malformed membership commands with 503 instead of throwing', () => {
    const m = new MetadataMachine();
    const bad: unknown[] = [
      { type: 'addClusterNode', id: 'a', peerId: 'a', name: 'n' },
      { type: 'addClusterNode', id: 1, peerId: 'a', name: 'n', address: 'h:1' },
      { type: 'forgetClusterNode' },
      { type: 'forgetClusterNode', node: null },
    ];
    for (const command of bad) {
      const reply = m.apply(command as MetadataCommand);
      expectError(
        reply,
        ReplyCode.COMMAND_INVALID,
        /malformed metadata command '(addClusterNode|forgetClusterNode)'/,
      );
    }
    expect(m.clusterNodes()).toEqual([]);
  });

  it('records joinedAt 0 when applied without entry metadata', () => {
    const m = new MetadataMachine();
    m.apply(add(1));
    expect(m.clusterNode('id-1')?.joinedAt).toBe(0);
  });
});
