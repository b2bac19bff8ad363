import type { HandOffId } from '@styx/dlx';
import { NotLeaderError } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logging/logger.ts';
import { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { RedriveCommand, RedriveRecord, RedriveSpec } from '../metadata/redrive-types.ts';
import type { QueueRecord } from '../metadata/types.ts';
import { browseMessages } from '../queue/message-browse.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import { QueueMachine } from '../queue/queue-machine.ts';
import type { QueueCommand, QueueReply, StoredMessage } from '../queue/types.ts';
import type { RedriveJobsPort } from './redrive-jobs.ts';
import { RedriveJobs } from './redrive-jobs.ts';
import { RedriveRunner, SOURCE_DELETED } from './redrive-runner.ts';

// The runner over real queue machines: the dead-letter queue (its returned FIFO, its `remove`) and
// the target queues (their hand-off dedupe), with the real metadata machine keeping the record.
// Only the transport is thin: commands are applied in place. A test clock counts the back-offs; a
// run that would retry for ever trips `MAX_SLEEPS` instead of hanging the test.

const MAX_SLEEPS = 2000;

class Queue {
  readonly machine = new QueueMachine();
  readonly bodies = new Map<number, StoredMessage>();
  index = 0;
  readonly record: QueueRecord;
  constructor(record: QueueRecord) {
    this.record = record;
  }

  apply(command: QueueCommand): QueueReply {
    this.index++;
    return this.machine.apply(command, { index: this.index, term: 1, ts: 1000 + this.index }).reply;
  }

  enqueue(message: StoredMessage, handOff?: HandOffId): QueueReply {
    const reply = this.apply({
      type: 'enqueue',
      size: message.body.byteLength,
      ttl: undefined,
      message,
      handOff,
    });
    if (reply.type === 'ok') this.bodies.set(this.index, message);
    return reply;
  }

  /** The bodies of its ready messages, in delivery order. */
  readyBodies(): string[] {
    return [...this.machine.readyEntries(undefined)].map((e) =>
      Buffer.from(this.bodies.get(e.id)?.body ?? []).toString(),
    );
  }
}

function queueRecord(name: string, groupId = `g-${name}`): QueueRecord {
  return {
    vhost: '/',
    name,
    durable: true,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: { entries: [] },
    groupId,
  };
}

function deadLetter(text: string, source: string): StoredMessage {
  const death = {
    table: {
      entries: [
        { key: 'reason', value: { longStr: 'rejected' } },
        { key: 'queue', value: { longStr: source } },
      ],
    },
  };
  return {
    exchange: '',
    routingKey: 'dlq',
    properties: { headers: { entries: [{ key: 'x-death', value: { array: { values: [death] } } }] } },
    body: Buffer.from(text),
    bcc: undefined,
  };
}

const SOURCE_SPEC: RedriveSpec = { filter: {}, target: { kind: 'source' }, rate: null, maxMessages: null };

class World {
  readonly metadata = new MetadataMachine();
  metaIndex = 0;
  dlq = new Queue(queueRecord('dlq'));
  readonly targets = new Map<string, Queue>([
    ['work', new Queue(queueRecord('work'))],
    ['other', new Queue(queueRecord('other'))],
  ]);
  /** Queues that answer no enqueue for now (no leader). */
  readonly down = new Set<string>();
  /** Enqueues that are applied but whose confirm is lost (the caller sees no leader), per queue. */
  readonly loseConfirms = new Map<string, number>();
  /** The DLQ's leader is unreachable: every browse fails for now. */
  browseDown = false;
  time = 0;
  sleeps = 0;
  onSleep: (() => void) | undefined;

  propose(command: RedriveCommand): ReturnType<MetadataMachine['apply']> {
    this.metaIndex++;
    return this.metadata.apply(command, { index: this.metaIndex, term: 1, ts: 1000 + this.metaIndex });
  }

  handleOf(queue: Queue): QueueHandle {
    const name = queue.record.name;
    return {
      name,
      enqueue: async (message: StoredMessage, _ttl: number | undefined, handOff?: HandOffId) => {
        if (this.down.has(name)) throw new NotLeaderError(queue.record.groupId, undefined);
        const reply = queue.enqueue(message, handOff);
        const lose = this.loseConfirms.get(name) ?? 0;
        if (lose > 0) {
          this.loseConfirms.set(name, lose - 1);
          throw new NotLeaderError(queue.record.groupId, undefined);
        }
        return reply;
      },
      remove: async (ids: readonly number[]) => {
        const reply = queue.apply({ type: 'remove', ids });
        return reply.type === 'removed' ? reply.ids : ids;
      },
    } as unknown as QueueHandle;
  }

  port(): RedriveJobsPort {
    return {
      selfId: 'n1',
      logger: silentLogger(),
      stallMs: 60_000,
      clock: {
        now: () => this.time,
        sleep: async (ms: number) => {
          if (++this.sleeps > MAX_SLEEPS) throw new Error('the runner keeps retrying');
          this.time += ms;
          this.onSleep?.();
        },
      },
      record: (id) => this.metadata.redrive(id),
      records: () => this.metadata.redriveRecords(),
      propose: async (command) => this.propose(command as RedriveCommand),
      queue: (vhost, name) => (vhost === '/' && name === 'dlq' ? this.dlq.record : undefined),
      browse: async (queue, request) => {
        const dlq = this.dlq;
        if (this.browseDown || queue.groupId !== dlq.record.groupId)
          throw new NotLeaderError(queue.groupId, undefined);
        const page = browseMessages(
          {
            readyEntries: (after, position) => dlq.machine.browseEntries(after, position),
            readyCount: dlq.machine.readyCount(),
            appliedIndex: dlq.machine.lastAppliedIndex,
            body: (id) => dlq.bodies.get(id),
          },
          request,
          this.time,
        );
        return { ...page, leader: 'n1' };
      },
      handle: () => this.handleOf(this.dlq),
      route: (_vhost, exchange, routingKey) => {
        if (exchange === '') {
          const queue = this.targets.get(routingKey);
          return queue === undefined ? [] : [this.handleOf(queue)];
        }
        if (exchange === 'fanout') return [...this.targets.values()].map((q) => this.handleOf(q));
        return undefined;
      },
      writeRefusal: () => undefined,
      ttl: () => undefined,
      leadsMetadata: () => true,
      nodeGone: () => false,
    };
  }

  start(id: string, spec: RedriveSpec = SOURCE_SPEC, groupId = this.dlq.record.groupId): void {
    const reply = this.propose({
      type: 'startRedrive',
      id,
      user: 'guest',
      vhost: '/',
      queue: 'dlq',
      groupId,
      owner: 'n1',
      dryRun: false,
      spec,
    });
    expect(reply.type).toBe('ok');
  }

  async run(id: string): Promise<RedriveRecord> {
    await new RedriveRunner(this.port(), id).run();
    return this.metadata.redrive(id) as RedriveRecord;
  }

  /** Dead letters `texts` (from `source`), then has a consumer take them all and return them in `order`. */
  returned(texts: readonly string[], order: readonly number[], sources: readonly string[] = []): void {
    const ids = texts.map((text, i) => {
      this.dlq.enqueue(deadLetter(text, sources[i] ?? 'work'));
      return this.dlq.index;
    });
    for (let i = 0; i < ids.length; i++) this.dlq.apply({ type: 'get', owner: 'c1', noAck: false });
    this.dlq.apply({ type: 'return', owner: 'c1', ids: order.map((i) => ids[i] as number) });
  }
}

describe('RedriveRunner over real queue machines', () => {
  it('moves every returned message once when its cursor message is removed mid-run (batches of 2)', async () => {
    const world = new World();
    world.returned(['a', 'b', 'c', 'd', 'e'], [3, 0, 4, 1, 2]);
    for (const text of ['f', 'g', 'h']) world.dlq.enqueue(deadLetter(text, 'work'));
    world.start('r1', { ...SOURCE_SPEC, rate: 2 });
    const record = await world.run('r1');
    expect(record).toMatchObject({ state: 'done', progress: { total: 8, moved: 8, failed: 0 } });
    expect(world.targets.get('work')?.readyBodies().sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    expect(world.dlq.machine.readyCount()).toBe(0);
  });

  it('ends when returned messages out of id order fail (no route), each dealt with once', async () => {
    const world = new World();
    // Returned in the order e, b, d, a, c; a, b and d died in a queue that is gone since.
    world.returned(['a', 'b', 'c', 'd', 'e'], [4, 1, 3, 0, 2], ['gone', 'gone', 'work', 'gone', 'work']);
    world.start('r1', { ...SOURCE_SPEC, rate: 2 });
    const record = await world.run('r1');
    expect(record).toMatchObject({ state: 'done', progress: { total: 5, moved: 2, failed: 3 } });
    expect(world.targets.get('work')?.readyBodies()).toEqual(['e', 'c']);
    expect(world.dlq.readyBodies()).toEqual(['b', 'd', 'a']);
  });

  it('a target unavailable for a while, and a confirm lost: each message lands once in each target', async () => {
    const world = new World();
    for (const text of ['a', 'b', 'c', 'd']) world.dlq.enqueue(deadLetter(text, 'work'));
    world.down.add('other');
    world.loseConfirms.set('work', 2);
    world.onSleep = () => {
      if (world.sleeps === 8) world.down.delete('other');
    };
    world.start('r1', { ...SOURCE_SPEC, target: { kind: 'exchange', exchange: 'fanout', routingKey: 'k' } });
    const record = await world.run('r1');
    expect(record).toMatchObject({ state: 'done', progress: { moved: 4, failed: 0 } });
    expect(world.targets.get('work')?.readyBodies()).toEqual(['a', 'b', 'c', 'd']);
    expect(world.targets.get('other')?.readyBodies()).toEqual(['a', 'b', 'c', 'd']);
    expect(world.dlq.machine.readyCount()).toBe(0);
  });

  it('a target that never comes back ends the run failed, with the reason per target', async () => {
    const world = new World();
    for (const text of ['a', 'b', 'c']) world.dlq.enqueue(deadLetter(text, 'work'));
    world.down.add('work');
    world.start('r1');
    const record = await world.run('r1');
    expect(record.state).toBe('failed');
    expect(record.error).toMatch(/no progress for 60 s: queue 'work'/);
    expect(record.progress).toMatchObject({ moved: 0, failed: 3 });
    expect(record.progress.failures).toEqual([
      { reason: expect.stringMatching(/^queue 'work' unavailable for 60 s/), count: 3 },
    ]);
    expect(world.dlq.machine.readyCount()).toBe(3);
  });

  it('a cancel asked while the queue cannot be read ends the run cancelled within one back-off', async () => {
    const world = new World();
    for (const text of ['a', 'b']) world.dlq.enqueue(deadLetter(text, 'work'));
    world.start('r1');
    world.browseDown = true;
    world.onSleep = () => {
      if (world.sleeps === 5) world.propose({ type: 'cancelRedrive', id: 'r1' });
    };
    const record = await world.run('r1');
    expect(record.state).toBe('cancelled');
    expect(world.sleeps).toBe(5);
  });

  it('a cancel asked while a target is down ends the run cancelled, keeping what was confirmed', async () => {
    const world = new World();
    for (const text of ['a', 'b']) world.dlq.enqueue(deadLetter(text, 'work'));
    world.down.add('work');
    world.start('r1');
    world.onSleep = () => {
      if (world.sleeps === 3) world.propose({ type: 'cancelRedrive', id: 'r1' });
    };
    const record = await world.run('r1');
    expect(record).toMatchObject({ state: 'cancelled', progress: { moved: 0 } });
    expect(world.dlq.machine.readyCount()).toBe(2);
  });

  it('a DLQ deleted mid-run ends the run failed; a new redrive of a queue of that name runs', async () => {
    const world = new World();
    for (const text of ['a', 'b']) world.dlq.enqueue(deadLetter(text, 'work'));
    world.start('r1');
    world.browseDown = true;
    world.onSleep = () => {
      if (world.sleeps === 3) world.dlq = new Queue(queueRecord('dlq', 'g-dlq-2'));
    };
    const record = await world.run('r1');
    expect(record).toMatchObject({ state: 'failed', error: SOURCE_DELETED });
    world.browseDown = false;
    world.onSleep = undefined;
    world.dlq.enqueue(deadLetter('c', 'work'));
    world.start('r2');
    expect(await world.run('r2')).toMatchObject({ state: 'done', progress: { moved: 1 } });
    expect(world.targets.get('work')?.readyBodies()).toEqual(['c']);
  });

  it('1,000+ dry runs leave the audit intact', async () => {
    const world = new World();
    world.dlq.enqueue(deadLetter('a', 'work'));
    const jobs = new RedriveJobs(world.port());
    world.start('real');
    await world.run('real');
    for (let i = 0; i < 1001; i++) {
      const dry = await jobs.create({
        user: 'mallory',
        queue: world.dlq.record,
        spec: SOURCE_SPEC,
        dryRun: true,
      });
      if (i === 0) expect(dry).toMatchObject({ state: 'done', dryRun: true });
    }
    expect(world.metadata.redrive('real')).toMatchObject({ state: 'done', progress: { moved: 1 } });
    expect(world.metadata.redriveRecords()).toHaveLength(1);
  });
});
