import { noise } from '@chainsafe/libp2p-noise';
import { yamux } from '@chainsafe/libp2p-yamux';
import { preSharedKey } from '@libp2p/pnet';
import { tcp } from '@libp2p/tcp';
import { PeerUnreachableError } from '@styx/raft';
import { createLibp2p } from 'libp2p';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { swarmKeyFromSecret } from './cluster-secret.ts';
import { listenAddress } from './libp2p-node.ts';
import { RAFT_PROTOCOL } from './libp2p-transport.ts';
import { peerMultiaddr } from './peer-address.ts';
import { noisePrologue } from './secret-bound-noise.ts';
import { heartbeatBatch } from './test-support/heartbeat-batch.ts';
import type { LocalNode } from './test-support/local-cluster.ts';
import { LocalCluster, TEST_SECRET } from './test-support/local-cluster.ts';

const WAIT = { timeout: 10_000 };
const WRONG_SECRET = 'not the secret of this cluster at all';

const handshakeFailures = (local: LocalNode): Record<string, unknown>[] =>
  local.lines.filter((line) => line.level === 40 && String(line.msg).includes('handshake failed'));

/** Everything `local` received: Raft batches and RPC requests of kind 'ping'. */
function inbox(local: LocalNode): unknown[] {
  const got: unknown[] = [];
  local.transport.onReceive((b) => got.push(b));
  local.rpc.handle('ping', async (payload) => {
    got.push(payload);
    return new Uint8Array([1]);
  });
  return got;
}

describe('noise bound to the cluster secret (no private network)', () => {
  let local = new LocalCluster();

  afterEach(async () => {
    await local.stop();
    local = new LocalCluster();
  });

  it('derives one prologue per secret', () => {
    const key = swarmKeyFromSecret(TEST_SECRET);
    expect(noisePrologue(key)).toEqual(noisePrologue(swarmKeyFromSecret(` ${TEST_SECRET}\n`)));
    expect(noisePrologue(key)).not.toEqual(noisePrologue(swarmKeyFromSecret(WRONG_SECRET)));
    expect(noisePrologue(key).byteLength).toBe(32);
  });

  it('a member id with the wrong secret completes no connection and gets no Raft batch nor RPC through, either way', async () => {
    const [a] = await local.startMesh(1);
    if (a === undefined) throw new Error('no node');
    const intruderId = await local.identity();
    // The gater admits its id: only the secret stands between it and the node.
    a.gater.approveJoin(intruderId.nodeId);
    const intruder = await local.start(intruderId, { secret: WRONG_SECRET, members: [a.nodeId] });
    const atA = inbox(a);
    const atIntruder = inbox(intruder);
    intruder.transport.addPeer(a.nodeId, a.address);
    intruder.rpc.addPeer(a.nodeId, a.address);
    a.transport.addPeer(intruder.nodeId, intruder.address);
    a.rpc.addPeer(intruder.nodeId, intruder.address);

    await expect(
      intruder.transport.send(a.nodeId, heartbeatBatch(intruder.nodeId, 1)),
    ).rejects.toBeInstanceOf(PeerUnreachableError);
    await expect(intruder.rpc.call(a.nodeId, 'ping', new Uint8Array([1]))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    // The member dialling the intruder's address fails the same way (it never sends its identity:
    // the answerer's handshake message fails authentication first).
    await expect(a.transport.send(intruder.nodeId, heartbeatBatch(a.nodeId, 1))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    await expect(a.rpc.call(intruder.nodeId, 'ping', new Uint8Array([1]))).rejects.toBeInstanceOf(
      PeerUnreachableError,
    );
    expect(atA).toEqual([]);
    expect(atIntruder).toEqual([]);
    expect(a.node.getConnections()).toEqual([]);
    expect(intruder.node.getConnections()).toEqual([]);
    await vi.waitFor(() => expect(handshakeFailures(a).length).toBeGreaterThan(0), WAIT);
  });

  it('a node of the previous build (pnet around noise) and this one never connect; both keep serving', async () => {
    const [a, b] = await local.startMesh(2);
    if (a === undefined || b === undefined) throw new Error('no nodes');
    const atA = inbox(a);
    // The previous build's stack, with the same secret: pnet keyed by the swarm key, plain noise.
    const previous = await createLibp2p({
      addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
      transports: [tcp()],
      connectionProtector: preSharedKey({ psk: swarmKeyFromSecret(TEST_SECRET) }),
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
    });
    try {
      a.gater.approveJoin(previous.peerId.toString());
      const dial = { signal: AbortSignal.timeout(3_000) };
      await expect(
        previous.dialProtocol(peerMultiaddr(a.address, a.node.peerId), RAFT_PROTOCOL, dial),
      ).rejects.toThrow();
      a.transport.addPeer(previous.peerId.toString(), listenAddress(previous));
      await expect(
        a.transport.send(previous.peerId.toString(), heartbeatBatch(a.nodeId, 1)),
      ).rejects.toBeInstanceOf(PeerUnreachableError);
      expect(atA).toEqual([]);
      expect(previous.getConnections()).toEqual([]);
      await vi.waitFor(() => expect(handshakeFailures(a).length).toBeGreaterThan(0), WAIT);
      // The members of this build still talk.
      await b.transport.send(a.nodeId, heartbeatBatch(b.nodeId, 2));
      await vi.waitFor(() => expect(atA.length).toBe(1), WAIT);
    } finally {
      await previous.stop();
    }
  });
});
