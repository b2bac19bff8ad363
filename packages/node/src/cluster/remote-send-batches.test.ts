import { afterEach, describe, expect, it } from 'vitest';
import type { BatchedOutcome } from './queue-batch-codec.ts';
import { decodeBatch, encodeBatchAnswer } from './queue-batch-codec.ts';
import type { QueueLinkHandler } from './queue-link.ts';
import {
  QueueLink,
  QueueLinkError,
  QueueLinkLostError,
  QueueLinkRemoteError,
  QueueLinkUnknownMessageError,
} from './queue-link.ts';
import { QueueOp } from './queue-rpc-codec.ts';
import { MAX_BATCH_BYTES, MAX_BATCH_SENDS, RemoteSendBatches } from './remote-send-batches.ts';
import type { LocalNode } from './test-support/local-cluster.ts';
import { LocalCluster } from './test-support/local-cluster.ts';

// The batcher over real queue links between two libp2p nodes on loopback: what the receiving node's
// link hands its handler is what went over the wire.

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const text = (bytes: Uint8Array): string => decoder.decode(bytes);

let cluster = new LocalCluster();
const links: QueueLink[] = [];

afterEach(async () => {
  await Promise.all(links.splice(0).map((l) => l.close()));
  await cluster.stop();
  cluster = new LocalCluster();
});

/** A call as the receiver's handler saw it: a send of its own, or a batch of them. */
interface Received {
  readonly op: number;
  /** The sends' bodies (one for a send of its own). */
  readonly bodies: string[];
}

/**
 * A sender and a receiver with queue links; the receiver knows the ops `knowsOp` accepts (an older
 * build does not know `QueueOp.batch`) and refuses a send whose body starts with "refuse".
 */
async function linked(knowsOp: (op: number) => boolean = () => true) {
  const [sender, receiver] = (await cluster.startMesh(2)) as [LocalNode, LocalNode];
  const start = (node: LocalNode) =>
    QueueLink.start({ node: node.node, logger: node.logger, admit: () => true, knowsOp });
  const atSender = await start(sender);
  const atReceiver = await start(receiver);
  links.push(atSender, atReceiver);
  atSender.addPeer(receiver.nodeId, receiver.address);
  const received: Received[] = [];
  const runOne = (body: Uint8Array): void => {
    if (text(body).startsWith('refuse')) throw new QueueLinkError('OWNER_GONE', text(body));
  };
  const handler: QueueLinkHandler = (op, _group, body) => {
    if (op !== QueueOp.batch) {
      received.push({ op, bodies: [text(body)] });
      runOne(body);
      return new Uint8Array(0);
    }
    const sends = decodeBatch(body);
    received.push({ op, bodies: sends.map((s) => text(s.body)) });
    const outcomes: BatchedOutcome[] = sends.map((s) => {
      try {
        runOne(s.body);
        return { ok: true };
      } catch (error) {
        return { ok: false, code: (error as QueueLinkError).code, text: (error as Error).message };
      }
    });
    return encodeBatchAnswer(outcomes);
  };
  atReceiver.handle(handler);
  const batches = new RemoteSendBatches((node, op, group, body) =>
    atSender.call(node, op, group, body, 5_000),
  );
  return { batches, received, to: receiver.nodeId, receiver };
}

/** Settle every send, as each one's outcome: 'ok' or its error. */
function outcomes(sends: readonly Promise<void>[]): Promise<(string | Error)[]> {
  return Promise.all(
    sends.map((s) =>
      s.then(
        () => 'ok' as const,
        (e: unknown) => e as Error,
      ),
    ),
  );
}

describe('RemoteSendBatches over a queue link', () => {
  it('sends a turn’s sends to one node as one call, in order, and settles each', async () => {
    const { batches, received, to } = await linked();
    const sends = Array.from({ length: 500 }, (_, i) =>
      batches.send(to, QueueOp.deliver, `g-${i % 2}`, encoder.encode(`m-${i}`)),
    );
    expect(await outcomes(sends)).toEqual(sends.map(() => 'ok'));
    expect(received).toHaveLength(1);
    expect(received[0]?.op).toBe(QueueOp.batch);
    expect(received[0]?.bodies).toEqual(sends.map((_, i) => `m-${i}`));
  });

  it('a send alone in its turn goes as a call of its own; the next turn starts a new batch', async () => {
    const { batches, received, to } = await linked();
    await batches.send(to, QueueOp.deliver, 'g', encoder.encode('alone'));
    await Promise.all([
      batches.send(to, QueueOp.deliver, 'g', encoder.encode('a')),
      batches.send(to, QueueOp.cancelled, 'g', encoder.encode('b')),
    ]);
    expect(received).toEqual([
      { op: QueueOp.deliver, bodies: ['alone'] },
      { op: QueueOp.batch, bodies: ['a', 'b'] },
    ]);
  });

  it('a refused send fails alone, with the code and text the node answered; the others go through', async () => {
    const { batches, to } = await linked();
    const sends = ['m-0', 'refuse-1', 'm-2'].map((b) =>
      batches.send(to, QueueOp.deliver, 'g', encoder.encode(b)),
    );
    const [first, refused, third] = await outcomes(sends);
    expect(first).toBe('ok');
    expect(third).toBe('ok');
    expect(refused).toBeInstanceOf(QueueLinkRemoteError);
    expect(refused).toMatchObject({ code: 'OWNER_GONE', message: 'refuse-1', peer: to });
  });

  it('a turn past the bound goes as several batches, in order', async () => {
    const { batches, received, to } = await linked();
    const count = MAX_BATCH_SENDS * 2 + 10;
    const sends = Array.from({ length: count }, (_, i) =>
      batches.send(to, QueueOp.deliver, 'g', encoder.encode(String(i))),
    );
    expect((await outcomes(sends)).every((o) => o === 'ok')).toBe(true);
    expect(received.map((r) => r.bodies.length)).toEqual([MAX_BATCH_SENDS, MAX_BATCH_SENDS, 10]);
    expect(received.flatMap((r) => r.bodies)).toEqual(sends.map((_, i) => String(i)));
    // A turn whose bodies pass the bytes bound: two fit in one batch, the third goes in the next.
    received.length = 0;
    const big = new Uint8Array(MAX_BATCH_BYTES / 2 - 1);
    const bigSends = [0, 1, 2].map(() => batches.send(to, QueueOp.deliver, 'g', big));
    expect((await outcomes(bigSends)).every((o) => o === 'ok')).toBe(true);
    expect(received.map((r) => r.bodies.length)).toEqual([2, 1]);
  });

  it('a peer of an older build (no batch op): each send of the batch fails as unknown, the link goes on', async () => {
    const { batches, received, to } = await linked((op) => op !== QueueOp.batch);
    const sends = [0, 1, 2].map((i) => batches.send(to, QueueOp.deliver, 'g', encoder.encode(`m-${i}`)));
    const failed = await outcomes(sends);
    for (const failure of failed) {
      expect(failure).toBeInstanceOf(QueueLinkUnknownMessageError);
      expect(failure).toMatchObject({ what: `op ${QueueOp.batch}` });
    }
    expect(received).toEqual([]);
    // A send of its own (the path such a peer is sent while the feature flag is off) goes through.
    await batches.send(to, QueueOp.deliver, 'g', encoder.encode('single'));
    expect(received).toEqual([{ op: QueueOp.deliver, bodies: ['single'] }]);
  });

  it('a batch to a node that is gone fails every send as lost (the sinks send them again)', async () => {
    const { batches, to, receiver } = await linked();
    await batches.send(to, QueueOp.deliver, 'g', encoder.encode('first'));
    await cluster.stopNode(receiver);
    const failed = await outcomes(
      [0, 1].map((i) => batches.send(to, QueueOp.deliver, 'g', encoder.encode(`${i}`))),
    );
    for (const failure of failed) expect(failure).toBeInstanceOf(QueueLinkLostError);
  });
});
