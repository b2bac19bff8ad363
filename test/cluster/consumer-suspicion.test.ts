import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// Suspicion before verdict, across real processes: a queue keeps the consumers of a node it
// cannot reach (no new deliveries to them) and returns their unacked messages only once that node
// is known gone: it stayed unreachable past the queue's x-consumer-disconnected-timeout, or it
// restarted (a new incarnation).

type Connection = Awaited<ReturnType<typeof amqp.connect>>;
type Channel = Awaited<ReturnType<Connection['createChannel']>>;

interface Delivery {
  readonly n: number;
  readonly redelivered: boolean;
  readonly count: unknown;
  readonly message: NonNullable<Parameters<Parameters<Channel['consume']>[1]>[0]>;
}

/** A consumer that keeps what it gets, unacked, until the test acks it. */
async function hold(connection: Connection, queue: string): Promise<{ channel: Channel; got: Delivery[] }> {
  const channel = await connection.createChannel();
  await channel.prefetch(100);
  const got: Delivery[] = [];
  await channel.consume(queue, (m) => {
    if (m === null) return;
    got.push({
      n: Number(m.content.toString()),
      redelivered: m.fields.redelivered,
      count: m.properties.headers?.['x-delivery-count'],
      message: m,
    });
  });
  return { channel, got };
}

const TIMEOUT_MS = 5_000;
const SHORT_PAUSE_TIMEOUT_MS = 10_000;
const SUSPECTED = 'a member is suspected';

describe('a consumer’s node unreachable: suspected first, given up only when known gone', () => {
  let cluster: TestCluster;
  const open: Connection[] = [];
  const connect = async (name: string): Promise<Connection> => {
    const connection = await amqp.connect(cluster.url(name));
    connection.on('error', () => undefined); // they die with their node in these tests
    open.push(connection);
    return connection;
  };

  /**
   * A replicated queue (quorum: deliveries show x-delivery-count) with `timeoutMs` as its
   * consumer-disconnected timeout; `n` messages published with confirms; their leader and a node
   * that is not it (where the held consumer will be).
   */
  async function queueWith(name: string, n: number, timeoutMs?: number) {
    const setup = await connect('n1');
    const channel = await setup.createConfirmChannel();
    await channel.assertQueue(name, {
      durable: true,
      arguments: {
        'x-queue-type': 'quorum',
        ...(timeoutMs === undefined ? {} : { 'x-consumer-disconnected-timeout': timeoutMs }),
      },
    });
    for (let i = 0; i < n; i++) channel.sendToQueue(name, Buffer.from(String(i)), { persistent: true });
    await channel.waitForConfirms();
    const leader = await cluster.leaderOf(name);
    const other = cluster.nodes.map((node) => node.name).find((node) => node !== leader) as string;
    return { leader, other };
  }

  /** Log lines of `node` printed after line `from` that contain `text`. */
  const linesOf = (node: string, text: string, from = 0): string[] =>
    cluster
      .logsOf(node)
      .slice(from)
      .filter((line) => line.includes(text));

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 120_000);

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  it('paused shorter than the timeout: it keeps its messages, its acks count, nothing is redelivered', async () => {
    // A longer timeout here: the pause must outlast this node's stall threshold (4 s) and stay
    // well short of the suspicion plus the timeout.
    const { leader, other } = await queueWith('susp.short', 5, SHORT_PAUSE_TIMEOUT_MS);
    const held = await hold(await connect(other), 'susp.short');
    await eventually('the held consumer to get all 5', async () => held.got.length === 5);
    const watcher = await hold(await connect(leader), 'susp.short');
    const leaderLog = cluster.logsOf(leader).length;
    const otherLog = cluster.logsOf(other).length;

    const pausedAt = Date.now();
    cluster.pause(other);
    // Paused long enough to be suspected (two missed 1 s pings), well short of the timeout.
    await eventually(
      'the leader to suspect the paused node',
      async () => linesOf(leader, SUSPECTED, leaderLog).length > 0,
      8_000,
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, pausedAt + 6_000 - Date.now())));
    cluster.resume(other);

    // Its own timers ran late: it noticed that it had stalled, and gave its peers a fresh chance.
    await eventually(
      'the resumed node to notice its stall',
      async () => linesOf(other, 'this process did not run for a while', otherLog).length > 0,
    );
    for (const d of held.got) held.channel.ack(d.message);
    await eventually(
      'the acks to empty the queue',
      async () => (await cluster.queue(leader, 'susp.short')).messages === 0,
      20_000,
    );
    // Wait past the timeout: nothing comes back.
    await new Promise((resolve) => setTimeout(resolve, SHORT_PAUSE_TIMEOUT_MS));
    expect(watcher.got).toEqual([]);
    expect(held.got.map((d) => [d.n, d.redelivered])).toEqual([0, 1, 2, 3, 4].map((n) => [n, false]));
    expect((await cluster.queue(leader, 'susp.short')).messages).toBe(0);
  }, 90_000);

  it('paused longer than the timeout: its messages return once, delivery count raised once, flagged redelivered', async () => {
    const { leader, other } = await queueWith('susp.long', 5, TIMEOUT_MS);
    const held = await hold(await connect(other), 'susp.long');
    await eventually('the held consumer to get all 5', async () => held.got.length === 5);
    expect(held.got.map((d) => d.count)).toEqual([0, 0, 0, 0, 0]);
    const watcher = await hold(await connect(leader), 'susp.long');
    const leaderLog = cluster.logsOf(leader).length;

    cluster.pause(other);
    try {
      await eventually(
        'the messages to come back to the other consumer',
        async () => watcher.got.length === 5,
        30_000,
      );
      // Not before the timeout ran out after the suspicion.
      const suspectedAt = linesOf(leader, SUSPECTED, leaderLog);
      expect(suspectedAt.length).toBeGreaterThan(0);
      expect(
        linesOf(leader, 'consumers of a node known gone are given up', leaderLog).length,
      ).toBeGreaterThan(0);
    } finally {
      cluster.resume(other);
    }
    for (const d of watcher.got) watcher.channel.ack(d.message);
    expect(watcher.got.map((d) => [d.n, d.redelivered, d.count])).toEqual(
      [0, 1, 2, 3, 4].map((n) => [n, true, 1]),
    );
    await eventually(
      'the queue to be empty',
      async () => (await cluster.queue(leader, 'susp.long')).messages === 0,
      20_000,
    );
    // Returned once: nothing comes a third time.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(watcher.got).toHaveLength(5);
  }, 90_000);

  it('SIGKILLed and restarted within the timeout: its messages return at once (a new incarnation)', async () => {
    // The default timeout (60 s): returned well before it, because the node restarted.
    const { leader, other } = await queueWith('susp.restart', 5);
    const held = await hold(await connect(other), 'susp.restart');
    await eventually('the held consumer to get all 5', async () => held.got.length === 5);
    const watcher = await hold(await connect(leader), 'susp.restart');
    const leaderLog = cluster.logsOf(leader).length;

    const killedAt = Date.now();
    await cluster.kill(other);
    await cluster.restart(other);
    await eventually(
      'the messages to come back to the other consumer',
      async () => watcher.got.length === 5,
      40_000,
    );
    expect(Date.now() - killedAt).toBeLessThan(60_000);
    expect(linesOf(leader, 'a member restarted', leaderLog).length).toBeGreaterThan(0);
    expect(watcher.got.map((d) => [d.n, d.redelivered, d.count])).toEqual(
      [0, 1, 2, 3, 4].map((n) => [n, true, 1]),
    );
  }, 90_000);
});
