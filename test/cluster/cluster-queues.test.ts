import type { ConfirmChannel, RecoveringConnection } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// The cluster, part 2, across real processes on loopback: every durable queue is a Raft group on
// three nodes, any node serves any queue, and a leader's death (SIGKILL) or pause (SIGSTOP) loses
// no confirmed message — neither a published one nor a dead-lettered one.

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

/** A publisher with confirms, numbering its messages 0, 1, 2...; at most `window` unconfirmed. */
class Publisher {
  readonly confirmed = new Set<number>();
  readonly failed = new Set<number>();
  next = 0;
  #stopped = false;
  #running: Promise<void> | undefined;
  readonly #channel: Awaited<ReturnType<Connection['createConfirmChannel']>>;
  readonly #queue: string;
  readonly #options: { readonly window?: number; readonly expiration?: string };
  constructor(
    channel: Awaited<ReturnType<Connection['createConfirmChannel']>>,
    queue: string,
    options: { readonly window?: number; readonly expiration?: string } = {},
  ) {
    this.#channel = channel;
    this.#queue = queue;
    this.#options = options;
  }

  start(count = Number.POSITIVE_INFINITY): this {
    this.#running = this.#run(count);
    return this;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  done(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  async #run(count: number): Promise<void> {
    const inflight = new Set<Promise<void>>();
    while (!this.#stopped && this.next < count) {
      const n = this.next++;
      const confirmed = new Promise<void>((resolve) => {
        this.#channel.sendToQueue(
          this.#queue,
          Buffer.from(String(n)),
          { persistent: true, ...(this.#options.expiration ? { expiration: this.#options.expiration } : {}) },
          (err) => {
            (err ? this.failed : this.confirmed).add(n);
            resolve();
          },
        );
      });
      inflight.add(confirmed);
      void confirmed.then(() => inflight.delete(confirmed));
      if (inflight.size >= (this.#options.window ?? 50)) await Promise.race(inflight);
      // Paced a little: a failover is measured under load, not against a saturated event loop.
      if (n % 25 === 24) await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.all(inflight);
  }
}

/** Collects the numbers consumed from a queue (acking each), with how often each came. */
async function collect(connection: Connection, queue: string, prefetch = 100) {
  const channel = await connection.createChannel();
  await channel.prefetch(prefetch);
  const seen = new Map<number, number>();
  const order: number[] = [];
  const deaths: unknown[] = [];
  let last = Date.now();
  /** Deliveries of an id seen before that are not flagged redelivered: a duplicate copy in the queue. */
  const state = { freshDuplicates: 0 };
  await channel.consume(queue, (m) => {
    if (m === null) return;
    const n = Number(m.content.toString());
    if (seen.has(n) && !m.fields.redelivered) state.freshDuplicates++;
    seen.set(n, (seen.get(n) ?? 0) + 1);
    order.push(n);
    deaths.push(m.properties.headers?.['x-death']);
    last = Date.now();
    channel.ack(m);
  });
  return {
    channel,
    seen,
    order,
    deaths,
    idleMs: () => Date.now() - last,
    get freshDuplicates() {
      return state.freshDuplicates;
    },
  };
}

const missing = (confirmed: Iterable<number>, seen: Map<number, number>): number[] =>
  [...confirmed].filter((n) => !seen.has(n));

describe('a three-node cluster: queues replicated on every node', () => {
  let cluster: TestCluster;
  const open: Connection[] = [];
  const connect = async (...names: string[]): Promise<Connection> => {
    const connection = await amqp.connect(names.map((n) => cluster.url(n)));
    // These connections die with their node in the fault tests: that is expected, not an error.
    connection.on('error', () => undefined);
    open.push(connection);
    return connection;
  };

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 180_000);

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  it('declared on node 1, published with confirms on node 2, consumed on node 3, in order', async () => {
    const c1 = await connect('n1');
    await (await c1.createChannel()).assertQueue('orders', { durable: true });
    // No wait: node 2 catches up with the metadata leader before it would answer 404.
    const json = await cluster.queue('n2', 'orders');
    expect(json.members?.sort()).toEqual(['n1', 'n2', 'n3']);
    // The declare does not wait for the group's first election (its members start together):
    // the declaring node, campaigning first, leads (RabbitMQ's client-local) once it is over.
    await eventually(
      'a leader of the new queue',
      async () => (await cluster.queue('n2', 'orders')).leader != null,
    );
    expect((await cluster.queue('n2', 'orders')).leader).toBe('n1');

    const publisher = new Publisher(await (await connect('n2')).createConfirmChannel(), 'orders').start(3000);
    await publisher.done();
    expect(publisher.failed.size).toBe(0);
    const consumer = await collect(await connect('n3'), 'orders');
    await eventually('every message consumed on node 3', async () => consumer.seen.size === 3000);
    expect(consumer.order).toEqual([...Array(3000).keys()]);
    // Any node answers for the queue's counts (the leader's).
    const check = await (await (await connect('n2')).createChannel()).checkQueue('orders');
    expect(check.messageCount).toBe(0);
    expect(check.consumerCount).toBe(1);
    // The consistency check, asked on node 3: every replica answered, whole and in agreement.
    type Checks = { ok: boolean; queues: { name: string; replicas: { node: string; online: boolean }[] }[] };
    const checks = await cluster.api<Checks>('n3', '/api/checks/queues');
    expect(checks).toMatchObject({ ok: true, queues: [{ name: 'orders', ok: true, problems: [] }] });
    expect(checks.queues[0]?.replicas.map((r) => `${r.node} ${r.online}`).sort()).toEqual([
      'n1 true',
      'n2 true',
      'n3 true',
    ]);
  }, 60_000);

  it("SIGKILL of a queue's leader during a confirmed publish stream and a consume: nothing confirmed is lost, consumers go on", async () => {
    const c1 = await connect('n1');
    await (await c1.createChannel()).assertQueue('failover', { durable: true });
    expect(await cluster.leaderOf('failover')).toBe('n1');
    const publisher = new Publisher(await (await connect('n2')).createConfirmChannel(), 'failover').start();
    const consumer = await collect(await connect('n3'), 'failover');
    await eventually('traffic', async () => consumer.seen.size > 2000);

    const killedAt = Date.now();
    await cluster.kill('n1');
    const confirmedAtKill = publisher.confirmed.size;
    const receivedAtKill = consumer.seen.size;
    await eventually(
      'confirms again after the leader died',
      async () => publisher.confirmed.size > confirmedAtKill + 100,
    );
    const confirmsBackMs = Date.now() - killedAt;
    await eventually(
      'deliveries again after the leader died',
      async () => consumer.seen.size > receivedAtKill + 100,
    );
    const deliveriesBackMs = Date.now() - killedAt;
    console.log(
      `queue failover (leader SIGKILL): confirms back within ${confirmsBackMs} ms, deliveries within ${deliveriesBackMs} ms`,
    );
    expect(await cluster.leaderOf('failover', ['n1'])).not.toBe('n1');

    await publisher.stop();
    expect(publisher.failed.size).toBe(0);
    await eventually(
      'every confirmed message consumed',
      async () => missing(publisher.confirmed, consumer.seen).length === 0,
      60_000,
    );
    // The dead leader comes back with its data and catches its replica up.
    await cluster.restart('n1');
    await cluster.waitFormed();
    interface QuorumStatus {
      readonly commit_index: number;
      readonly members: readonly { readonly node: string; readonly match_index: number }[];
    }
    await eventually('n1 caught up: its replica holds everything the leader committed', async () => {
      const status = await cluster.api<QuorumStatus>('n2', '/api/queues/%2F/failover/quorum_status');
      const n1 = status.members.find((m) => m.node === 'n1');
      return n1 !== undefined && n1.match_index >= status.commit_index;
    });
    // And it serves the queue again: its replica's counts match the leader's.
    const check = await (await connect('n1')).createChannel();
    expect((await check.checkQueue('failover')).messageCount).toBe(0);
  }, 180_000);

  it('cross-node at-least-once dead-lettering survives SIGKILL of the source leader, then of the target leader: every message in the DLQ exactly once', async () => {
    const c1 = await connect('n1', 'n2', 'n3');
    const c2 = await connect('n2', 'n1', 'n3');
    await (await c2.createChannel()).assertQueue('dlq', { durable: true });
    await (await c1.createChannel()).assertQueue('expiring', {
      durable: true,
      arguments: {
        'x-message-ttl': 200,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'dlq',
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      },
    });
    const sourceLeader = await cluster.leaderOf('expiring');
    const targetLeader = await cluster.leaderOf('dlq');
    expect(sourceLeader).not.toBe(targetLeader);

    const publisher = new Publisher(await (await connect('n3')).createConfirmChannel(), 'expiring').start(
      9000,
    );
    await eventually('a third published', async () => publisher.confirmed.size > 3000);
    await cluster.kill(sourceLeader);
    await cluster.restart(sourceLeader);
    await eventually('two thirds published', async () => publisher.confirmed.size > 6000, 60_000);
    await cluster.kill(targetLeader);
    await cluster.restart(targetLeader);
    await publisher.done();
    expect(publisher.failed.size).toBe(0);

    // Exactly once in the DLQ: its leader counts every copy once the source has handed all off...
    const check = await (await connect('n3')).createChannel();
    await eventually(
      'the source drained into the DLQ',
      async () => (await check.checkQueue('expiring')).messageCount === 0,
      90_000,
    );
    await eventually(
      'the DLQ settled',
      async () => (await check.checkQueue('dlq')).messageCount >= 9000,
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await check.checkQueue('dlq')).messageCount).toBe(9000);
    // ...and each id is there. (A consumer may see a message twice only as a redelivery.)
    const dlq = await collect(await connect('n3'), 'dlq', 500);
    await eventually(
      'every dead-lettered message consumed from the DLQ',
      async () => missing(publisher.confirmed, dlq.seen).length === 0,
      90_000,
    );
    expect(dlq.freshDuplicates).toBe(0);
    const death = dlq.deaths[0] as { queue: string; reason: string }[];
    expect(death[0]).toMatchObject({ queue: 'expiring', reason: 'expired' });
  }, 240_000);

  it('TTL across a leader change: a message due at t dies at t on the new leader, not before', async () => {
    const c = await connect('n2', 'n3', 'n1');
    const ch = await c.createChannel();
    await ch.assertQueue('ttl-dlq', { durable: true });
    await ch.assertQueue('ttl-src', {
      durable: true,
      arguments: {
        'x-message-ttl': 3000,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'ttl-dlq',
      },
    });
    const leader = await cluster.leaderOf('ttl-src');
    const channel = await (await connect('n3', 'n1', 'n2')).createConfirmChannel();
    // Every message is stamped by the leader after this instant, so none may die before +3000 ms.
    const startedAt = Date.now();
    const publisher = new Publisher(channel, 'ttl-src').start(200);
    await publisher.done();
    const publishedAt = Date.now();
    const arrivals: number[] = [];
    const dlq = await collect(await connect('n3', 'n1', 'n2'), 'ttl-dlq');
    const sizeBefore = (): number => dlq.seen.size;
    await cluster.kill(leader);
    await eventually(
      'every message dead-lettered by the new leader',
      async () => {
        if (sizeBefore() > arrivals.length) arrivals.push(Date.now());
        return dlq.seen.size === 200;
      },
      30_000,
      20,
    );
    const first = arrivals[0] ?? Date.now();
    const last = arrivals.at(-1) ?? Date.now();
    console.log(
      `TTL 3000 ms across a leader SIGKILL: dead-letters from ${first - startedAt} ms after the first ` +
        `publish to ${last - publishedAt} ms after the last`,
    );
    // Never early (the entry timestamps travel with the log); late only by the failover.
    expect(first - startedAt).toBeGreaterThanOrEqual(3000);
    await cluster.restart(leader);
    await cluster.waitFormed();
  }, 120_000);

  it('a paused (SIGSTOP) leader is replaced; resumed, it steps down and nothing confirmed is lost', async () => {
    const c = await connect('n1', 'n2', 'n3');
    await (await c.createChannel()).assertQueue('paused', { durable: true });
    const leader = await cluster.leaderOf('paused');
    const others = cluster.nodes.map((n) => n.name).filter((n) => n !== leader);
    const publisher = new Publisher(
      await (await connect(others[0] as string)).createConfirmChannel(),
      'paused',
    ).start();
    await eventually('traffic', async () => publisher.confirmed.size > 1000);
    cluster.pause(leader);
    const confirmedAtPause = publisher.confirmed.size;
    await eventually(
      'confirms again while the old leader is paused',
      async () => publisher.confirmed.size > confirmedAtPause + 200,
      30_000,
    );
    const newLeader = await cluster.leaderOf('paused', [leader]);
    expect(newLeader).not.toBe(leader);
    cluster.resume(leader);
    await eventually(
      'one leader, not the resumed node',
      async () => {
        const views = await Promise.all(
          cluster.nodes.map((n) => cluster.queue(n.name, 'paused').catch(() => undefined)),
        );
        return views.every((v) => v?.leader === newLeader);
      },
      30_000,
    );
    await publisher.stop();
    const consumer = await collect(await connect(leader), 'paused', 500);
    await eventually(
      'every confirmed message consumed',
      async () => missing(publisher.confirmed, consumer.seen).length === 0,
      60_000,
    );
  }, 120_000);

  it('an idle queue whose leader is paused (SIGSTOP, its connections open) gets a new leader: a node-level liveness signal wakes its quiesced followers', async () => {
    const c = await connect('n1');
    const channel = await c.createConfirmChannel();
    await channel.assertQueue('idle-paused', { durable: true });
    channel.sendToQueue('idle-paused', Buffer.from('1'), { persistent: true });
    await channel.waitForConfirms();
    const leader = await cluster.leaderOf('idle-paused');
    // Idle, the group quiesces within a few ticks (0.1 s each) on every node: no heartbeat flows,
    // so no election timeout runs out; only the node-level ping can tell that its leader is gone.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    cluster.pause(leader);
    try {
      const newLeader = await cluster.leaderOf('idle-paused', [leader]);
      expect(newLeader).not.toBe(leader);
      const survivor = await connect(newLeader);
      const confirms = await survivor.createConfirmChannel();
      confirms.sendToQueue('idle-paused', Buffer.from('2'), { persistent: true });
      await confirms.waitForConfirms();
    } finally {
      cluster.resume(leader);
    }
    const consumer = await collect(await connect(leader), 'idle-paused');
    await eventually(
      'both messages consumed',
      async () => consumer.seen.has(1) && consumer.seen.has(2),
      30_000,
    );
  }, 90_000);

  it('the SDK with three URLs keeps publishing through the death of its node', async () => {
    const c = await connect('n1');
    await (await c.createChannel()).assertQueue('sdk-failover', { durable: true });
    const confirmed = new Set<number>();
    let channel: ConfirmChannel | undefined;
    const client: RecoveringConnection = await amqp.connect(
      [cluster.url('n3'), cluster.url('n1'), cluster.url('n2')],
      {
        recover: {
          minDelayMs: 50,
          maxDelayMs: 500,
          maxAttempts: 50,
          setup: async (connection) => {
            channel = await connection.createConfirmChannel();
          },
        },
      },
    );
    open.push(client as unknown as Connection);
    let recovered = 0;
    client.on('recovered', () => {
      recovered++;
    });
    let n = 0;
    let killed = false;
    const deadline = Date.now() + 90_000;
    while (confirmed.size < 3000 && Date.now() < deadline) {
      const id = n++;
      await new Promise<void>((resolve) => {
        try {
          (channel as ConfirmChannel).sendToQueue(
            'sdk-failover',
            Buffer.from(String(id)),
            { persistent: true },
            (err) => {
              if (!err) confirmed.add(id); // a failed confirm: the application publishes on, under a new id
              resolve();
            },
          );
        } catch {
          setTimeout(resolve, 50); // the channel closed mid-failover
        }
      });
      if (!killed && confirmed.size === 1000) {
        killed = true;
        await cluster.kill('n3');
      }
    }
    expect(recovered).toBeGreaterThanOrEqual(1);
    expect(client.urlIndex).not.toBe(0);
    expect(confirmed.size).toBeGreaterThanOrEqual(3000);
    const consumer = await collect(await connect('n1', 'n2'), 'sdk-failover', 500);
    await eventually(
      'every confirmed message in the queue',
      async () => missing(confirmed, consumer.seen).length === 0,
      60_000,
    );
    await cluster.restart('n3');
  }, 180_000);
});
