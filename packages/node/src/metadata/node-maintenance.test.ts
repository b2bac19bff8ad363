import { ReplyCode } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { metadataCommandCodec } from './command-codec.ts';
import { MetadataMachine } from './metadata-machine.ts';
import type { MetadataCommand, MetadataReply } from './types.ts';

// Maintenance mode in the metadata (setNodeMaintenance): what `styx ctl drain` and `revive` record,
// kept in snapshots so a drained node stays drained across its restart.

function apply(m: MetadataMachine, command: MetadataCommand): MetadataReply {
  // Through the codec, as every replica reads it from its log.
  return m.apply(metadataCommandCodec.decode(metadataCommandCodec.encode(command)), {
    index: 1,
    term: 1,
    ts: 1000,
  });
}

function drain(node: string, drained = true): MetadataCommand {
  return { type: 'setNodeMaintenance', node, drained };
}

function twoNodes(): MetadataMachine {
  const m = new MetadataMachine();
  for (const n of [1, 2]) {
    apply(m, { type: 'addClusterNode', id: `id-${n}`, peerId: `p-${n}`, name: `n${n}`, address: `h:${n}` });
  }
  return m;
}

describe('setNodeMaintenance', () => {
  it('drains and revives a member named by name or id, saying whether it changed', () => {
    const m = twoNodes();
    expect(apply(m, drain('n1'))).toMatchObject({ type: 'ok', created: true });
    expect(m.isNodeDrained('id-1')).toBe(true);
    expect(m.isNodeDrained('id-2')).toBe(false);
    expect(apply(m, drain('id-1'))).toMatchObject({ type: 'ok', created: false, removed: false });
    expect(apply(m, drain('id-1', false))).toMatchObject({ type: 'ok', removed: true });
    expect(m.isNodeDrained('id-1')).toBe(false);
    expect(apply(m, drain('n1', false))).toMatchObject({ type: 'ok', created: false, removed: false });
  });

  it('refuses an unknown node with 404 and a wrong shape with an error reply', () => {
    const m = twoNodes();
    expect(apply(m, drain('n9'))).toEqual({
      type: 'error',
      code: ReplyCode.NOT_FOUND,
      text: "no cluster node 'n9'",
    });
    const bad = { type: 'setNodeMaintenance', node: 'n1', drained: 'yes' } as unknown as MetadataCommand;
    expect(apply(m, bad)).toMatchObject({ type: 'error' });
    expect(m.isNodeDrained('id-1')).toBe(false);
  });

  it('survives a snapshot and restore; a forgotten member is drained no more', () => {
    const m = twoNodes();
    apply(m, drain('n2'));
    const restored = new MetadataMachine();
    restored.restore(m.snapshot());
    expect(restored.isNodeDrained('id-2')).toBe(true);
    expect(restored.isNodeDrained('id-1')).toBe(false);

    apply(m, { type: 'forgetClusterNode', node: 'n2' });
    expect(m.isNodeDrained('id-2')).toBe(false);
  });

  it('restores a snapshot written before maintenance mode with nobody drained', () => {
    const m = twoNodes();
    apply(m, drain('n1'));
    const json = JSON.parse(new TextDecoder().decode(m.snapshot())) as Record<string, unknown>;
    delete json.drainedNodes;
    const restored = new MetadataMachine();
    restored.restore(new TextEncoder().encode(JSON.stringify(json)));
    expect(restored.isNodeDrained('id-1')).toBe(false);
    expect(restored.clusterNodes()).toHaveLength(2);
  });
});
