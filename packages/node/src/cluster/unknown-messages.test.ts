/**
 * A message a node does not know (a newer peer's) closes nothing: it is answered with an error that
 * names both nodes' cluster protocol versions, logged once per peer, and the stream goes on with
 * the messages the node knows. On loopback, with real libp2p hosts saying hello: node `cur` runs
 * version 2, node `old` version 1.
 */
import type { Stream } from '@libp2p/interface';
import type { PeerBatch } from '@styx/raft';
import { encodePeerBatch } from '@styx/raft';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { unknownEventKind } from './cluster-gossip.ts';
import { RpcUnknownKindError } from './cluster-rpc.ts';
import { buildOf } from './feature-flags.ts';
import { RAFT_PROTOCOL } from './libp2p-transport.ts';
import { peerMultiaddr } from './peer-address.ts';
import { LEGACY_PROTOCOL_VERSION } from './protocol-version.ts';
import { QUEUE_LINK_PROTOCOL, QueueLink, QueueLinkUnknownMessageError } from './queue-link.ts';
import { decodeUnknownFrameAnswer, encodeFrame, FrameDecoder, messageChunks } from './raft-frames.ts';
import { heartbeatBatch } from './test-support/heartbeat-batch.ts';
import type { LocalNode } from './test-support/local-cluster.ts';
import { LocalCluster } from './test-support/local-cluster.ts';

const WAIT = { timeout: 10_000 };
const WARN = 40;
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (data: Uint8Array): string => new TextDecoder().decode(data);
const logged = (local: LocalNode, msg: string): Record<string, unknown>[] =>
  local.lines.filter((line) => line.level === WARN && String(line.msg).includes(msg));

let local = new LocalCluster();
const links: QueueLink[] = [];

afterEach(async () => {
  await Promise.all(links.splice(0).map((l) => l.close()));
  await local.stop();
  local = new LocalCluster();
});

/** `cur` (version 2) and `old` (version 1), admitting each other, connected, hellos exchanged. */
async function pair(): Promise<{ cur: LocalNode; old: LocalNode }> {
  const [a, b] = await Promise.all([local.identity(), local.identity()]);
  const members = [a.nodeId, b.nodeId];
  const cur = await local.start(a, { members, build: buildOf(2) });
  const old = await local.start(b, { members, build: buildOf(1) });
  for (const [x, y] of [
    [cur, old],
    [old, cur],
  ] as const) {
    x.transport.addPeer(y.nodeId, y.address);
    x.rpc.addPeer(y.nodeId, y.address);
  }
  await cur.transport.connect(old.nodeId);
  await vi.waitFor(() => {
    expect(cur.hello?.versionOf(old.nodeId)).toBe(1);
    expect(old.hello?.versionOf(cur.nodeId)).toBe(2);
  }, WAIT);
  return { cur, old };
}

/** Frames `stream` receives, as they come. */
function framesOf(stream: Stream): Uint8Array[] {
  const received: Uint8Array[] = [];
  const frames = new FrameDecoder(1 << 20);
  stream.addEventListener('message', (event) => {
    for (const chunk of messageChunks(event.data)) received.push(...frames.push(chunk));
  });
  return received;
}

const batch = heartbeatBatch;

describe('the hello', () => {
  it("records each peer's version and flags, and a peer that answers no hello as version 1", async () => {
    const { cur, old } = await pair();
    expect([...(cur.hello?.of(old.nodeId)?.flags ?? [])]).toEqual([]);
    expect([...(old.hello?.of(cur.nodeId)?.flags ?? [])]).toEqual([
      'queue_body_repair',
      'consumer_suspicion',
      'ordered_publishes',
      'maintenance_mode',
      'redrive',
    ]);
    // A node from before the hello: no protocol for it at all.
    const legacy = await local.start(await local.identity(), { members: [cur.nodeId] });
    cur.gater.approveJoin(legacy.nodeId);
    cur.transport.addPeer(legacy.nodeId, legacy.address);
    await cur.transport.connect(legacy.nodeId);
    await vi.waitFor(() => expect(cur.hello?.versionOf(legacy.nodeId)).toBe(LEGACY_PROTOCOL_VERSION), WAIT);
    expect(cur.hello?.of(legacy.nodeId)?.flags.size).toBe(0);
  });
});

describe('an unknown cluster RPC kind', () => {
  it('is answered with the versions of both nodes, logged once, and later calls work', async () => {
    const { cur, old } = await pair();
    cur.rpc.handle('queue.bodies', async () => bytes('bodies'));
    old.rpc.handle('ping', async () => bytes('pong'));
    const failures = await Promise.all(
      [1, 2, 3].map(() => cur.rpc.call(old.nodeId, 'queue.bodies', bytes('')).catch((e: unknown) => e)),
    );
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(RpcUnknownKindError);
      expect(failure).toMatchObject({
        code: 'UNKNOWN_KIND',
        peer: old.nodeId,
        kind: 'queue.bodies',
        senderVersion: 2,
        receiverVersion: 1,
      });
      expect((failure as Error).message).toBe(
        `node ${old.nodeId} (cluster protocol version 1) does not know rpc kind 'queue.bodies' sent by node ` +
          `${cur.nodeId} (cluster protocol version 2); the stream stays open for the messages it knows`,
      );
    }
    // Once per peer and kind on each side, not per call.
    expect(logged(old, 'unknown message from a peer')).toHaveLength(1);
    expect(logged(old, 'unknown message from a peer')[0]).toMatchObject({
      peer: cur.nodeId,
      senderVersion: 2,
      receiverVersion: 1,
    });
    expect(logged(cur, 'a peer does not know a message')).toHaveLength(1);
    // The connection goes on: known kinds both ways.
    expect(text(await cur.rpc.call(old.nodeId, 'ping', bytes('')))).toBe('pong');
    expect(text(await old.rpc.call(cur.nodeId, 'queue.bodies', bytes('')))).toBe('bodies');
  });
});

describe('an unknown Raft frame kind', () => {
  it('is skipped and answered on its stream, which goes on delivering batches', async () => {
    const { cur, old } = await pair();
    const delivered: PeerBatch[] = [];
    old.transport.onReceive((b) => delivered.push(b));
    const stream = await cur.node.dialProtocol(peerMultiaddr(old.address, old.node.peerId), RAFT_PROTOCOL);
    const answers = framesOf(stream);
    stream.send(encodeFrame(new Uint8Array([7, 1, 2, 3])));
    stream.send(encodeFrame(new Uint8Array([7, 4])));
    stream.send(encodeFrame(encodePeerBatch(batch(cur.nodeId, 5))));
    await vi.waitFor(() => expect(delivered).toHaveLength(1), WAIT);
    expect(delivered[0]?.messages[0]?.message.commit).toBe(5);
    await vi.waitFor(() => expect(answers).toHaveLength(2), WAIT);
    const answer = decodeUnknownFrameAnswer(answers[0] as Uint8Array);
    expect(answer.kind).toBe(7);
    expect(answer.text).toMatch(
      /\(cluster protocol version 1\) does not know raft frame kind 7 sent by node/,
    );
    expect(answer.text).toMatch(/\(cluster protocol version 2\)/);
    expect(stream.status).toBe('open');
    expect(logged(old, 'unknown message from a peer')).toHaveLength(1);
    expect(logged(old, 'malformed raft frame')).toHaveLength(0);
  });
});

describe('an unknown queue-link op or frame kind', () => {
  async function linked(): Promise<{ cur: LocalNode; old: LocalNode; atOld: QueueLink; atCur: QueueLink }> {
    const { cur, old } = await pair();
    const start = (node: LocalNode, knowsOp: (op: number) => boolean) =>
      QueueLink.start({
        node: node.node,
        logger: node.logger,
        admit: () => true,
        knowsOp,
        ...(node.hello === undefined ? {} : { versions: node.hello }),
      });
    // The older node knows ops 1 to 7; the current one an op 8 too.
    const atOld = await start(old, (op) => op >= 1 && op <= 7);
    const atCur = await start(cur, (op) => op >= 1 && op <= 8);
    links.push(atOld, atCur);
    atCur.addPeer(old.nodeId, old.address);
    atOld.handle((op, _group, body) => bytes(`op ${op}: ${text(body)}`));
    return { cur, old, atOld, atCur };
  }

  it('fails that call with the versions named, and the stream goes on', async () => {
    const { cur, old, atCur } = await linked();
    expect(text(await atCur.call(old.nodeId, 1, 'g', bytes('a')))).toBe('op 1: a');
    const failure = await atCur.call(old.nodeId, 8, 'g', bytes('new')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(QueueLinkUnknownMessageError);
    expect(failure).toMatchObject({
      code: 'UNKNOWN_MESSAGE',
      what: 'op 8',
      senderVersion: 2,
      receiverVersion: 1,
    });
    expect((failure as Error).message).toMatch(
      new RegExp(
        `node ${old.nodeId} \\(cluster protocol version 1\\) does not know queue-link op 8 sent by node ${cur.nodeId} \\(cluster protocol version 2\\)`,
      ),
    );
    expect(text(await atCur.call(old.nodeId, 1, 'g', bytes('b')))).toBe('op 1: b');
    expect(logged(old, 'malformed')).toHaveLength(0);
    expect(logged(old, 'unknown message from a peer')).toHaveLength(1);
  });

  it('answers a frame of an unknown kind by its call id on the same stream, which then serves requests', async () => {
    const { cur, old } = await linked();
    const stream = await cur.node.dialProtocol(
      peerMultiaddr(old.address, old.node.peerId),
      QUEUE_LINK_PROTOCOL,
    );
    const answers = framesOf(stream);
    // Kind 9, call id 5, whatever follows.
    stream.send(encodeFrame(new Uint8Array([9, 0, 0, 0, 5, 0xaa, 0xbb])));
    // A request: call id 6, op 1, group 'g', body 'z'.
    stream.send(encodeFrame(new Uint8Array([1, 0, 0, 0, 6, 1, 0, 1, 0x67, 0x7a])));
    await vi.waitFor(() => expect(answers).toHaveLength(2), WAIT);
    const [unknown, ok] = answers as [Uint8Array, Uint8Array];
    expect(unknown[0]).toBe(3); // an error answer
    expect(new DataView(unknown.buffer, unknown.byteOffset).getUint32(1)).toBe(5);
    expect(text(unknown.subarray(6, 6 + 15))).toBe('UNKNOWN_MESSAGE');
    expect(text(unknown)).toMatch(/does not know queue-link frame kind 9/);
    expect(ok[0]).toBe(2);
    expect(text(ok.subarray(5))).toBe('op 1: z');
    expect(stream.status).toBe('open');
  });
});

describe('an unknown gossip event kind', () => {
  it('is told apart from a malformed event', () => {
    expect(unknownEventKind(bytes(JSON.stringify({ kind: 'queue-drained', node: 'x' })))).toBe(
      'queue-drained',
    );
    expect(unknownEventKind(bytes(JSON.stringify({ kind: 'node-down' })))).toBeUndefined();
    expect(unknownEventKind(bytes('not json'))).toBeUndefined();
    expect(unknownEventKind(bytes(JSON.stringify({ kind: 3 })))).toBeUndefined();
  });
});
