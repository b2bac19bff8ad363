import type { ConfirmChannel } from '@styx/client';
import { describe, expect, it } from 'vitest';
import type { TestCluster } from '../support/cluster-processes.ts';
import { clusterForSuite } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// Read-your-writes across nodes, on real processes over loopback: what a client declared through
// one node is there on every other node the moment the declare-ok arrives — no waiting for the
// other node to hear the new commit index. A node that does not know a name asks the metadata
// leader for its commit index (read-index) and applies up to it before answering 404.

/** Publish one message and wait for its confirm (an Error for a nack or a closed channel). */
function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  body: string,
  mandatory = false,
): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.publish(exchange, routingKey, Buffer.from(body), { persistent: true, mandatory }, (err) =>
      err === null ? resolve() : reject(err),
    );
  });
}

/** The log lines of `node` saying a read-index timed out and a name was answered as missing. */
const timedOutLines = (cluster: TestCluster, node: string): string[] =>
  cluster.logsOf(node).filter((line) => line.includes('did not confirm its commit index in time'));

describe('a three-node cluster: what one node declared, every node knows at once', () => {
  const started = clusterForSuite(3);

  it('declared on node 1, passive-declared, published to and read on nodes 2 and 3 with no wait, every time', async () => {
    const cluster = started();
    const c1 = await cluster.connect('n1');
    const declarer = await c1.createChannel();
    const others = [];
    for (const name of ['n2', 'n3']) {
      const connection = await cluster.connect(name);
      others.push({ name, channel: await connection.createConfirmChannel() });
    }
    const returned: string[] = [];
    for (const { channel } of others) channel.on('return', (m) => returned.push(m.fields.routingKey));

    for (let i = 0; i < 24; i++) {
      // Alternate which node reads first: each must catch up on its own.
      const [first, second] = i % 2 === 0 ? others : [...others].reverse();
      if (first === undefined || second === undefined) throw new Error('two other nodes expected');
      const exchange = `ryw.x.${i}`;
      const queue = `ryw.q.${i}`;
      await declarer.assertExchange(exchange, 'direct', { durable: true });
      await declarer.assertQueue(queue, { durable: true });
      await declarer.bindQueue(queue, exchange, 'k');
      // At once, through the other nodes: a 404 closes the channel and fails the step.
      await first.channel.checkExchange(exchange);
      await publishConfirmed(first.channel, exchange, 'k', `${i}`, true);
      const got = await second.channel.get(queue, { noAck: true });
      expect(got === false ? undefined : got.content.toString()).toBe(`${i}`);
      expect((await second.channel.checkQueue(queue)).messageCount).toBe(0);
    }
    expect(returned).toEqual([]);
    // Published to the default exchange (not mandatory: a queue this node did not know would drop
    // the message, confirmed) and consumed, each right after the declare.
    for (let i = 0; i < 8; i++) {
      const queue = `ryw.direct.${i}`;
      await declarer.assertQueue(queue, { durable: true });
      const [publisher, consumer] = i % 2 === 0 ? others : [...others].reverse();
      if (publisher === undefined || consumer === undefined) throw new Error('two other nodes expected');
      await publishConfirmed(publisher.channel, '', queue, `d${i}`);
      const delivered = new Promise<string>((resolve) => {
        void consumer.channel.consume(queue, (m) => {
          if (m !== null) resolve(m.content.toString());
        });
      });
      const missed = new Promise<string>((resolve) => setTimeout(() => resolve('nothing in 10 s'), 10_000));
      expect(await Promise.race([delivered, missed])).toBe(`d${i}`);
    }
    expect(returned).toEqual([]);
    for (const name of ['n2', 'n3']) expect(timedOutLines(cluster, name)).toEqual([]);
  }, 180_000);

  it('a queue declared on node 1 and deleted at once on node 2 is gone, not answered as already missing', async () => {
    const cluster = started();
    const declarer = await (await cluster.connect('n1')).createChannel();
    const n2 = await cluster.connect('n2');
    const deleter = await n2.createChannel();
    for (let i = 0; i < 6; i++) {
      const queue = `ryw.del.${i}`;
      await declarer.assertQueue(queue, { durable: true });
      // Had node 2 not caught up, it would answer delete-ok for a queue it does not know (what
      // RabbitMQ answers for a missing queue) and the queue would live on.
      await deleter.deleteQueue(queue);
      // Gone as node 2 sees it (it applied the delete before answering). Other nodes learn of a
      // delete a round trip later: only a name's creation is read-your-writes everywhere.
      const check = await n2.createChannel();
      await expect(check.checkQueue(queue)).rejects.toThrow(/404/);
    }
  }, 120_000);

  it('the management API of nodes 2 and 3 shows a queue and an exchange declared on node 1 a moment ago', async () => {
    const cluster = started();
    const declarer = await (await cluster.connect('n1')).createChannel();
    for (let i = 0; i < 16; i++) {
      await declarer.assertQueue(`ryw.api.${i}`, { durable: false });
      expect((await cluster.queue('n2', `ryw.api.${i}`)).name).toBe(`ryw.api.${i}`);
      await declarer.assertExchange(`ryw.api.x.${i}`, 'topic', { durable: true });
      const x = await cluster.api<{ name: string }>('n3', `/api/exchanges/%2F/ryw.api.x.${i}`);
      expect(x.name).toBe(`ryw.api.x.${i}`);
      // Any GET that would be a 404: here the bindings of a queue declared a moment ago.
      await declarer.assertQueue(`ryw.api.b.${i}`, { durable: false });
      const bindings = await cluster.api<{ source: string }[]>(
        'n2',
        `/api/queues/%2F/ryw.api.b.${i}/bindings`,
      );
      expect(bindings.map((b) => b.source)).toEqual(['']);
      // A change naming them too: bind on node 3 what node 1 declared a moment ago, purge on node 2.
      await declarer.assertQueue(`ryw.api.c.${i}`, { durable: false });
      await cluster.api('n3', `/api/bindings/%2F/e/ryw.api.x.${i}/q/ryw.api.c.${i}`, {
        method: 'POST',
        body: JSON.stringify({ routing_key: 'k' }),
      });
      await declarer.assertQueue(`ryw.api.p.${i}`, { durable: false });
      await cluster.api('n2', `/api/queues/%2F/ryw.api.p.${i}/contents`, { method: 'DELETE' });
    }
  }, 120_000);

  it('a name never declared is a 404 after one read-index round; cut off from the leader, after the bounded wait, logged', async () => {
    const cluster = started();
    // Every node up: a missing name is the same 404 as ever (after one read-index round), nothing logged.
    const up = await (await cluster.connect('n2')).createChannel();
    await expect(up.checkQueue('ryw.never-declared')).rejects.toThrow(/404/);
    expect(timedOutLines(cluster, 'n2')).toEqual([]);

    // Node 2 cut off from both others: no leader can confirm a commit index, so the miss waits for
    // the bound, then answers the same 404 as before, and says so in the log.
    const alone = await (await cluster.connect('n2')).createChannel();
    cluster.pause('n1');
    cluster.pause('n3');
    try {
      await expect(alone.checkExchange('ryw.never-declared.x')).rejects.toThrow(/404/);
      // The node writes its log asynchronously: the line may follow the 404 by a moment.
      await eventually('the timeout logged on n2', async () => timedOutLines(cluster, 'n2').length > 0);
      const lines = timedOutLines(cluster, 'n2');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain("exchange 'ryw.never-declared.x' in vhost '/': unknown on this node");
    } finally {
      cluster.resume('n1');
      cluster.resume('n3');
    }
  }, 120_000);
});
