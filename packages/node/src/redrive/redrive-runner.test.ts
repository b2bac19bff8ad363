import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logging/logger.ts';
import { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { RedriveCommand, RedriveProgress } from '../metadata/redrive-types.ts';
import { EMPTY_REDRIVE_PROGRESS } from '../metadata/redrive-types.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { BrowsableEntry } from '../queue/message-browse.ts';
import { browseMessages } from '../queue/message-browse.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { QueueReply, StoredMessage } from '../queue/types.ts';
import type { RedriveRunPort } from './redrive-runner.ts';
import { RedriveRunner } from './redrive-runner.ts';

// The runner against the real metadata machine (its records, the owner rule) and the real browse
// over a small in-memory dead-letter queue: what a resume does with a batch whose removal may not
// have committed, and what a runner that lost its redrive to another node leaves behind.

const DLQ: QueueRecord = {
  vhost: '/',
  name: 'dlq',
  durable: true,
  exclusiveOwner: undefined,
  autoDelete: false,
  arguments: { entries: [] },
  groupId: 'g-dlq',
};

function deadLetter(i: number): StoredMessage {
  return {
    exchange: '',
    routingKey: 'dlq',
    properties: {
      headers: {
        entries: [
          {
            key: 'x-death',
            value: {
              array: {
                values: [
                  {
                    table: {
                      entries: [
                        { key: 'reason', value: { longStr: 'rejected' } },
                        { key: 'queue', value: { longStr: 'work' } },
                      ],
                    },
                  },
                ],
              },
            },
          },
        ],
      },
    },
    body: Buffer.from(`m${i}`),
    bcc: undefined,
  };
}

/** A dead-letter queue, a target queue 'work', and the metadata group, all on one "node". */
class World {
  readonly metadata = new MetadataMachine();
  index = 0;
  readonly dlq = new Map<number, StoredMessage>();
  readonly published: string[] = [];
  readonly removals: number[][] = [];
  /** Refuse progress from this node, as if another node had claimed the redrive. */
  claimedBy: string | undefined;

  constructor(ids: readonly number[]) {
    for (const id of ids) this.dlq.set(id, deadLetter(id));
  }

  apply(command: RedriveCommand): ReturnType<MetadataMachine['apply']> {
    this.index++;
    return this.metadata.apply(command, { index: this.index, term: 1, ts: 1000 + this.index });
  }

  readonly work = {
    name: 'work',
    enqueue: async (message: StoredMessage): Promise<QueueReply> => {
      this.published.push(Buffer.from(message.body).toString());
      return { type: 'ok' };
    },
  } as unknown as QueueHandle;

  readonly dlqHandle = {
    name: 'dlq',
    remove: async (ids: readonly number[]): Promise<readonly number[]> => {
      this.removals.push([...ids]);
      return ids.filter((id) => this.dlq.delete(id));
    },
  } as unknown as QueueHandle;

  port(): RedriveRunPort {
    return {
      selfId: 'n1',
      logger: silentLogger(),
      clock: { now: () => 0, sleep: async () => undefined },
      record: (id) => this.metadata.redrive(id),
      propose: async (command) => {
        if (this.claimedBy !== undefined && command.type === 'updateRedrive') {
          this.apply({ type: 'claimRedrive', id: command.id, owner: this.claimedBy, previousOwner: 'n1' });
          this.claimedBy = undefined;
        }
        return this.apply(command);
      },
      queue: (vhost, name) => (vhost === '/' && name === 'dlq' ? DLQ : undefined),
      browse: async (_queue, request) => {
        const entries: BrowsableEntry[] = [...this.dlq.keys()].map((id) => ({
          id,
          size: 2,
          enqueuedAt: 0,
          deliveryCount: 0,
          ttl: undefined,
          expiresAt: Number.POSITIVE_INFINITY,
        }));
        const page = browseMessages(
          {
            readyEntries: (after, position) =>
              entries
                .filter((e) => {
                  const from = position?.id ?? after;
                  return from === undefined || e.id > from;
                })
                .map((entry) => ({ entry, position: { list: 'ready' as const, id: entry.id } })),
            readyCount: entries.length,
            appliedIndex: 100,
            body: (id) => this.dlq.get(id),
          },
          request,
          0,
        );
        return { ...page, leader: 'n1' };
      },
      handle: () => this.dlqHandle,
      route: (_vhost, exchange, routingKey) => (exchange === '' && routingKey === 'work' ? [this.work] : []),
      writeRefusal: () => undefined,
      ttl: () => undefined,
    };
  }

  start(progress: RedriveProgress): void {
    this.apply({
      type: 'startRedrive',
      id: 'r1',
      user: 'guest',
      vhost: '/',
      queue: 'dlq',
      groupId: 'g-dlq',
      owner: 'n1',
      dryRun: false,
      spec: { filter: {}, target: { kind: 'source' }, rate: null, maxMessages: null },
    });
    if (progress !== EMPTY_REDRIVE_PROGRESS)
      this.apply({ type: 'updateRedrive', id: 'r1', owner: 'n1', state: 'running', progress });
  }
}

describe('RedriveRunner', () => {
  it('on resume removes the batch left in flight first, then goes on after the cursor: counts exact', async () => {
    // The node died after committing a batch (ids 1, 2 moved) and before their removal committed.
    const world = new World([1, 2, 3, 4]);
    world.start({ ...EMPTY_REDRIVE_PROGRESS, total: 4, bound: 100, cursor: 2, moved: 2, inflight: [1, 2] });
    await new RedriveRunner(world.port(), 'r1').run();
    expect(world.removals[0]).toEqual([1, 2]);
    // 1 and 2 are not published again: they were counted and their copies confirmed before.
    expect(world.published).toEqual(['m3', 'm4']);
    expect(world.dlq.size).toBe(0);
    expect(world.metadata.redrive('r1')).toMatchObject({
      state: 'done',
      progress: { moved: 4, failed: 0, inflight: [], total: 4 },
    });
  });

  it('a runner that lost its redrive to another node stops: its batch stays in the DLQ, uncounted', async () => {
    const world = new World([1, 2, 3]);
    world.start(EMPTY_REDRIVE_PROGRESS);
    // The count commits; the first batch's progress finds the redrive claimed by n2.
    let updates = 0;
    const port = world.port();
    const propose = port.propose;
    const runner = new RedriveRunner(
      {
        ...port,
        propose: (command) => {
          if (command.type === 'updateRedrive' && ++updates === 2) world.claimedBy = 'n2';
          return propose(command);
        },
      },
      'r1',
    );
    await runner.run();
    // Published (at-least-once: n2 publishes them again), but neither counted nor removed.
    expect(world.published).toEqual(['m1', 'm2', 'm3']);
    expect(world.removals).toEqual([]);
    expect(world.dlq.size).toBe(3);
    expect(world.metadata.redrive('r1')).toMatchObject({
      state: 'running',
      owner: 'n2',
      progress: { moved: 0, total: 3 },
    });
  });
});
