import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { Stream } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { tcp } from '@libp2p/tcp';
import type { PeerBatch } from '@styx/raft';
import { encodePeerBatch, PeerUnreachableError } from '@styx/raft';
import { transportCompliance } from '@styx/raft/compliance';
import { createLibp2p } from 'libp2p';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FrameTooLargeError } from './errors.ts';
import { RAFT_PROTOCOL } from './libp2p-transport.ts';
import { peerMultiaddr } from './peer-address.ts';
import { encodeFrame } from './raft-frames.ts';
import { heartbeatBatch } from './test-support/heartbeat-batch.ts';
import type { LocalNode } from './test-support/local-cluster.ts';
import { deadAddress, LocalCluster } from './test-support/local-cluster.ts';

const WAIT = { timeout: 10_000 };

const batch = heartbeatBatch;

function received(local: LocalNode): PeerBatch[] {
  const batches: PeerBatch[] = [];
  local.transport.onReceive((b) => batches.push(b));
  return batches;
}

const warnings = (local: LocalNode, text: string): Record<string, unknown>[] =>
  local.lines.filter((line) => line.level === 40 && String(line.msg).includes(text));

let cluster = new LocalCluster();
let unreachable = '';

transportCompliance('Libp2pTransport (3 nodes on loopback)', {
  async start(count) {
    cluster = new LocalCluster();
    const nodes = await cluster.startMesh(count);
    // A member with an address where nothing listens.
    const ghost = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    const address = await deadAddress();
    for (const n of nodes) {
      n.gater.approveJoin(ghost);
      n.transport.addPeer(ghost, address);
    }
    unreachable = ghost;
    return nodes.map((n) => n.transport);
  },
  async cut(index) {
    const local = cluster.nodes[index];
    if (local !== undefined) await cluster.stopNode(local);
  },
  unreachablePeer: () => unreachable,
  teardown: () => cluster.stop(),
});

describe('Libp2pTransport admission and robustness', () => {
  let local = new LocalCluster();

  afterEach(async () => {
    await local.stop();
    local = new LocalCluster();
  });

  it('refuses a node with another cluster secret: nothing reaches the receiver', async () => {
    const [a, b] = await local.startMesh(2);
    if (a === undefined || b === undefined) throw new Error('no nodes');
    const intruderId = await local.identity();
    // A member id (so the gater would admit it) but the wrong secret.
    a.gater.approveJoin(intruderId.nodeId);
    const intruder = await local.start(intruderId, {
      secret: 'not the secret of this cluster at all',
      members: [a.nodeId],
    });
    intruder.transport.addPeer(a.nodeId, a.address);
    const atA = received(a);
    await expect(intruder.transport.send(a.nodeId, batch(intruder.nodeId, 1))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    expect(atA).toEqual([]);
    expect(a.node.getConnections().filter((c) => c.remotePeer.toString() === intruder.nodeId)).toEqual([]);
    await vi.waitFor(() => expect(warnings(a, 'handshake failed').length).toBeGreaterThan(0), WAIT);
    // The members still talk.
    await b.transport.send(a.nodeId, batch(b.nodeId, 2));
    await vi.waitFor(() => expect(atA.length).toBe(1), WAIT);
  });

  it('refuses a node without any cluster secret (plain noise, no prologue)', async () => {
    const [a] = await local.startMesh(1);
    if (a === undefined) throw new Error('no node');
    const atA = received(a);
    const outsider = await createLibp2p({
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
    });
    try {
      const target = peerMultiaddr(a.address, a.node.peerId);
      await expect(
        outsider.dialProtocol(target, RAFT_PROTOCOL, { signal: AbortSignal.timeout(3_000) }),
      ).rejects.toThrow();
      expect(atA).toEqual([]);
    } finally {
      await outsider.stop();
    }
  });

  it('refuses a node with the secret whose peer id is not a member, before any batch, and logs it', async () => {
    const [a] = await local.startMesh(1);
    if (a === undefined) throw new Error('no node');
    const atA = received(a);
    const stranger = await local.start(await local.identity(), { members: [a.nodeId] });
    stranger.transport.addPeer(a.nodeId, a.address);
    await expect(stranger.transport.send(a.nodeId, batch(stranger.nodeId, 1))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    expect(atA).toEqual([]);
    await vi.waitFor(() => expect(warnings(a, 'connection refused').length).toBeGreaterThan(0), WAIT);
    expect(warnings(a, 'connection refused')[0]?.peer).toBe(stranger.nodeId);

    // Approved, the same node gets in (a join the operator allowed).
    a.gater.approveJoin(stranger.nodeId);
    await stranger.transport.send(a.nodeId, batch(stranger.nodeId, 2));
    await vi.waitFor(() => expect(atA.map((b) => b.from)).toEqual([stranger.nodeId]), WAIT);
  });

  it('open to joins: admits a stranger with the secret at connection level, but refuses its raft streams', async () => {
    const seedId = await local.identity();
    const seed = await local.start(seedId, {
      members: [seedId.nodeId],
      openToJoins: true,
      rpcAdmit: (peer, kind) => kind === 'join' || seed.gater.isMember(peer),
    });
    seed.rpc.handle('join', async (_payload, from) => new TextEncoder().encode(from));
    const atSeed = received(seed);
    const stranger = await local.start(await local.identity(), { members: [seed.nodeId] });
    stranger.transport.addPeer(seed.nodeId, seed.address);
    stranger.rpc.addPeer(seed.nodeId, seed.address);

    // The connection and the join call get through.
    const answer = await stranger.rpc.call(seed.nodeId, 'join', new Uint8Array(0));
    expect(new TextDecoder().decode(answer)).toBe(stranger.nodeId);
    await expect(stranger.rpc.call(seed.nodeId, 'metadata', new Uint8Array(0))).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    // Its Raft stream is closed unread.
    await stranger.transport.send(seed.nodeId, batch(stranger.nodeId, 1)).catch(() => {});
    await vi.waitFor(
      () => expect(warnings(seed, 'raft stream refused')[0]?.peer).toBe(stranger.nodeId),
      WAIT,
    );
    expect(atSeed).toEqual([]);
    expect(warnings(seed, 'connection refused')).toEqual([]);

    // Once a member, its batches are delivered.
    seed.gater.setMembers([seed.nodeId, stranger.nodeId]);
    await vi.waitFor(async () => {
      await stranger.transport.send(seed.nodeId, batch(stranger.nodeId, 2)).catch(() => {});
      expect(atSeed.map((b) => b.messages[0]?.message.commit)).toContain(2);
    }, WAIT);
  });

  it('refuses a forgotten node even listed as a member, and when open to joins', async () => {
    const [a, b] = await local.startMesh(2);
    if (a === undefined || b === undefined) throw new Error('no nodes');
    a.rpc.handle('ping', async () => new Uint8Array([1]));
    a.gater.forget(b.nodeId);
    await expect(b.rpc.call(a.nodeId, 'ping', new Uint8Array(0))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    a.gater.openToJoins = true;
    await expect(b.rpc.call(a.nodeId, 'ping', new Uint8Array(0))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    await vi.waitFor(() => expect(warnings(a, 'forgotten')[0]?.peer).toBe(b.nodeId), WAIT);
    // Nor does a dial it: its own calls to the forgotten node are refused before any connection.
    await expect(a.rpc.call(b.nodeId, 'ping', new Uint8Array(0))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    expect(a.node.getConnections(b.node.peerId)).toEqual([]);
  });

  it('does not dial a peer outside the membership', async () => {
    const [a, b] = await local.startMesh(2);
    if (a === undefined || b === undefined) throw new Error('no nodes');
    a.gater.setMembers([a.nodeId]);
    const atB = received(b);
    await expect(a.transport.send(b.nodeId, batch(a.nodeId, 1))).rejects.toBeInstanceOf(PeerUnreachableError);
    expect(atB).toEqual([]);
    expect(warnings(a, 'connection refused')[0]?.direction).toBe('dial');
  });

  it('closes only the stream of a malformed frame; the node keeps serving its peers', async () => {
    const [a, b, c] = await local.startMesh(3);
    if (a === undefined || b === undefined || c === undefined) throw new Error('no nodes');
    const atA = received(a);
    // Liveness evidence for the failure detector: only a sound batch counts, as its proven sender.
    const heardAtA: string[] = [];
    a.transport.onHeardFrom((peer) => heardAtA.push(peer));
    // b's regular stream is open and delivering.
    await b.transport.send(a.nodeId, batch(b.nodeId, 1));
    await vi.waitFor(() => expect(atA.length).toBe(1), WAIT);

    const target = peerMultiaddr(a.address, a.node.peerId);
    const closed = (stream: Stream): Promise<void> =>
      new Promise((resolve) => {
        if (stream.status !== 'open') resolve();
        else stream.addEventListener('close', () => resolve(), { once: true });
      });

    // Garbage in a well-formed frame.
    const garbage = await b.node.dialProtocol(target, RAFT_PROTOCOL);
    garbage.send(encodeFrame(new Uint8Array([1, 2, 3, 4, 5])));
    await closed(garbage);
    // A length prefix past the bound.
    const huge = await b.node.dialProtocol(target, RAFT_PROTOCOL);
    huge.send(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
    await closed(huge);
    // A sound batch that claims another sender than the connection's proven peer.
    const forged = await b.node.dialProtocol(target, RAFT_PROTOCOL);
    forged.send(encodeFrame(encodePeerBatch(batch(c.nodeId, 99))));
    await closed(forged);

    expect(warnings(a, 'malformed raft frame').length).toBe(3);
    expect(atA.length).toBe(1);
    expect(heardAtA).toEqual([b.nodeId]);
    // The connection and the other streams are untouched.
    await b.transport.send(a.nodeId, batch(b.nodeId, 2));
    await c.transport.send(a.nodeId, batch(c.nodeId, 3));
    await vi.waitFor(
      () => expect(atA.map((x) => x.messages[0]?.message.commit).sort()).toEqual([1, 2, 3]),
      WAIT,
    );
    expect([...new Set(heardAtA)].sort()).toEqual([b.nodeId, c.nodeId].sort());
  });

  it('reconnects on a later send: a peer without an address, then a peer that restarted elsewhere', async () => {
    const [a, b] = await local.startMesh(2);
    if (a === undefined || b === undefined) throw new Error('no nodes');
    const late = await local.identity();
    a.gater.approveJoin(late.nodeId);
    await expect(a.transport.send(late.nodeId, batch(a.nodeId, 1))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    const lateNode = await local.start(late, { members: [a.nodeId] });
    const atLate = received(lateNode);
    a.transport.addPeer(late.nodeId, lateNode.address);
    await a.transport.send(late.nodeId, batch(a.nodeId, 2));
    await vi.waitFor(() => expect(atLate.length).toBe(1), WAIT);

    // b stops and comes back with the same identity on another port.
    const down: string[] = [];
    a.transport.onPeerDown((peer) => down.push(peer));
    await a.transport.send(b.nodeId, batch(a.nodeId, 3));
    await local.stopNode(b);
    await vi.waitFor(() => expect(down).toContain(b.nodeId), WAIT);
    await expect(a.transport.send(b.nodeId, batch(a.nodeId, 4))).rejects.toBeInstanceOf(PeerUnreachableError);
    const b2 = await local.start(b.identity, { members: [a.nodeId] });
    const atB2 = received(b2);
    a.transport.addPeer(b.nodeId, b2.address);
    await a.transport.send(b.nodeId, batch(a.nodeId, 5));
    await vi.waitFor(() => expect(atB2.map((x) => x.messages[0]?.message.commit)).toEqual([5]), WAIT);
  });

  it('rejects an outgoing batch above the frame bound, and the stream goes on', async () => {
    const [idA, idB] = [await local.identity(), await local.identity()];
    const members = [idA.nodeId, idB.nodeId];
    const a = await local.start(idA, { members, maxFrameBytes: 1024 });
    const b = await local.start(idB, { members });
    a.transport.addPeer(b.nodeId, b.address);
    const atB = received(b);
    const big = batch(a.nodeId, 1);
    const bigger: PeerBatch = {
      ...big,
      quiesce: Array.from({ length: 200 }, (_, i) => ({ groupId: `q${i}`, term: 1, commit: i })),
    };
    await expect(a.transport.send(b.nodeId, bigger)).rejects.toBeInstanceOf(FrameTooLargeError);
    await a.transport.send(b.nodeId, batch(a.nodeId, 2));
    await vi.waitFor(() => expect(atB.map((x) => x.messages[0]?.message.commit)).toEqual([2]), WAIT);
  });

  it('writes the frames sent while a write is under way together, in order, in one stream write', async () => {
    const [idA, idB] = [await local.identity(), await local.identity()];
    const members = [idA.nodeId, idB.nodeId];
    const a = await local.start(idA, { members });
    const b = await local.start(idB, { members });
    a.transport.addPeer(b.nodeId, b.address);
    const atB = received(b);
    // The first send dials; the four made meanwhile wait for it, and leave in the next write.
    const sends = [1, 2, 3, 4, 5].map((commit) => a.transport.send(b.nodeId, batch(a.nodeId, commit)));
    await Promise.all(sends);
    await vi.waitFor(
      () => expect(atB.map((x) => x.messages[0]?.message.commit)).toEqual([1, 2, 3, 4, 5]),
      WAIT,
    );
    expect(a.transport.writes).toBeLessThanOrEqual(2);
    // Once idle, a send is a write of its own.
    await a.transport.send(b.nodeId, batch(a.nodeId, 6));
    expect(a.transport.writes).toBeLessThanOrEqual(3);
    await vi.waitFor(() => expect(atB).toHaveLength(6), WAIT);
  });

  it('a peer that stops reading: the send waiting on the drain fails after the drain timeout, the sends behind it fail with it, the next send opens a new stream', async () => {
    const [idA, idB] = [await local.identity(), await local.identity()];
    const members = [idA.nodeId, idB.nodeId];
    const a = await local.start(idA, { members, drainTimeoutMs: 300 });
    const b = await local.start(idB, { members });
    a.transport.addPeer(b.nodeId, b.address);
    // B takes the Raft streams but never reads them (a wedged process keeps its sockets).
    const held: Stream[] = [];
    await b.node.unhandle(RAFT_PROTOCOL);
    await b.node.handle(RAFT_PROTOCOL, (stream) => {
      stream.pause();
      held.push(stream);
    });
    // Far more than the stream's window: the first send waits for a drain that never comes.
    const big: PeerBatch = { ...batch(a.nodeId, 1), quiesce: [] };
    const message = big.messages[0]?.message as PeerBatch['messages'][number]['message'];
    const heavy: PeerBatch = {
      ...big,
      messages: [{ groupId: 'g', message: { ...message, context: 'x'.repeat(4 * 1024 * 1024) } }],
    };
    const started = Date.now();
    const first = a.transport.send(b.nodeId, heavy);
    const behind = a.transport.send(b.nodeId, batch(a.nodeId, 2));
    await expect(first).rejects.toBeInstanceOf(PeerUnreachableError);
    await expect(behind).rejects.toBeInstanceOf(PeerUnreachableError);
    // Bounded by the drain timeout, not by the peer (which never reads).
    expect(Date.now() - started).toBeLessThan(WAIT.timeout);
    expect(held).toHaveLength(1);
    void a.transport.send(b.nodeId, batch(a.nodeId, 3)).catch(() => {});
    await vi.waitFor(() => expect(held).toHaveLength(2), WAIT);
  });
});
