// A rolling upgrade across real processes (issue 20, item 4): three `styx server` nodes, n1 started
// with the test-only STYX_TEST_PRETEND_OLDER=1 (it announces cluster protocol version 3 and lacks the
// newest feature flags, wide_dedupe_window and batched_remote_sends: it decodes no queue log
// entry of tag 20, setDedupeWindow, and serves no queue-link op 9, as that build would not). n1
// forms the cluster, so the flags start disabled; n2 and n3 (current) join. The mixed cluster
// works (a replicated queue takes confirmed publishes and gives them back on every node, by get and
// by consumers on every node, in order, none redelivered; at-least-once dead-lettering with n1 a
// replica of both queues hands every message over exactly once, and no replica meets an entry it
// cannot apply; once enabled, deliveries to other nodes are batched per turn); `styx ctl list_feature_flags`
// shows the flag unavailable, supported by n2 and n3, lacking on n1, and enable_feature_flag refuses
// it naming n1's version. Once n1 restarts as the current build the flag is disabled (every node
// supports it) and `styx ctl enable_feature_flag all` enables it cluster-wide, for good; a new node
// of the older version is then refused at its join.
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, REPO_ROOT, startBroker } from '../support/broker-process.ts';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';
import type { Exit } from '../support/spawned.ts';
import { killSpawned, spawnNode } from '../support/spawned.ts';

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

const FLAG = 'batched_remote_sends';
/** Every flag since version 4, which the pretend-older node lacks, as ctl lists them. */
const NEWEST_FLAGS = 'wide_dedupe_window, batched_remote_sends';
/** This build's cluster protocol version, and the pretend-older node's. */
const VERSION = 4;
const OLDER = VERSION - 1;

interface FlagJson {
  readonly name: string;
  readonly state: string;
  readonly supported_by: string[];
  readonly lacking: string[];
  readonly nodes: { node: string; version: number | null; supported: boolean | null }[];
}

/** Longest one `styx ctl` run may take, ms. */
const CTL_WAIT_MS = 45_000;

describe('a rolling upgrade: one node a version behind, then upgraded', () => {
  let cluster: TestCluster;
  const open: Connection[] = [];

  /** `styx ctl ARGS --node <via's management API>`, as an operator runs it. */
  const ctl = (via: string, ...args: string[]): Promise<Exit> =>
    spawnNode([join(REPO_ROOT, 'packages/node/src/cli/main.ts'), 'ctl', ...args, '--node', nodeUrl(via)], {
      cwd: REPO_ROOT,
    }).exited(CTL_WAIT_MS);
  const nodeUrl = (name: string): string => cluster.node(name).broker.managementUrl ?? '';
  const flag = async (via: string): Promise<FlagJson> => {
    const flags = await cluster.api<FlagJson[]>(via, '/api/feature-flags');
    return flags.find((f) => f.name === FLAG) as FlagJson;
  };

  /** Publish `count` confirmed messages to `queue` through `via`, then take them all back through `from`. */
  async function roundTrip(queue: string, via: string, from: string, count: number): Promise<string[]> {
    const publisher = await amqp.connect(cluster.url(via));
    const consumer = await amqp.connect(cluster.url(from));
    open.push(publisher, consumer);
    try {
      return await exchange(publisher, consumer, queue, from, count);
    } finally {
      await publisher.close().catch(() => undefined);
      await consumer.close().catch(() => undefined);
    }
  }

  async function exchange(
    publisher: Connection,
    consumer: Connection,
    queue: string,
    from: string,
    count: number,
  ): Promise<string[]> {
    const confirms = await publisher.createConfirmChannel();
    await confirms.assertQueue(queue, { durable: true });
    for (let i = 0; i < count; i++)
      confirms.sendToQueue(queue, Buffer.from(`${queue}-${i}`), { persistent: true });
    await confirms.waitForConfirms();
    const channel = await consumer.createChannel();
    const got: string[] = [];
    await eventually(`${count} messages back from ${queue} via ${from}`, async () => {
      for (;;) {
        const message = await channel.get(queue, { noAck: true });
        if (message === false) break;
        got.push(message.content.toString());
      }
      return got.length >= count;
    });
    return got;
  }

  /**
   * `count` messages published to `queue` through `via` and rejected there by a consumer, dead-lettered
   * at-least-once into `queue`.dlq (both replicated on every node), then read back through `from`.
   */
  async function deadLetterRoundTrip(
    queue: string,
    via: string,
    from: string,
    count: number,
  ): Promise<string[]> {
    const publisher = await amqp.connect(cluster.url(via));
    const consumer = await amqp.connect(cluster.url(from));
    open.push(publisher, consumer);
    try {
      const channel = await publisher.createConfirmChannel();
      await channel.assertQueue(`${queue}.dlq`, { durable: true });
      await channel.assertQueue(queue, {
        durable: true,
        arguments: {
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': `${queue}.dlq`,
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
        },
      });
      for (let i = 0; i < count; i++)
        channel.sendToQueue(queue, Buffer.from(`${queue}-${i}`), { persistent: true });
      await channel.waitForConfirms();
      const rejecter = await publisher.createChannel();
      let rejected = 0;
      await rejecter.consume(queue, (m) => {
        if (m === null) return;
        rejecter.reject(m, false);
        rejected++;
      });
      await eventually(`${count} rejected from ${queue}`, async () => rejected >= count);
      const reader = await consumer.createChannel();
      const got: string[] = [];
      await eventually(`${count} dead letters in ${queue}.dlq via ${from}`, async () => {
        for (;;) {
          const message = await reader.get(`${queue}.dlq`, { noAck: true });
          if (message === false) break;
          got.push(message.content.toString());
        }
        return got.length >= count;
      });
      // Nothing more comes (a copy twice would show here).
      await new Promise((resolve) => setTimeout(resolve, 500));
      const extra = await reader.get(`${queue}.dlq`, { noAck: true });
      if (extra !== false) got.push(extra.content.toString());
      return got.sort();
    } finally {
      await publisher.close().catch(() => undefined);
      await consumer.close().catch(() => undefined);
    }
  }

  const expected = (queue: string, count: number): string[] =>
    Array.from({ length: count }, (_, i) => `${queue}-${i}`).sort();

  /**
   * The consistency check of `queue` passes (its replicas, once at one applied index, agree on their
   * messages and their dedupe window), and every replica reports `window`. A replica that skipped
   * an entry it could not decode (as an older build does) would disagree on the window.
   */
  async function replicasAgree(queue: string, window: number): Promise<void> {
    interface Check {
      readonly status: string;
      readonly problems: string[];
      readonly replicas: { readonly node: string; readonly dedupe_window: number | null }[];
    }
    let last: Check | string | undefined;
    await eventually(`${queue}'s replicas to be compared`, async () => {
      last = await cluster
        .api<Check>('n3', `/api/checks/queues/%2F/${encodeURIComponent(queue)}`)
        .catch((error: unknown) => (error as Error).message);
      return typeof last !== 'string' || !/not_compared/.test(last);
    });
    expect(last).toMatchObject({ status: 'ok', problems: [] });
    expect((last as Check).replicas.map((r) => r.dedupe_window)).toEqual([window, window, window]);
  }

  /**
   * For each node: publish `count` confirmed messages through `via` to a queue of its own (declared
   * there: `via`'s replica campaigns first and leads it), then drain it with one consumer on that
   * node (prefetch 200, acking each): every message arrives once, in publish order, not redelivered.
   */
  async function consumeOnEveryNode(queue: string, via: string, count: number): Promise<void> {
    const publisher = await amqp.connect(cluster.url(via));
    open.push(publisher);
    try {
      await drainOnEveryNode(queue, await publisher.createConfirmChannel(), count);
    } finally {
      // Closed now: a node restarted later would close it under the test.
      await publisher.close().catch(() => undefined);
    }
  }

  async function drainOnEveryNode(
    queue: string,
    confirms: Awaited<ReturnType<Connection['createConfirmChannel']>>,
    count: number,
  ): Promise<void> {
    for (const from of ['n1', 'n2', 'n3']) {
      const name = `${queue}.${from}`;
      await confirms.assertQueue(name, { durable: true });
      for (let i = 0; i < count; i++)
        confirms.sendToQueue(name, Buffer.from(String(i)), { persistent: true });
      await confirms.waitForConfirms();
      const consumer = await amqp.connect(cluster.url(from));
      open.push(consumer);
      const channel = await consumer.createChannel();
      await channel.prefetch(200);
      const got: number[] = [];
      let redelivered = 0;
      await channel.consume(name, (m) => {
        if (m === null) return;
        if (m.fields.redelivered) redelivered++;
        got.push(Number(m.content.toString()));
        channel.ack(m);
      });
      await eventually(`${count} messages of ${name} on ${from}`, async () => got.length >= count);
      await consumer.close();
      expect(redelivered, `redelivered on ${from}`).toBe(0);
      expect(got, `order on ${from}`).toEqual(Array.from({ length: count }, (_, i) => i));
    }
  }

  beforeAll(async () => {
    cluster = await TestCluster.start(3, { nodeEnv: { n1: { STYX_TEST_PRETEND_OLDER: '1' } } });
  }, 180_000);

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    killSpawned();
    await cluster?.stop();
  }, 60_000);

  it('works mixed, shows the newest flag unavailable and who lacks it, and refuses to enable it', async () => {
    expect(
      cluster.logsOf('n1').some((l) => l.includes('pretends to run the previous cluster protocol version')),
    ).toBe(true);
    await eventually('n2 to know every node’s hello', async () => {
      const f = await flag('n2');
      return f.nodes.every((n) => n.version !== null);
    });
    const mixed = await flag('n2');
    expect(mixed.state).toBe('unavailable');
    expect(mixed.supported_by).toEqual(['n2', 'n3']);
    expect(mixed.lacking).toEqual(['n1']);
    expect(mixed.nodes).toEqual([
      { node: 'n1', version: OLDER, supported: false },
      { node: 'n2', version: VERSION, supported: true },
      { node: 'n3', version: VERSION, supported: true },
    ]);
    expect(cluster.logsOf('n2').some((l) => l.includes('a peer runs another cluster protocol version'))).toBe(
      true,
    );

    // The cluster works with the older node in it, each way.
    expect((await roundTrip('ff.mixed', 'n2', 'n1', 200)).sort()).toEqual(
      Array.from({ length: 200 }, (_, i) => `ff.mixed-${i}`).sort(),
    );
    expect(await roundTrip('ff.mixed.old', 'n1', 'n3', 50)).toHaveLength(50);
    // At-least-once dead-lettering, n1 a replica of source and target: the target's log must get no
    // entry n1 cannot decode (the wider dedupe window waits for the flag).
    // (Declared through n2, which then leads both: n1 follows, decoding every entry of their logs.)
    expect(await deadLetterRoundTrip('ff.dl.mixed', 'n2', 'n1', 300)).toEqual(expected('ff.dl.mixed', 300));
    await replicasAgree('ff.dl.mixed.dlq', 1024);
    // Consumers on every node, the queue led by one of them: deliveries to the others cross nodes,
    // one call each (the flag is off), in order, none redelivered (n1 was sent no batch it refuses).
    await consumeOnEveryNode('ff.mixed.consume', 'n2', 300);

    const listed = await ctl('n3', 'list_feature_flags', '-q');
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toBe('name\tstate\tsupported_by\tlacking\tdesc');
    expect(listed.stdout).toMatch(new RegExp(`^${FLAG}\\tunavailable\\t\\[n2, n3\\]\\t\\[n1\\]\\t`, 'm'));

    const refused = await ctl('n2', 'enable_feature_flag', FLAG);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(`n1 \\(cluster protocol version ${OLDER}\\) does not support it`),
    );
    // 'all' leaves out what it cannot enable.
    const all = await ctl('n2', 'enable_feature_flag', 'all');
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/Nothing to enable/);
    expect((await flag('n3')).state).toBe('unavailable');
    // An unknown flag: 404.
    const unknown = await ctl('n2', 'enable_feature_flag', 'no_such_flag');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no feature flag 'no_such_flag'/);
    // (Maintenance mode's flag came with version 2, which n1 now pretends to run: its refusal
    // while a member lacks it is no longer seen here.)
  }, 180_000);

  it('once the older node restarts as the current build, enable_feature_flag all enables the flag for good', async () => {
    await cluster.restart('n1', { env: {} });
    await cluster.waitFormed();
    await eventually('every node to support the flag, as n3 sees them', async () => {
      const f = await flag('n3');
      return f.state === 'disabled' && f.lacking.length === 0;
    });
    expect((await flag('n3')).supported_by).toEqual(['n1', 'n2', 'n3']);

    const enabled = await ctl('n1', 'enable_feature_flag', 'all');
    expect(enabled.code).toBe(0);
    expect(enabled.stdout).toMatch(new RegExp(`Enabled: ${NEWEST_FLAGS}`));
    for (const via of ['n1', 'n2', 'n3']) {
      await eventually(`${via} to show the flag enabled`, async () => (await flag(via)).state === 'enabled');
    }
    const again = await ctl('n2', 'enable_feature_flag', FLAG);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already enabled/);
    const listed = await ctl('n2', 'list_feature_flags', 'name', 'state', '-q');
    expect(listed.stdout).toMatch(new RegExp(`^${FLAG}\\tenabled$`, 'm'));
    // A node of the older version may no longer join: it would be sent what it does not know.
    const clusterPort = await freePort();
    const joiner = await startBroker({
      dataDir: join(cluster.root, 'n4'),
      port: await freePort(),
      startTimeoutMs: 60_000,
      env: { STYX_TEST_PRETEND_OLDER: '1' },
      extraArgs: [
        ...['--cluster-listen', `127.0.0.1:${clusterPort}`, '--node-name', 'n4'],
        ...['--cluster-secret-file', join(cluster.root, 'secret')],
        ...['--join', `127.0.0.1:${cluster.node('n2').clusterPort}`],
      ],
    }).catch((error: unknown) => error as Error);
    if (!(joiner instanceof Error)) await joiner.kill();
    expect(joiner).toBeInstanceOf(Error);
    expect((joiner as Error).message).toMatch(/exited with 1 before listening/);
    expect((joiner as Error).message).toMatch(
      new RegExp(
        `node 'n4' cannot join: it runs cluster protocol version ${OLDER} and lacks the feature flag\\(s\\) ${NEWEST_FLAGS}`,
      ),
    );
    expect(await cluster.api<unknown[]>('n3', '/api/nodes')).toHaveLength(3);
    // Enabled for good: a restart keeps it (it is in the metadata group).
    await cluster.restart('n2');
    await cluster.waitFormed();
    expect((await flag('n2')).state).toBe('enabled');
    expect(await roundTrip('ff.upgraded', 'n3', 'n2', 50)).toHaveLength(50);
    // With the flag enabled the target records the wider window first; every node applies it.
    expect(await deadLetterRoundTrip('ff.dl.upgraded', 'n3', 'n1', 300)).toEqual(
      expected('ff.dl.upgraded', 300),
    );
    await replicasAgree('ff.dl.upgraded.dlq', 4096);
    // Enabled: a turn's deliveries to another node go as one call; the same guarantees.
    await consumeOnEveryNode('ff.upgraded.consume', 'n1', 1_000);
  }, 240_000);
});

describe('a cluster formed by a node of this build', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(2);
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('starts with every flag of its build enabled, and the node that joins supports them', async () => {
    for (const via of ['n1', 'n2']) {
      await eventually(`${via} to show the flag enabled`, async () => {
        const flags = await cluster.api<FlagJson[]>(via, '/api/feature-flags');
        const f = flags.find((x) => x.name === FLAG);
        return f?.state === 'enabled' && f.supported_by.length === 2;
      });
    }
  }, 120_000);
});
