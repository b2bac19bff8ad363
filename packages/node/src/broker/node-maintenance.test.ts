import { ReplyCode } from '@styx/client/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConnectionError } from '../errors/amqp-error.ts';
import { createLogger } from '../logging/logger.ts';
import type { HandOverGroup } from './node-maintenance.ts';
import { HAND_OVER_CHECK_MS, NodeMaintenance } from './node-maintenance.ts';

// The node side of maintenance mode with groups that record what they are asked; the real Raft
// transfers and client connections are exercised by test/cluster/maintenance.test.ts.

class Group implements HandOverGroup {
  role = 'leader';
  readonly membership: { voters: string[] };
  readonly transfers: string[] = [];
  readonly #progress: Map<string, { match: number; active: boolean }>;

  constructor(voters: string[], progress: Record<string, [number, boolean]>) {
    this.membership = { voters };
    this.#progress = new Map(
      Object.entries(progress).map(([id, [match, active]]) => [id, { match, active }]),
    );
  }

  progress(): ReadonlyMap<string, { match: number; active: boolean }> {
    return this.#progress;
  }

  transferLeadership(to: string): void {
    this.transfers.push(to);
  }
}

function setup(options: { drained?: Set<string> } = {}) {
  const drained = options.drained ?? new Set<string>();
  const queue = new Group(['a', 'b', 'c'], { a: [10, true], b: [8, true], c: [9, true] });
  const follower = new Group(['a', 'b', 'c'], { b: [1, true] });
  follower.role = 'follower';
  const alone = new Group(['a'], {});
  const metadata = new Group(['a', 'b', 'c'], { a: [5, true], b: [5, true], c: [4, false] });
  const closed: string[] = [];
  const groups = new Map<string, HandOverGroup>([
    ['g-queue', queue],
    ['g-follower', follower],
    ['g-alone', alone],
  ]);
  const maintenance = new NodeMaintenance({
    selfId: 'a',
    selfName: 'n1',
    metadata: { isNodeDrained: (id) => drained.has(id) },
    logger: createLogger({ level: 'silent' }),
    replicas: () => [...groups.keys()].map((groupId) => ({ vhost: '/', name: groupId.slice(2), groupId })),
    queueGroup: (groupId) => groups.get(groupId),
    metadataGroup: metadata,
    closeClients: (reason) => {
      closed.push(reason);
      return 2;
    },
  });
  return { maintenance, drained, queue, follower, alone, metadata, closed };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('NodeMaintenance', () => {
  it('does nothing until the metadata says this node is drained', () => {
    const { maintenance, queue, closed } = setup();
    maintenance.refresh();
    expect(maintenance.drained).toBe(false);
    expect(() => maintenance.checkAcceptsClients()).not.toThrow();
    expect(queue.transfers).toEqual([]);
    expect(closed).toEqual([]);
  });

  it('once drained: closes clients with the reason, refuses new ones with 320, hands each led group over', () => {
    vi.useFakeTimers();
    const { maintenance, drained, queue, follower, alone, metadata, closed } = setup();
    drained.add('a');
    maintenance.refresh();
    expect(maintenance.drained).toBe(true);
    expect(closed).toEqual(["node 'n1' was put into maintenance mode (drained): reconnect to another node"]);
    let refusal: unknown;
    try {
      maintenance.checkAcceptsClients();
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(ConnectionError);
    expect(refusal).toMatchObject({ code: ReplyCode.CONNECTION_FORCED });
    expect((refusal as Error).message).toMatch(/node 'n1' is in maintenance mode/);
    // The furthest answering voter; nobody for a group alone; a follower is left alone.
    expect(queue.transfers).toEqual(['c']);
    expect(metadata.transfers).toEqual(['b']);
    expect(alone.transfers).toEqual([]);
    expect(follower.transfers).toEqual([]);

    // It keeps handing over what it leads (a leadership won back while drained).
    vi.advanceTimersByTime(HAND_OVER_CHECK_MS);
    expect(queue.transfers).toEqual(['c', 'c']);
    queue.role = 'follower';
    vi.advanceTimersByTime(HAND_OVER_CHECK_MS);
    expect(queue.transfers).toEqual(['c', 'c']);
    // Applying more metadata changes nothing more.
    maintenance.refresh();
    expect(closed).toHaveLength(1);
  });

  it('hands over to no drained voter', () => {
    const { maintenance, drained, queue } = setup();
    drained.add('a');
    drained.add('c');
    maintenance.refresh();
    expect(queue.transfers).toEqual(['b']);
    maintenance.stop();
  });

  it('revive: accepts clients again and stops handing over', () => {
    vi.useFakeTimers();
    const { maintenance, drained, queue } = setup();
    drained.add('a');
    maintenance.refresh();
    drained.delete('a');
    maintenance.refresh();
    expect(maintenance.drained).toBe(false);
    expect(() => maintenance.checkAcceptsClients()).not.toThrow();
    vi.advanceTimersByTime(HAND_OVER_CHECK_MS * 4);
    expect(queue.transfers).toEqual(['c']);
  });
});
