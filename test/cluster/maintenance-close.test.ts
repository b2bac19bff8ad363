// Issue 25 across real processes (three `styx server` nodes):
// - `styx ctl check_queue` on a queue under steady publishing, whose replicas are never at one
//   applied index while asked, answers "not compared" (exit 3), not ok; once idle, ok (exit 0).
// - A maintenance close (drain) and a node stop (SIGTERM) of the node a confirmed publisher uses,
//   while its queue cannot commit (the queue's other replica is paused, SIGSTOP) for longer than
//   such a close used to wait: the close waits for the publishes' outcomes, so after sending again
//   what failed at the close, every message is in the queue exactly once.
import type { Channel } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { ConfirmedPublisher } from '../support/confirmed-publisher.ts';
import type { CtlRun } from '../support/ctl-process.ts';
import { ctl } from '../support/ctl-process.ts';
import { eventually } from '../support/eventually.ts';

/** A JSON object of an answer. */
type Row = Record<string, unknown>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Longer than a maintenance close waited before (5 s), and a stop (2 s). */
const STALL_MS = 8_000;

/** Every message of `queue` (basic.get, acked), by body. */
async function drainQueue(channel: Channel, queue: string): Promise<number[]> {
  const bodies: number[] = [];
  for (;;) {
    const message = await channel.get(queue, { noAck: true });
    if (message === false) return bodies;
    bodies.push(Number(message.content.toString()));
  }
}

/** The numbers that occur more than once. */
function duplicated(bodies: readonly number[]): number[] {
  const seen = new Set<number>();
  const twice = new Set<number>();
  for (const n of bodies) (seen.has(n) ? twice : seen).add(n);
  return [...twice].sort((a, b) => a - b);
}

describe('check_queues on a busy queue, and closes that leave no publisher in doubt (three nodes)', () => {
  let cluster: TestCluster;
  /** A queue with two replicas, neither on n1: its follower paused, it cannot commit. */
  let stalled: string;
  let leader: string;
  let follower: string;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    const ch = await (await cluster.connect('n2')).createChannel();
    await ch.assertQueue('busy', { durable: true });
    for (let i = 0; i < 8 && stalled === undefined; i++) {
      const name = `stall.${i}`;
      await ch.assertQueue(name, { durable: true, arguments: { 'x-quorum-initial-group-size': 2 } });
      const json = await cluster.queue('n2', name);
      if (!json.members?.includes('n1')) stalled = name;
    }
    expect(stalled).toBeDefined();
    leader = await cluster.leaderOf(stalled);
    follower = leader === 'n2' ? 'n3' : 'n2';
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('a queue under steady publishing is not compared (exit 3), never ok uncompared; once idle it is compared (exit 0)', async () => {
    // Several publishers through two nodes: the leader (n2) commits all the time, and its followers
    // apply each commit a moment later.
    const publishers: ConfirmedPublisher[] = [];
    for (const via of ['n1', 'n3', 'n1', 'n3'])
      publishers.push(
        new ConfirmedPublisher(await (await cluster.connect(via)).createConfirmChannel(), 'busy'),
      );
    /** Every check that passed while busy, and the applied indexes it saw: it must have compared them all. */
    const passed: number[][] = [];
    let notCompared: CtlRun | undefined;
    try {
      await eventually('publishes confirmed', async () => publishers.every((p) => p.confirmed.size > 100));
      // Each check asks up to three times; while the queue is busy its answers are mostly apart, but
      // an attempt may catch every replica at one index: then it is compared, and ok is right. Asked
      // through a follower (n1): its own report is taken first, the leader's after a round trip,
      // in which the leader has usually applied more.
      await eventually(
        'a check that could not compare the busy queue',
        async () => {
          const run = await ctl(cluster, 'n1', 'check_queues', '-p', '/', '--formatter', 'json');
          const answer = JSON.parse(run.stdout) as { queues: { name: string; replicas: Row[] }[] };
          const busy = answer.queues.find((q) => q.name === 'busy');
          if (run.code === 0) passed.push(busy?.replicas.map((r) => r.applied_index as number) ?? []);
          if (run.code !== 3) return false;
          notCompared = run;
          return true;
        },
        90_000,
        0,
      );
    } finally {
      for (const publisher of publishers) await publisher.stop();
    }
    console.log(`checks while busy: ${passed.length} compared every replica (ok), then one could not`);
    for (const indexes of passed) expect(new Set(indexes).size).toBe(1);
    const run = notCompared as CtlRun;
    expect(run.stderr).toMatch(
      /queue busy in vhost \/ was not compared: the replicas were not at one applied index/,
    );
    const answer = JSON.parse(run.stdout) as { ok: boolean; status: string; queues: Row[] };
    expect(answer).toMatchObject({ ok: false, status: 'not_compared' });
    const busy = answer.queues.find((q) => q.name === 'busy');
    expect(busy).toMatchObject({ ok: false, status: 'not_compared', problems: [], attempts: 3 });
    expect(busy?.applied_indexes).toHaveLength(3);
    expect(busy?.reason).toMatch(/could not be compared with any other replica \(asked 3 time\(s\)\)$/);
    for (const publisher of publishers) expect(publisher.failed.size).toBe(0);
    // Idle, the replicas line up: compared and consistent.
    await eventually('the idle queue to be compared', async () => {
      const idle = await ctl(cluster, 'n2', 'check_queue', 'busy');
      return idle.code === 0;
    });
  }, 180_000);

  it("drain of the publisher's node while its queue cannot commit: the close waits for the outcomes, no duplicate", async () => {
    const conn = await amqp.connect(cluster.url('n1'));
    const blocked: string[] = [];
    conn.on('blocked', (reason) => blocked.push(reason));
    let closedWith: Error | undefined;
    let closed = false;
    conn.on('error', () => undefined);
    conn.on('close', (err) => {
      closed = true;
      closedWith = err;
    });
    const publisher = new ConfirmedPublisher(await conn.createConfirmChannel(), stalled);
    await eventually('publishes confirmed', async () => publisher.confirmed.size > 200);

    cluster.pause(follower);
    await sleep(300); // a window's worth of publishes now waits on the stalled commit
    const drain = ctl(cluster, 'n1', 'drain', '--timeout', '30');
    await sleep(STALL_MS);
    cluster.resume(follower);
    const drained = await drain;
    expect(drained.code).toBe(0);
    await publisher.stop();
    await eventually('the client to see the close', async () => closed);
    await expectEachOnceAfterResending(publisher, stalled);
    expect(closedWith).toMatchObject({ code: 320 });
    // Told to stop publishing first, with the reason.
    expect(blocked[0]).toMatch(/maintenance mode/);
    await ctl(cluster, 'n2', 'revive', 'n1');
  }, 120_000);

  it("SIGTERM of the publisher's node while its queue cannot commit: the stop waits for the outcomes, no duplicate", async () => {
    const conn = await amqp.connect(cluster.url('n1'));
    conn.on('error', () => undefined);
    const publisher = new ConfirmedPublisher(await conn.createConfirmChannel(), stalled);
    await eventually('publishes confirmed', async () => publisher.confirmed.size > 200);

    cluster.pause(follower);
    await sleep(300);
    const n1 = cluster.node('n1').broker.child;
    const exited = new Promise<number | null>((resolve) => n1.once('exit', (code) => resolve(code)));
    n1.kill('SIGTERM');
    await sleep(STALL_MS);
    cluster.resume(follower);
    expect(await exited).toBe(0);
    await publisher.stop();
    await expectEachOnceAfterResending(publisher, stalled);
  }, 120_000);

  /**
   * Send again, through n2, what failed; wait until a first copy still on its way would have
   * landed; then every number published is in `queue` exactly once.
   */
  async function expectEachOnceAfterResending(publisher: ConfirmedPublisher, queue: string): Promise<void> {
    for (const n of publisher.confirmed) expect(publisher.failed.has(n)).toBe(false);
    expect(publisher.confirmed.size + publisher.failed.size).toBe(publisher.next);
    const ch = await (await cluster.connect('n2')).createConfirmChannel();
    for (const n of publisher.failed) ch.sendToQueue(queue, Buffer.from(String(n)), { persistent: true });
    await ch.waitForConfirms();
    // A first copy left pending by a close that did not wait commits as soon as the queue can.
    await sleep(3_000);
    const bodies = await drainQueue(ch, queue);
    expect(duplicated(bodies)).toEqual([]);
    expect(new Set(bodies)).toEqual(new Set([...Array(publisher.next).keys()]));
    console.log(
      `${publisher.next} published: ${publisher.confirmed.size} confirmed, ${publisher.failed.size} failed at the close and sent again`,
    );
  }
});
