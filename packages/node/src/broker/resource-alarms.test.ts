// Alarms made cluster-wide: each member pushes its report to the others over cluster RPC (here a
// loopback RPC between three ResourceAlarms), so an alarm on one member blocks everywhere, names
// the member, and clears everywhere; a member counted down has its alarms dropped; a malformed
// report is refused.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logging/logger.ts';
import type { NodeResourceFigures } from './resource-alarms.ts';
import { decodeReport, RESOURCE_REPORT_RPC, ResourceAlarms } from './resource-alarms.ts';

type Handler = (payload: Uint8Array, from: string) => Promise<Uint8Array>;

const FIGURES: NodeResourceFigures = {
  mem_used: 100,
  mem_limit: 0,
  disk_free: 5,
  disk_free_limit: 10,
  fd_used: 20,
  fd_total: 1024,
  sockets_used: 1,
  sockets_total: 1024,
};

/** Three members a, b, c whose RPCs reach each other in-process. */
function threeMembers() {
  const handlers = new Map<string, Handler>();
  const downListeners = new Map<string, (nodeId: string) => void>();
  const ids = ['a', 'b', 'c'];
  const alarms = new Map<string, ResourceAlarms>();
  for (const id of ids) {
    alarms.set(
      id,
      new ResourceAlarms({
        selfId: id,
        logger: silentLogger(),
        members: () => ids,
        figures: () => FIGURES,
        nameOf: (node) => `node-${node}`,
        cluster: {
          handleRpc: (kind, handler) => {
            if (kind === RESOURCE_REPORT_RPC) handlers.set(id, handler);
          },
          callRpc: async (peer, _kind, payload) => (handlers.get(peer) as Handler)(payload, id),
          isDown: () => false,
          onNodeDown: (listener) => {
            downListeners.set(id, listener);
            return () => undefined;
          },
        },
      }),
    );
  }
  const of = (id: string): ResourceAlarms => alarms.get(id) as ResourceAlarms;
  return { of, nodeDown: (on: string, down: string) => downListeners.get(on)?.(down) };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('ResourceAlarms', () => {
  it('blocks every member while one has an alarm, naming it, and unblocks them all when it clears', async () => {
    const { of } = threeMembers();
    let changes = 0;
    of('b').onChange(() => changes++);
    expect(of('b').blockReason()).toBeUndefined();
    of('a').setLocal('disk', true);
    await settle();
    expect(of('a').blockReason()).toBe('low on disk space: free disk space is below disk_free_limit');
    for (const other of ['b', 'c']) {
      expect(of(other).blockReason()).toBe(
        'low on disk space on node node-a: free disk space is below disk_free_limit',
      );
      expect(of(other).all()).toEqual([{ node: 'a', resource: 'disk' }]);
      expect(of(other).local()).toEqual([]);
    }
    expect(of('b').reportOf('a')).toEqual({ node: 'a', alarms: ['disk'], figures: FIGURES });
    expect(changes).toBe(1);
    of('c').setLocal('memory', true);
    await settle();
    expect(of('b').all()).toEqual([
      { node: 'a', resource: 'disk' },
      { node: 'c', resource: 'memory' },
    ]);
    of('a').setLocal('disk', false);
    of('c').setLocal('memory', false);
    await settle();
    for (const id of ['a', 'b', 'c']) expect(of(id).blockReason()).toBeUndefined();
    // Each change of the reason: disk on a; and memory on c; memory on c alone; none.
    expect(changes).toBe(4);
  });

  it('drops the alarms of a member counted down (it must not block the others forever)', async () => {
    const { of, nodeDown } = threeMembers();
    of('a').setLocal('memory', true);
    await settle();
    expect(of('b').blockReason()).toMatch(/memory budget exceeded on node node-a/);
    nodeDown('b', 'a');
    expect(of('b').blockReason()).toBeUndefined();
    expect(of('c').blockReason()).toBeDefined();
  });

  it('refuses a malformed report', () => {
    const bad = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
    expect(() => decodeReport(bad({ node: 'a', alarms: ['cpu'], figures: FIGURES }))).toThrow(/alarms/);
    expect(() => decodeReport(bad({ node: 'a', alarms: [], figures: { ...FIGURES, mem_used: -1 } }))).toThrow(
      /mem_used/,
    );
    expect(() =>
      decodeReport(bad({ node: 'a', alarms: [], figures: { ...FIGURES, mem_used: null } })),
    ).toThrow(/mem_used/);
    expect(() => decodeReport(bad({ alarms: [], figures: FIGURES }))).toThrow(/node/);
    expect(() => decodeReport(new TextEncoder().encode('{'))).toThrow();
    expect(decodeReport(bad({ node: 'a', alarms: ['disk', 'disk'], figures: FIGURES })).alarms).toEqual([
      'disk',
    ]);
  });
});
